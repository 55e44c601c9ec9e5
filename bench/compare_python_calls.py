#!/usr/bin/python3
"""What a call from Python costs: a cached kernel of 16 elements, a program's
host function compiled to native code, and `zyntax.torch` ops on small
tensors, against the same operation in PyTorch (and NumPy, CPython) in the
same process, interleaved so that a slow spell of the machine falls on
both sides. Writes the "## Calls from Python" section of docs/performance.md.

    PYTHONPATH=build/python /usr/bin/python3 bench/compare_python_calls.py [--rounds 7]
"""
import argparse
import os
import platform
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
import performance_doc  # noqa: E402
import zyntax  # noqa: E402
import zyntax.torch as zt  # noqa: E402

SOURCE = """
def axpy(a: tensor[n, f32], b: tensor[n, f32]) {
    return compute(a, b) {
        @kernel elementwise
        for i in 0..n:
            out[i] = 2.5 * a[i] + b[i]
    }
}

def scale(x: tensor[n, f32], by: f32) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i] * by
    }
}

def add(a: float, b: float) -> float {
    return a + b
}

def total(x: tensor[n, f64]) -> float {
    var s = 0.0
    for i in 0..n {
        s += x[i]
    }
    return s
}
"""


def per_call_ns(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e9


def compare(cases, rounds, calls):
    """Each case's best round (ns per call), the cases taking turns each round."""
    best = {label: float("inf") for label, _ in cases}
    for _, fn in cases:
        for _ in range(100):
            fn()
    for _ in range(rounds):
        for label, fn in cases:
            best[label] = min(best[label], per_call_ns(fn, calls))
    return best


def until_direct(f, *args):
    deadline = time.monotonic() + 120
    while f.last_tier != "direct" and time.monotonic() < deadline:
        f(*args)
        time.sleep(0.001)
    if f.last_tier != "direct":
        sys.exit("%s never ran compiled" % f.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args()
    torch.set_num_threads(1)  # tiny ops: as torch runs them in a training loop's host thread
    prog = zyntax.compile(SOURCE, device="cpu")
    dev = prog.device
    rng = np.random.default_rng(0)
    a, b = rng.random(16, dtype=np.float32), rng.random(16, dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    za, zb = zyntax.Array.from_dlpack(a, dev), zyntax.Array.from_dlpack(b, dev)
    axpy, scale = prog.axpy, prog.scale
    x = rng.random(16)
    tx = torch.from_numpy(x)
    until_direct(prog.add, 1.0, 2.0)
    until_direct(prog.total, x)
    add, total = prog.add, prog.total
    m1, m2 = torch.randn(16, 16), torch.randn(16, 16)
    g1, g2 = m1.clone().requires_grad_(), m2.clone().requires_grad_()

    def fwd_bwd(mm):
        y = mm(g1, g2)
        y.sum().backward()

    rows = [
        ("kernel `2.5 * a + b` over 16 f32: NumPy arrays in, a NumPy array out", lambda: axpy(a, b),
         "`torch.add(b, a, alpha=2.5)`", lambda: torch.add(tb, ta, alpha=2.5)),
        ("the same kernel on zyntax arrays", lambda: axpy(za, zb),
         "`torch.add(b, a, alpha=2.5)`", lambda: torch.add(tb, ta, alpha=2.5)),
        ("the same kernel on torch tensors (a torch tensor out)", lambda: axpy(ta, tb),
         "`torch.add(b, a, alpha=2.5)`", lambda: torch.add(tb, ta, alpha=2.5)),
        ("kernel `x * by` over 16 f32, the host value `by=2.5` by name: a NumPy array in and out", lambda: scale(a, by=2.5),
         "`torch.mul(a, 2.5)`", lambda: torch.mul(ta, 2.5)),
        ("host function `add(a, b)` (compiled, called directly)", lambda: add(1.0, 2.0),
         "`torch.add` of two 0-d tensors", lambda: torch.add(m1[0, 0], m2[0, 0])),
        ("host function `total(x)`, a loop over 16 f64 of a NumPy array (compiled, called directly)", lambda: total(x),
         "`torch.sum` of 16 f64", lambda: torch.sum(tx)),
        ("`zyntax.torch.matmul` 16×16", lambda: zt.matmul(m1, m2), "`torch.matmul` 16×16", lambda: torch.matmul(m1, m2)),
        ("`zyntax.torch.matmul` 16×16, forward and backward", lambda: fwd_bwd(zt.matmul),
         "`torch.matmul` 16×16, forward and backward", lambda: fwd_bwd(torch.matmul)),
    ]
    cases = []
    for ours, fn, theirs, anchor in rows:
        cases.append((ours, fn))
        cases.append((theirs + " for " + ours, anchor))
    best = compare(cases, args.rounds, args.calls)
    extra = compare([("NumPy `2.5 * a + b`", lambda: 2.5 * a + b), ("CPython `a + b` in a function", lambda: (lambda p, q: p + q)(1.0, 2.0))],
                    args.rounds, args.calls * 4)
    table = []
    for ours, _, theirs, _ in rows:
        z, t = best[ours], best[theirs + " for " + ours]
        table.append("| %s | %.2f | %s | %.2f | %.2f× |" % (ours, z / 1e3, theirs, t / 1e3, z / t))
    text = "\n".join([
        "## Calls from Python",
        "",
        *performance_doc.machine_lines(),
        "- `bench/compare_python_calls.py`: µs per call from `/usr/bin/python3` %s, torch %s (one thread), the best of %d "
        "rounds of %d calls, ours and torch's taking turns in one process. For scale: NumPy `2.5 * a + b` on the same "
        "arrays %.2f µs, a CPython function call %.3f µs." % (
            platform.python_version(), torch.__version__, args.rounds, args.calls, extra["NumPy `2.5 * a + b`"] / 1e3,
            extra["CPython `a + b` in a function"] / 1e3),
        "",
        "| call | µs | torch | µs | ratio |",
        "|---|---|---|---|---|",
    ] + table + [""])
    print(text)
    performance_doc.replace_sections(args.out, ["Calls from Python"], text)


if __name__ == "__main__":
    main()
