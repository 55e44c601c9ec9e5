#!/usr/bin/python3
"""Host code: loops and calls written in a ZynML `def`, run by `zyntax run`,
against the same code in CPython and, for the moving average, the same loop
compiled (a compute block, run by the CPU backend's native code), side by
side in one run. Writes the "## Host code" section of docs/performance.md.

    /usr/bin/python3 bench/compare_host.py [--zyntax build/zyntax] [--repeat 3]
"""
import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import performance_doc  # noqa: E402

N = 1_000_000  # prices of the moving average
FIB = 22       # fib(22): 57,313 calls

# Each program prints "ns <per iteration or call>" for its best of REPEAT
# runs; the compiled form is timed after a first call, which compiles it.
EMA_HOST = """def ema(prices: tensor[n, f32], alpha: f32) -> f32 {
    var s = 0.0
    for i in 0..n {
        s = alpha * prices[i] + (1.0 - alpha) * s
    }
    return s
}
let p = rand([N])
var best = 1e30
for r in 0..REPEAT {
    let t0 = time()
    let s = ema(p, 0.1)
    best = min(best, time() - t0)
}
print("ns", best * 1e9 / N)
"""
EMA_BLOCK = """def ema(p: tensor[n, f32], alpha: f32) {
    return compute(p) {
        var s = 0.0
        for i in 0..n:
            s = alpha * p[i] + (1.0 - alpha) * s
        out[0] = s
    }
}
let p = rand([N])
print(ema(p, 0.1)[0] >= 0.0)
var best = 1e30
for r in 0..REPEAT {
    let t0 = time()
    let s = ema(p, 0.1)[0]
    best = min(best, time() - t0)
}
print("ns", best * 1e9 / N)
"""
FIB_HOST = """def fib(n: int) -> int {
    if n < 2 {
        return n
    }
    return fib(n - 1) + fib(n - 2)
}
var best = 1e30
for r in 0..REPEAT {
    let t0 = time()
    let f = fib(FIB)
    best = min(best, time() - t0)
}
print("ns", best * 1e9 / CALLS)
"""


def fib_calls(n):
    a, b = 1, 1  # calls of fib(0), fib(1)
    for _ in range(n - 1):
        a, b = b, a + b + 1
    return b


def run_zyntax(zyntax, src, repeat):
    src = src.replace("REPEAT", str(repeat)).replace("CALLS", str(fib_calls(FIB))).replace("FIB", str(FIB))
    src = re.sub(r"\bN\b", str(N), src)
    with tempfile.NamedTemporaryFile("w", suffix=".zynml", delete=False) as f:
        f.write(src)
    try:
        p = subprocess.run([zyntax, "run", f.name, "--device", "cpu"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=1200)
    finally:
        os.unlink(f.name)
    m = re.search(r"ns ([\d.e+-]+)", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit("zyntax failed:\n%s%s" % (p.stdout, p.stderr))
    return float(m.group(1))


def ema_python(prices, alpha):
    s = 0.0
    for x in prices:
        s = alpha * x + (1.0 - alpha) * s
    return s


def fib_python(n):
    if n < 2:
        return n
    return fib_python(n - 1) + fib_python(n - 2)


def best_ns(f, repeat, per):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best * 1e9 / per


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zyntax", default=os.path.join(ROOT, "build", "zyntax"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args()
    import random
    prices = [random.random() for _ in range(N)]
    rows = []
    ema_interp = run_zyntax(args.zyntax, EMA_HOST, args.repeat)
    ema_py = best_ns(lambda: ema_python(prices, 0.1), args.repeat, N)
    ema_native = run_zyntax(args.zyntax, EMA_BLOCK, args.repeat)
    rows.append("| moving average over %s f32 prices (ns per element) | %.1f | %.1f | %.2f | %.1f× | %.0f× |" % (
        "{:,}".format(N), ema_interp, ema_py, ema_native, ema_interp / ema_py, ema_interp / ema_native))
    fib_interp = run_zyntax(args.zyntax, FIB_HOST, args.repeat)
    fib_py = best_ns(lambda: fib_python(FIB), args.repeat, fib_calls(FIB))
    rows.append("| recursive fib(%d), %s calls (ns per call) | %.1f | %.1f | | %.1f× | |" % (
        FIB, "{:,}".format(fib_calls(FIB)), fib_interp, fib_py, fib_interp / fib_py))
    text = "\n".join([
        "## Host code",
        "",
        "- Machine: %s, %d logical cores, %s" % (performance_doc.cpu_name(), os.cpu_count(), platform.platform()),
        "- Date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "- `bench/compare_host.py`: the best of %d runs of each, side by side in one run. Host code runs in the "
        "interpreter (`zyntax run`); CPython %s runs the same code over a list of floats; the compiled column is "
        "the same loop written as a compute block (the CPU backend's native code, timed after the call that "
        "compiles it)." % (args.repeat, platform.python_version()),
        "",
        "| program | ZynML host code | CPython | compiled | host / CPython | host / compiled |",
        "|---|---|---|---|---|---|",
    ] + rows + [
        "",
        "Host functions run in a tree-walking interpreter, tens of times slower than CPython per statement. "
        "The compiled tier for host functions is not built yet; its target is the compiled column (at most 5 ns "
        "per element for the moving average).",
        ""])
    print(text)
    performance_doc.replace_sections(args.out, ["Host code"], text)


if __name__ == "__main__":
    main()
