"""Compiling each program of tests/programs where one of its cases' inputs
lie (tests/programs/run_programs.py), so that --sizes-from-run sees the sizes
the case runs at. Shared by the per-backend program tests."""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.path.join(ROOT, "tests", "programs")
sys.path.insert(0, PROGRAMS)
import run_programs  # noqa: E402  (the cases' inputs)


def program_names():
    run_programs.define_all()
    return sorted(n for n in os.listdir(PROGRAMS) if n.endswith(".zynml"))


def compile_in_case_dirs(zyntax, name, tmp, compile_args):
    """`zyntax compile PROGRAM *compile_args [--sizes-from-run]` where one of the
    program's cases' inputs lie: (exit status, stdout, stderr). A case whose
    program fails on purpose gives way to the next one."""
    cases = [c for c in run_programs.CASES if c.program + ".zynml" == name and not c.static] or [None]
    result = None
    for i, case in enumerate(cases):
        d = os.path.join(tmp, "%s.%d" % (name, i))
        os.makedirs(d, exist_ok=True)
        for stem, arr in (case.inputs.items() if case else []):
            np.save(os.path.join(d, stem + ".npy"), arr)
        # A program with no case to run here (one for GPU machines): its kernels as they stand.
        sizes = ["--sizes-from-run"] if case else []
        p = subprocess.run([zyntax, "compile", os.path.join(PROGRAMS, name)] + list(compile_args) + sizes,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600, cwd=d)
        result = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        if p.returncode != 1 or i + 1 == len(cases) or i >= 3:
            return result
    return result
