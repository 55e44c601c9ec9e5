#!/usr/bin/python3
"""Runs examples/tiny_lm for 300 steps on the CPU: the loss must start near
ln(vocabulary) and end well below it (under 60% of it, smoothed), and the
sample must be text of the training alphabet."""
import csv
import math
import os
import re
import subprocess
import sys
import tempfile

log = os.path.join(tempfile.mkdtemp(), "metrics.csv")
out = subprocess.run([sys.argv[1], "--device", "cpu", "--steps", "300", "--quiet", "--log", log], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, timeout=800)
print(out.stdout[-2000:], out.stderr[-2000:])
if out.returncode != 0:
    sys.exit("tiny_lm exited with %d" % out.returncode)
vocab = int(re.search(r"vocabulary (\d+)", out.stdout).group(1))
m = re.search(r"loss ([\d.]+) -> ([\d.]+) \(smoothed ([\d.]+)\)", out.stdout)
first, smoothed = float(m.group(1)), float(m.group(3))
sample = re.search(r"sample: (.*)", out.stdout, re.S).group(1)
problems = []
if abs(first - math.log(vocab)) > 0.5:
    problems.append("first loss %.3f is not near ln(%d) = %.3f" % (first, vocab, math.log(vocab)))
if smoothed > 0.6 * math.log(vocab):
    problems.append("smoothed loss %.3f after 300 steps is not well below ln(vocab) = %.3f" % (smoothed, math.log(vocab)))
if len(sample) < 200 or sum(c.isalpha() or c in " ,.;:\n" for c in sample) < 0.9 * len(sample):
    problems.append("the sample is not text: %r" % sample[:100])
rows = list(csv.DictReader(open(log))) if os.path.exists(log) else []
if len(rows) != 300 or [int(r["step"]) for r in rows] != list(range(1, 301)):
    problems.append("--log wrote %d rows, not one per step" % len(rows))
elif abs(float(rows[0]["loss"]) - first) > 1e-3:
    problems.append("--log's first loss %s is not the printed %.3f" % (rows[0]["loss"], first))
if "\r" in out.stdout:
    problems.append("the progress bar was drawn into a pipe")
if problems:
    sys.exit("; ".join(problems))
print("ok: loss %.3f -> %.3f (smoothed), vocabulary %d" % (first, smoothed, vocab))
