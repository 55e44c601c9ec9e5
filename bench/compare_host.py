#!/usr/bin/python3
"""Host code: loops and calls written in a ZynML `def`, run by `zyntax run` in
each host tier (--host interp, tiered, compiled), against the same code in
CPython and, for the moving average, the same loop as a compute block (the
CPU backend's native code), side by side in one run. Writes the
"## Host code" section of docs/performance.md.

    /usr/bin/python3 bench/compare_host.py [--zyntax build/zyntax] [--repeat 3]
"""
import argparse
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


COLLATZ_HOST = """def steps(start: int) -> int {
    var n = start
    var k = 0
    while n != 1 {
        if n % 2 == 0 {
            n = n / 2
        } else {
            n = 3 * n + 1
        }
        k += 1
    }
    return k
}
def total(limit: int) -> int {
    var s = 0
    for i in 1..limit {
        s += steps(i)
    }
    return s
}
var best = 1e30
for r in 0..REPEAT {
    let t0 = time()
    let s = total(COLLATZ)
    best = min(best, time() - t0)
}
print("ns", best * 1e9 / COLLATZ_STEPS)
"""

ROWS_HOST = """def row_sums(a: tensor[r, c, f64], out: tensor[k, f64]) {
    for i in 0..r {
        var s = 0.0
        for j in 0..c {
            s += a[i, j] * a[i, j]
        }
        out[i] = s
    }
}
let a = randn([ROWS, ROWS], dtype=f64)
let out = zeros([ROWS], dtype=f64)
var best = 1e30
for r in 0..REPEAT {
    let t0 = time()
    row_sums(a, out)
    best = min(best, time() - t0)
}
print("ns", best * 1e9 / (ROWS * ROWS))
"""

BOOK_HOST = """def update(book, side: int, price: float, qty: int) -> float {
    if side == 0 {
        if price > book.bid {
            book.bid = price
            book.bid_qty = qty
        } elif price == book.bid {
            book.bid_qty += qty
        }
    } else {
        if price < book.ask {
            book.ask = price
            book.ask_qty = qty
        } elif price == book.ask {
            book.ask_qty += qty
        }
    }
    book.updates += 1
    return book.ask - book.bid
}
def replay(book, n: int) -> float {
    var spread = 0.0
    for k in 0..n {
        spread = update(book, k % 2, 99.0 + (k % 7) * 0.25, 1 + k % 3)
    }
    return spread
}
let book = {bid: 99.5, bid_qty: 10, ask: 100.5, ask_qty: 7, updates: 0}
var best = 1e30
for r in 0..REPEAT {
    let t0 = time()
    let s = replay(book, BOOK)
    best = min(best, time() - t0)
}
print("ns", best * 1e9 / BOOK)
"""

BOOK = 1_000_000
COLLATZ = 30_000
ROWS = 1000


def collatz_steps_python(n):
    k = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        k += 1
    return k


def collatz_python(limit):
    return sum(collatz_steps_python(i) for i in range(1, limit))


COLLATZ_STEPS = collatz_python(COLLATZ)


def row_sums_python(a, out):
    for i, row in enumerate(a):
        s = 0.0
        for v in row:
            s += v * v
        out[i] = s


def order_book_update_python(book, side, price, qty):
    if side == 0:
        if price > book["bid"]:
            book["bid"], book["bid_qty"] = price, qty
        elif price == book["bid"]:
            book["bid_qty"] += qty
    else:
        if price < book["ask"]:
            book["ask"], book["ask_qty"] = price, qty
        elif price == book["ask"]:
            book["ask_qty"] += qty
    book["updates"] += 1
    return book["ask"] - book["bid"]


def replay_python(book, n):
    spread = 0.0
    for k in range(n):
        spread = order_book_update_python(book, k % 2, 99.0 + (k % 7) * 0.25, 1 + k % 3)
    return spread


def fib_calls(n):
    a, b = 1, 1  # calls of fib(0), fib(1)
    for _ in range(n - 1):
        a, b = b, a + b + 1
    return b


def run_zyntax(zyntax, src, repeat, host="interp"):
    src = src.replace("REPEAT", str(repeat)).replace("CALLS", str(fib_calls(FIB))).replace("FIB", str(FIB))
    src = src.replace("BOOK", str(BOOK)).replace("COLLATZ_STEPS", str(COLLATZ_STEPS)).replace("COLLATZ", str(COLLATZ)).replace("ROWS", str(ROWS))
    src = re.sub(r"\bN\b", str(N), src)
    with tempfile.NamedTemporaryFile("w", suffix=".zynml", delete=False) as f:
        f.write(src)
    try:
        p = subprocess.run([zyntax, "run", f.name, "--device", "cpu", "--host", host], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args()
    import random
    prices = [random.random() for _ in range(N)]
    matrix = [[random.gauss(0, 1) for _ in range(ROWS)] for _ in range(ROWS)]
    sums = [0.0] * ROWS
    book = {"bid": 99.5, "bid_qty": 10, "ask": 100.5, "ask_qty": 7, "updates": 0}
    programs = [
        ("moving average over %s f32 prices (ns per element)" % "{:,}".format(N), EMA_HOST,
         lambda: ema_python(prices, 0.1), N, EMA_BLOCK),
        ("recursive fib(%d), %s calls (ns per call)" % (FIB, "{:,}".format(fib_calls(FIB))), FIB_HOST,
         lambda: fib_python(FIB), fib_calls(FIB), None),
        ("Collatz steps of 1..%s, %s loop iterations (ns per iteration)" % ("{:,}".format(COLLATZ), "{:,}".format(COLLATZ_STEPS)),
         COLLATZ_HOST, lambda: collatz_python(COLLATZ), COLLATZ_STEPS, None),
        ("squared row sums of a %dx%d f64 tensor, in place (ns per element)" % (ROWS, ROWS), ROWS_HOST,
         lambda: row_sums_python(matrix, sums), ROWS * ROWS, None),
        ("order book: %s updates of a record, replayed by a host function (ns per update)" % "{:,}".format(BOOK), BOOK_HOST,
         lambda: replay_python(dict(book), BOOK), BOOK, None),
    ]
    rows = []
    for label, src, python, per, block in programs:
        t = {host: run_zyntax(args.zyntax, src, args.repeat, host) for host in ("interp", "tiered", "compiled")}
        py = best_ns(python, min(args.repeat, 3), per)
        native = "%.2f" % run_zyntax(args.zyntax, block, args.repeat) if block else ""
        rows.append("| %s | %.1f | %.2f | %.2f | %.1f | %s | %.0f× | %.0f× |" % (
            label, t["interp"], t["tiered"], t["compiled"], py, native, t["interp"] / t["tiered"], py / t["compiled"]))
    # The critical path: examples/order_book.zynml times each call itself (latency()).
    p = subprocess.run([args.zyntax, "run", os.path.join(ROOT, "examples", "order_book.zynml")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    m = re.search(r"latency: p50 ([\d.e+-]+) ns, p99 ([\d.e+-]+) ns, target (\d+) ns, met: (\w+) \((\w+)\)", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit("order_book failed:\n%s%s" % (p.stdout, p.stderr))
    book = {"bid": 99.5, "bid_qty": 10, "ask": 100.5, "ask_qty": 7, "updates": 0}
    py_update = best_ns(lambda: [order_book_update_python(book, 0, 99.75, 1) for _ in range(100000)], 3, 100000)
    critical = ("| `examples/order_book.zynml`: `update` (`@critical_path @no_allocation @target_latency(100ns)`) on a "
                "record of five fields, 100,000 calls timed one by one | p50 %s ns, p99 %s ns (%s) | target %s ns: %s | "
                "CPython, the same update on a dict: %.1f ns per call (mean) |" % (
                    m.group(1), m.group(2), m.group(5), m.group(3), "met" if m.group(4) == "true" else "missed", py_update))
    text = "\n".join([
        "## Host code",
        "",
        *performance_doc.machine_lines(),
        "- `bench/compare_host.py`: the best of %d calls in one process for each tier (`zyntax run --host interp`, "
        "`tiered`, `compiled`), side by side in one run; CPython %s runs the same code over lists of floats (best of %d); "
        "the compute block column is the moving average written as a compute block (the CPU backend's native code). "
        "Tiered runs its first two calls interpreted and compiles in the background; compiled compiles before the "
        "first call; each is timed after." % (args.repeat, platform.python_version(), min(args.repeat, 3)),
        "",
        "| program | interpreted | tiered | compiled | CPython | compute block | tiered vs interpreted | compiled vs CPython |",
        "|---|---|---|---|---|---|---|---|",
    ] + rows + [
        "",
        "| critical path | latency | target | anchor |",
        "|---|---|---|---|",
        critical,
        "",
        "Host functions whose values are numbers, bools, records of numbers and tensors compile to native code "
        "through LLVM (`src/host`); the rest (strings, lists, compute blocks, builtins with effects) stay "
        "interpreted, and `zyntax run --explain-host` says why, per function and line. `latency()` times each call "
        "with the steady clock, less the clock's own cost. Calls of compiled functions from Python: \"Calls from "
        "Python\" below.",
        ""])
    print(text)
    performance_doc.replace_sections(args.out, ["Host code"], text)


if __name__ == "__main__":
    main()
