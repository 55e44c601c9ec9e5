#!/usr/bin/env python3
"""tiny_lm --distributed on 2 ranks with one sequence each follows the loss
curve of one process with --batch 2 (the same sequences, drawn from the same
generator; gradients averaged over the ranks instead of summed over the
batch), step by step within float tolerance, ends with the same parameters
(the checkpoint rank 0 writes), and rank 0 reports the per-rank throughput
and the averaging's share of a step.

    /usr/bin/python3 tests/mpi/check_tiny_lm_distributed.py build/examples/tiny_lm/tiny_lm"""
import csv
import os
import subprocess
import sys
import tempfile

import numpy as np

STEPS = 12


def losses(path):
    with open(path) as f:
        return [float(r["loss"]) for r in csv.DictReader(f)]


def main():
    tiny_lm = os.path.abspath(sys.argv[1])
    flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    common = ["--device", "cpu", "--steps", str(STEPS), "--quiet"]
    with tempfile.TemporaryDirectory() as tmp:
        one, two = os.path.join(tmp, "one.csv"), os.path.join(tmp, "two.csv")
        saved_one, saved_two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
        os.makedirs(saved_one)
        os.makedirs(saved_two)
        p1 = subprocess.run([tiny_lm, "--batch", "2", "--log", one, "--save", saved_one] + common, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=600)
        p2 = subprocess.run(["mpirun"] + flags + ["-np", "2", tiny_lm, "--distributed", "--batch", "1", "--log", two, "--save", saved_two] + common,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        out1, out2 = p1.stdout.decode(), p2.stdout.decode()
        failures = []
        if p1.returncode != 0:
            failures.append("tiny_lm --batch 2 failed:\n" + out1[-3000:])
        if p2.returncode != 0:
            failures.append("mpirun -np 2 tiny_lm --distributed failed:\n" + out2[-3000:])
        if not failures:
            a, b = losses(one), losses(two)
            if len(a) != STEPS or len(b) != STEPS:
                failures.append("expected %d steps of losses, got %d and %d" % (STEPS, len(a), len(b)))
            for step, (x, y) in enumerate(zip(a, b), 1):
                ok = abs(x - y) <= 2e-4 + 1e-4 * abs(x)
                print("step %2d  one process, batch 2: %.6f   2 ranks, batch 1 each: %.6f  %s" % (step, x, y, "ok" if ok else "DIFFERS"))
                if not ok:
                    failures.append("step %d: %.6f vs %.6f" % (step, x, y))
            names = sorted(os.listdir(saved_one))
            if not names or names != sorted(os.listdir(saved_two)):
                failures.append("the checkpoints hold different files: %s vs %s" % (names, sorted(os.listdir(saved_two))))
            for name in names:
                x, y = np.load(os.path.join(saved_one, name)), np.load(os.path.join(saved_two, name))
                if x.shape != y.shape or not np.allclose(x, y, rtol=1e-4, atol=1e-5):
                    failures.append("parameter %s differs after training (largest difference %g)" % (name, np.abs(x - y).max()))
            print("checkpoints: %d parameters, the same after %d steps" % (len(names), STEPS))
            if a and a[-1] >= a[0]:
                failures.append("the loss did not fall: %.4f -> %.4f" % (a[0], a[-1]))
            if "data-parallel over 2 ranks" not in out2 or "2 sequences a step, 1 on each of 2 ranks" not in out2:
                failures.append("rank 0 did not report the data-parallel run:\n" + out2[-2000:])
            if out2.count("tiny_lm on ") != 1:
                failures.append("more than rank 0 reported:\n" + out2[-2000:])
            print([l for l in out2.splitlines() if l.startswith("data-parallel")][0] if "data-parallel" in out2 else out2[-500:])
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
