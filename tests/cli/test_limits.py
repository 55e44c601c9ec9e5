#!/usr/bin/env python3
"""Programs as long and as deep as real (often generated) code gets: long
operator chains, deeply bracketed expressions and deep recursion run and give
the right value on every CPU device; past the limits each is an error at the
right place (exit 1), never a crash."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

failures = []

MAX_DEPTH = 10000        # syntax/parser.hpp kMaxParseDepth
MAX_CALLS = 20000        # interp/host_interpreter.cpp kMaxCallDepth


def expect(name, cond, detail=""):
    if not cond:
        failures.append(name)
        print("FAIL", name, detail[-2000:])
    else:
        print("ok  ", name)


def run(zyntax, tmp, name, source, *args):
    path = os.path.join(tmp, name + ".zynml")
    with open(path, "w") as f:
        f.write(source)
    p = subprocess.run([zyntax, "run", *args, path], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def clean_error(rc, err, line, text):
    """Exit 1 with `file:LINE:col: error: ...TEXT...` and a caret, nothing else."""
    return (rc == 1 and re.search(r"\.zynml:%d:\d+: error: .*%s" % (line, re.escape(text)), err) is not None
            and "^" in err and "internal" not in err and "Sanitizer" not in err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zyntax", required=True)
    z = ap.parse_args().zyntax
    rng = np.random.default_rng(7)

    with tempfile.TemporaryDirectory() as tmp:
        # A flat host sum of 9,000 terms (the chain counts toward the depth).
        n = 9000
        coeffs = rng.integers(-50, 50, n)
        src = "let x = 3\nlet s = " + " + ".join("x * %d" % c for c in coeffs) + "\nprint(s)\n"
        rc, out, err = run(z, tmp, "host_sum", src)
        expect("host sum of %d terms" % n, rc == 0 and out.strip() == str(3 * int(coeffs.sum())), err)

        # Brackets nested 4,000 deep (each level is two of the parser's).
        depth = 4000
        src = "let s = " + "(" * depth + "7" + " + 1)" * depth + "\nprint(s)\n"
        rc, out, err = run(z, tmp, "parens", src)
        expect("brackets nested %d deep" % depth, rc == 0 and out.strip() == str(7 + depth), err)

        # A kernel whose body is a 1,500-term expression, on the compiled CPU
        # backend and the reference executor, against NumPy.
        terms = 1500
        k = rng.integers(1, 9, terms)
        a = rng.standard_normal(37).astype(np.float32)
        np.save(os.path.join(tmp, "a.npy"), a)
        body = " + ".join("a[i] * %d.0" % c for c in k)
        src = ("let a = load(\"a.npy\")\nlet out = compute(a) {\n  @kernel elementwise\n  for i in 0..37:\n"
               "    out[i] = %s\n}\nsave(out, \"out.npy\")\n" % body)
        want = a.astype(np.float64) * float(k.sum())
        for device in ["cpu", "cpu:reference"]:
            rc, out, err = run(z, tmp, "kernel_sum", src, "--device", device)
            got = np.load(os.path.join(tmp, "out.npy")) if rc == 0 else None
            expect("kernel of %d terms on %s" % (terms, device),
                   got is not None and np.allclose(got, want, rtol=1e-4, atol=1e-3), err)
            if got is not None:
                os.remove(os.path.join(tmp, "out.npy"))

        # Past the depth limit: an error at the expression, with a hint.
        src = "let x = 1\nlet s = " + " + ".join(["x"] * (MAX_DEPTH + 50)) + "\nprint(s)\n"
        rc, _, err = run(z, tmp, "too_long", src)
        expect("a chain past the limit is an error", clean_error(rc, err, 2, "too long or too deeply nested")
               and "split it" in err, err)
        src = "\n\nlet s = " + "(" * (MAX_DEPTH * 2) + "1" + ")" * (MAX_DEPTH * 2) + "\n"
        rc, _, err = run(z, tmp, "too_deep", src)
        expect("brackets past the limit are an error", clean_error(rc, err, 3, "nesting is too deep"), err)
        p = subprocess.run([z, "check", os.path.join(tmp, "too_deep.zynml")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=600)
        expect("... and `zyntax check` says so too", clean_error(p.returncode, p.stderr.decode(), 3, "nesting is too deep"),
               p.stderr.decode())

        # Runaway recursion stops with an error at the call, naming the
        # limit (20,000 calls; fewer in sanitizer builds, whose frames are
        # larger); recursion a quarter of the limit and 1,000 short of it runs.
        rc, _, err = run(z, tmp, "runaway", "def g(n):\n    return g(n + 1) + 1\nprint(g(0))\n")
        expect("runaway recursion is an error at the call", clean_error(rc, err, 2, "runaway recursion"), err)
        m = re.search(r"calls nested more than (\d+) deep", err)
        limit = int(m.group(1)) if m else 20000
        expect("the depth limit is at least 3000", limit >= 3000, err)
        rec = "def f(n):\n    if n == 0:\n        return 0\n    return 1 + f(n - 1)\nprint(f(%d))\n"
        for d in [limit // 4, limit - 1000]:
            rc, out, err = run(z, tmp, "rec", rec % d)
            expect("recursion %d deep" % d, rc == 0 and out.strip() == str(d), err)
        # Deep recursion through a deep expression in each frame.
        nested = "(" * 500 + "n" + ")" * 500
        rc, out, err = run(z, tmp, "rec_nested",
                           "def h(n):\n    if n == 0:\n        return 0\n    return 1 + h(%s - 1)\nprint(h(2500))\n" % nested)
        expect("recursion through nested expressions", rc == 0 and out.strip() == "2500", err)

    if failures:
        print("%d limit checks failed" % len(failures))
        return 1
    print("all limit checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
