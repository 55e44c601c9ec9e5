#!/usr/bin/env python3
"""Every program of tests/programs compiles to MSL (`zyntax compile
--backend metal --sizes-from-run`, in a directory holding the inputs of one
of its cases from tests/programs/run_programs.py): each kernel is written,
or a comment says why not, and what is written builds as C++ under the
MSL-on-CPU header (tests/msl), which checks its syntax and types, not
Apple's compiler's verdict.

    /usr/bin/python3 tests/cli/test_programs_msl.py --zyntax build/zyntax"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.path.join(ROOT, "tests", "programs")
sys.path.insert(0, PROGRAMS)
import run_programs  # noqa: E402  (the cases' inputs)


def compile_in_case_dirs(zyntax, name, tmp):
    """The program compiled to MSL where one of its cases' inputs lie: (exit status, stdout, stderr)."""
    cases = [c for c in run_programs.CASES if c.program + ".zynml" == name and not c.static] or [None]
    for i, case in enumerate(cases):
        d = os.path.join(tmp, "%s.%d" % (name, i))
        os.makedirs(d)
        for stem, arr in (case.inputs.items() if case else []):
            np.save(os.path.join(d, stem + ".npy"), arr)
        # A program with no case to run here (one for GPU machines): its kernels as they stand.
        sizes = ["--sizes-from-run"] if case else []
        p = subprocess.run([zyntax, "compile", os.path.join(PROGRAMS, name), "--backend", "metal"] + sizes,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600, cwd=d)
        result = p.returncode, p.stdout.decode(), p.stderr.decode()
        if p.returncode != 1 or i + 1 == len(cases) or i >= 3:  # a case whose program fails on purpose: the next one
            return result
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zyntax", required=True)
    ap.add_argument("--cxx", default="clang++-19" if os.path.exists("/usr/bin/clang++-19") else "clang++")
    args = ap.parse_args()
    run_programs.define_all()
    failures, written, not_written = [], 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(PROGRAMS)):
            if not name.endswith(".zynml"):
                continue
            rc, out, err = compile_in_case_dirs(os.path.abspath(args.zyntax), name, tmp)
            if rc != 0:
                failures.append("%s: exit %d: %s" % (name, rc, err[-2000:]))
                continue
            not_written += re.findall(r"// kernel (\S+): not compiled for Metal \((.*)\)", out)
            kernels = re.split(r"^// kernel \S+ \(.*\)\n", out, flags=re.M)[1:]
            if not kernels:
                print("ok   %s (no kernel written)" % name)
                continue
            cpp = os.path.join(tmp, name + ".cpp")
            with open(cpp, "w") as f:
                f.write("#include <metal_stdlib>\n")
                for i, k in enumerate(kernels):
                    k = re.sub(r"^// kernel .*$", "", k, flags=re.M)
                    f.write("namespace zy_k%d {\n%s\n}\n" % (i, re.sub(r"\s*\[\[[^\]]*\]\]", "", k)))
            c = subprocess.run([args.cxx, "-std=c++20", "-fsyntax-only", "-fsigned-char", "-w", "-I", os.path.join(ROOT, "tests", "msl"), cpp],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            if c.returncode != 0:
                failures.append("%s: its MSL does not build as C++:\n%s" % (name, c.stdout.decode()[:3000]))
                continue
            written += len(kernels)
            print("ok   %s (%d kernels)" % (name, len(kernels)))
    for k, why in not_written:
        print("not written: %s (%s)" % (k, why))
    print("%d kernels written as MSL, %d not" % (written, len(not_written)))
    for f in failures:
        print("FAIL", f)
    return 1 if failures or written == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
