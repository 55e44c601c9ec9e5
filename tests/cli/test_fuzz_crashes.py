#!/usr/bin/env python3
"""Every input in fuzz/crashes (each once crashed, hung or overflowed zyntax)
is checked and run again: exit 0, or 1 with a located error; never a crash,
an internal error or a sanitizer report. The fuzzer also starts from them
(scripts/fuzz.sh)."""
import argparse
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CRASHES = os.path.join(HERE, "..", "..", "fuzz", "crashes")
BAD = ("internal compiler error", "Sanitizer", "runtime error:", "terminate called", "Segmentation", "Aborted")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zyntax", required=True)
    z = ap.parse_args().zyntax
    failures = 0
    files = sorted(glob.glob(os.path.join(CRASHES, "*.zynml")))
    if not files:
        print("FAIL no inputs in", CRASHES)
        return 1
    for path in files:
        name = os.path.basename(path)
        for command in (["check"], ["run", "--device", "cpu:reference"]):
            try:
                p = subprocess.run([z, *command, path], cwd=CRASHES, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   timeout=120)
            except subprocess.TimeoutExpired:
                print("FAIL %s: %s hangs" % (name, command[0]))
                failures += 1
                continue
            err = p.stderr.decode(errors="replace")
            located = re.search(re.escape(name) + r":\d+:\d+: error: ", err) is not None
            ok = (p.returncode == 0 or (p.returncode == 1 and located)) and not any(b in err for b in BAD)
            print("%s %s %s (exit %d)" % ("ok  " if ok else "FAIL", name, command[0], p.returncode))
            if not ok:
                print(err[-2000:])
                failures += 1
    if failures:
        print("%d of %d runs failed" % (failures, 2 * len(files)))
        return 1
    print("all %d inputs pass" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
