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

from program_cases import PROGRAMS, ROOT, compile_in_case_dirs, program_names  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zyntax", required=True)
    ap.add_argument("--cxx", default="clang++-19" if os.path.exists("/usr/bin/clang++-19") else "clang++")
    args = ap.parse_args()
    failures, written, not_written = [], 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for name in program_names():
            rc, out, err = compile_in_case_dirs(os.path.abspath(args.zyntax), name, tmp, ["--backend", "metal"])
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
