#!/usr/bin/python3
"""Every kernel of the test corpus compiles to PTX that NVIDIA's assembler accepts.

For each program of tests/programs and examples/ (and the op library, stdlib/):
  - the generic kernels (sizes as parameters): `zyntax compile P --backend nvptx --arch A`;
  - for each case of tests/programs/run_programs.py (its random inputs written
    to a fresh directory), the kernels at the sizes the run launches:
    `zyntax compile P --backend nvptx --arch A --sizes-from-run`;
and each PTX file goes through `ptxas -arch=A`, for A in sm_80 and sm_90.
No GPU is needed. ptxas is taken from $PTXAS, PATH, $CUDA_HOME/bin or
/usr/local/cuda/bin.

    /usr/bin/python3 tests/gpu/check_ptx.py [--zyntax PATH] [--arch sm_80 --arch sm_90] [-k SUBSTRING] [-j JOBS]

Exit status 0 when every PTX file assembles, 1 otherwise, 77 when no ptxas
is found (reported as skipped by ctest).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "programs"))
import run_programs  # noqa: E402  (the corpus: programs and their cases)

SKIP = 77
TIMEOUT_S = 300


def find_ptxas():
    candidates = [os.environ.get("PTXAS"), shutil.which("ptxas")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", "ptxas"))
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    return None


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT_S)
    return p.returncode, p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")


def entries(ptx):
    return re.findall(r"^\.visible \.entry (\w+)\(", ptx, re.M)


def check(zyntax, ptxas, program, arch, inputs, label):
    """Compiles and assembles one program at one architecture; returns (ok, message, kernels)."""
    with tempfile.TemporaryDirectory(prefix="zyntax_ptx_") as tmp:
        for stem, arr in (inputs or {}).items():
            np.save(os.path.join(tmp, stem + ".npy"), arr)
        out = os.path.join(tmp, "out.ptx")
        cmd = [zyntax, "compile", program, "--backend", "nvptx", "--arch", arch, "-o", out]
        if inputs is not None:
            cmd.append("--sizes-from-run")
        rc, text = run(cmd, tmp)
        if rc == 2 and inputs is None and "no kernel was compiled for the GPU" in text and "give every size" in text:
            return True, "", 0  # generic: only tile kernels, which need sizes; the sized run compiles them
        if rc != 0:
            return False, "%s: %s\n  %s" % (label, " ".join(cmd), text.strip().replace("\n", "\n  ")), 0
        with open(out) as f:
            ptx = f.read()
        skipped = re.findall(r"^// kernel (\w+): not compiled for the GPU \((.*)\)$", ptx, re.M)
        if inputs is not None and skipped:
            # At known sizes every kernel must compile.
            return False, "%s: not compiled: %s" % (label, "; ".join("%s (%s)" % s for s in skipped)), 0
        if not entries(ptx):
            return True, "", 0
        rc, text = run([ptxas, "-arch=" + arch, out, "-o", os.path.join(tmp, "out.cubin")], tmp)
        if rc != 0:
            kept = os.path.join(tempfile.gettempdir(), "zyntax_ptx_failed_" + re.sub(r"\W+", "_", label) + ".ptx")
            shutil.copy(out, kept)
            return False, "%s: ptxas -arch=%s rejects it (kept as %s):\n  %s" % (
                label, arch, kept, text.strip().replace("\n", "\n  ")), 0
        return True, "", len(entries(ptx))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zyntax", default=os.path.join(ROOT, "build", "zyntax"))
    ap.add_argument("--arch", action="append", default=[])
    ap.add_argument("-k", action="append", default=[], metavar="SUBSTRING")
    ap.add_argument("-j", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args()
    archs = args.arch or ["sm_80", "sm_90"]
    ptxas = find_ptxas()
    if not ptxas:
        print("skipped: no ptxas (set PTXAS, or put the CUDA toolkit's bin on PATH)")
        return SKIP
    zyntax = os.path.abspath(args.zyntax)

    run_programs.define_all()
    jobs = []
    programs = sorted(set(run_programs.program_path(c.program) for c in run_programs.CASES))
    for folder in ("examples", "stdlib"):
        programs += sorted(os.path.join(ROOT, folder, f) for f in os.listdir(os.path.join(ROOT, folder))
                           if f.endswith(".zynml"))
    for p in programs:
        for arch in archs:
            jobs.append((p, arch, None, "%s (generic) %s" % (os.path.relpath(p, ROOT), arch)))
    for c in run_programs.CASES:
        if c.static:
            continue
        for arch in archs:
            jobs.append((run_programs.program_path(c.program), arch, c.inputs, "%s %s" % (c.name, arch)))
    jobs = [j for j in jobs if not args.k or any(k in j[3] for k in args.k)]

    with ThreadPoolExecutor(max_workers=args.j) as pool:
        results = list(pool.map(lambda j: check(zyntax, ptxas, *j), jobs))
    failed = [msg for ok, msg, _ in results if not ok]
    kernels = sum(n for _, _, n in results)
    for msg in failed:
        print("FAIL " + msg)
    print("%d compilations, %d kernels assembled by %s for %s; %d failed" % (
        len(jobs), kernels, ptxas, ", ".join(archs), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
