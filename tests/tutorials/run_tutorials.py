#!/usr/bin/python3
"""Runs every tutorial in docs/tutorials: each .zynml program on the given
devices and each .py with Debian's Python; each checks its own result and
must exit 0. Every code excerpt in a tutorial's .md must appear word for
word in its program, so the text never drifts from what runs."""
import argparse
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TUTORIALS = os.path.join(HERE, "..", "..", "docs", "tutorials")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zyntax", required=True)
    ap.add_argument("--python-dir", help="the built Python package (build/python)")
    ap.add_argument("--device", action="append", default=[])
    args = ap.parse_args()
    devices = args.device or ["cpu", "cpu:reference"]
    failures = []
    programs = sorted(glob.glob(os.path.join(TUTORIALS, "[0-9]*.zynml")) + glob.glob(os.path.join(TUTORIALS, "[0-9]*.py")))
    if len(programs) < 4:
        failures.append("expected four tutorial programs, found %d" % len(programs))
    env = dict(os.environ)
    if args.python_dir:
        env["PYTHONPATH"] = os.path.abspath(args.python_dir)
    for path in programs:
        name = os.path.basename(path)
        runs = [[args.zyntax, "run", "--device", d, path] for d in devices] if path.endswith(".zynml") else \
            [["/usr/bin/python3", path]]
        for cmd in runs:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, env=env)
            ok = p.returncode == 0
            print("%s %s" % ("ok  " if ok else "FAIL", " ".join(os.path.basename(c) if c == path else c for c in cmd[1:])))
            if not ok:
                print(p.stdout[-2000:], p.stderr[-3000:])
                failures.append(name)
        # The excerpts of its .md.
        md = os.path.splitext(path)[0] + ".md"
        if not os.path.exists(md):
            failures.append("%s has no %s" % (name, os.path.basename(md)))
            continue
        source = open(path).read()
        for block in re.findall(r"```(?:zynml|python)\n(.*?)```", open(md).read(), re.S):
            if block.rstrip("\n") not in source:
                failures.append("%s: an excerpt is not in %s:\n%s" % (os.path.basename(md), name, block))
                print("FAIL excerpt of", os.path.basename(md), "\n" + block)
    if failures:
        print("%d tutorial checks failed" % len(failures))
        return 1
    print("all tutorials ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
