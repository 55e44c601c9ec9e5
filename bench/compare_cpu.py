#!/usr/bin/env python3
"""Runs the CPU benchmarks and their anchors side by side, in one run, and
writes docs/performance.md: the machine, the date, every figure and every
ratio to its anchor.

  /usr/bin/python3 bench/compare_cpu.py            (scripts/bench_cpu.sh builds first)

zyntax and the C++ anchors (OpenBLAS, oneDNN, memcpy bandwidth) come from
build-bench/bench/zyntax_cpu_bench; PyTorch (CPU) and NumPy are timed here,
on the same shapes, in the same run.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import performance_doc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "build-bench", "bench", "zyntax_cpu_bench")
OUT = os.path.join(ROOT, "docs", "performance.md")

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # reported in the table
    torch = None


def typical_time(fn, repetitions=5, min_time=0.3):
    """Seconds per call of fn() as the C++ figures are taken: the median over
    repetitions of the mean time per call, each repetition calling fn() for
    at least min_time / repetitions (after a warm-up call)."""
    fn()
    means = []
    for _ in range(repetitions):
        calls, start = 0, time.perf_counter()
        while calls == 0 or time.perf_counter() - start < min_time / repetitions:
            fn()
            calls += 1
        means.append((time.perf_counter() - start) / calls)
    return float(np.median(means))


def run_cpp_bench(min_time, repetitions):
    """The median of each C++ benchmark over repetitions run in random order:
    zyntax and its anchor take turns, so a slow spell of the machine (turbo,
    neighbours on a VM) does not fall on one side of a ratio."""
    env = dict(os.environ)
    env.setdefault("ZYNTAX_CACHE_DIR", os.path.join(ROOT, "build-bench", "kernel-cache"))
    p = subprocess.run([BENCH, "--benchmark_format=json", "--benchmark_min_time=%g" % min_time,
                        "--benchmark_repetitions=%d" % repetitions, "--benchmark_enable_random_interleaving=true",
                        "--benchmark_report_aggregates_only=true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=True)
    data = json.loads(p.stdout.decode())
    results = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["name"].replace("/real_time", "").split("/iterations")[0]
        if name.endswith("_median"):
            name = name[:-len("_median")]
        results[name] = b
    return results


def ms(b):
    """Milliseconds per iteration of a Google Benchmark entry."""
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
    return b["real_time"] * scale


# The convolutions of bench/cpu_bench.cpp: 3x3, stride 1, padding 1 (batch, channels, size[, out channels]).
# The products of bench/cpu_bench.cpp (m, k, n): square, then short and wide
# (the im2col products of the two convolutions below, as plain matrices).
GEMM_SHAPES = [(n, n, n) for n in (256, 512, 1024, 2048, 4096)] + [(128, 1152, 6272), (64, 576, 3136)]
CONV_SHAPES = [(1, 64, 56, 64), (8, 128, 28, 128), (1, 256, 14, 256), (1, 512, 7, 512)]
DEPTHWISE_SHAPES = [(1, 256, 56), (8, 128, 28)]
# The backward passes of bench/cpu_bench.cpp: convolutions as above, layer norm rows x dim.
CONV_BACKWARD_SHAPES = [(1, 64, 56, 64), (8, 128, 28, 128)]


def torch_anchors(threads):
    if torch is None:
        return {}
    torch.set_num_threads(threads)
    r = {}
    g = torch.Generator().manual_seed(0)
    for rows, cols in [(4096, 1024), (1024, 4096)]:
        x = torch.randn(rows, cols, generator=g)
        r["softmax/%d/%d" % (rows, cols)] = typical_time(lambda: torch.softmax(x, dim=1)) * 1e3
    x = torch.randn(4096, 1024, generator=g)
    w, b = torch.randn(1024, generator=g), torch.randn(1024, generator=g)
    r["layernorm/4096/1024"] = typical_time(lambda: F.layer_norm(x, (1024,), w, b, 1e-5)) * 1e3
    big = torch.randn(1 << 24, generator=g)
    r["gelu"] = typical_time(lambda: F.gelu(big, approximate="tanh")) * 1e3
    r["gelu_erf"] = typical_time(lambda: F.gelu(big)) * 1e3
    r["copy"] = typical_time(lambda: big.clone()) * 1e3
    r["sum_of_squares"] = typical_time(lambda: torch.dot(big, big)) * 1e3
    for bh, s, d in [(12, 128, 64), (4, 512, 64)]:
        q, k, v = (torch.randn(bh, s, d, generator=g) for _ in range(3))
        scale = 1.0 / (d ** 0.5)
        r["attention/%d/%d/%d" % (bh, s, d)] = typical_time(
            lambda: torch.softmax(q @ k.transpose(1, 2) * scale, dim=-1) @ v) * 1e3
    eg, ids = torch.randn(4096, 768, generator=g), torch.randint(0, 30522, (4096,), generator=g)
    r["embedding_grad"] = typical_time(lambda: torch.zeros(30522, 768).index_add_(0, ids, eg)) * 1e3
    for b, c, hw, oc in CONV_SHAPES:
        x, w, bias = torch.randn(b, c, hw, hw, generator=g), torch.randn(oc, c, 3, 3, generator=g), torch.randn(oc, generator=g)
        r["conv2d/%d/%d/%d/%d" % (b, c, hw, oc)] = typical_time(lambda: F.conv2d(x, w, bias, padding=1)) * 1e3
    for b, c, hw in DEPTHWISE_SHAPES:
        x, w = torch.randn(b, c, hw, hw, generator=g), torch.randn(c, 1, 3, 3, generator=g)
        r["depthwise/%d/%d/%d" % (b, c, hw)] = typical_time(lambda: F.conv2d(x, w, padding=1, groups=c)) * 1e3
    for b, c, hw, oc in CONV_BACKWARD_SHAPES:
        x, w, gy = torch.randn(b, c, hw, hw, generator=g), torch.randn(oc, c, 3, 3, generator=g), torch.randn(b, oc, hw, hw, generator=g)
        r["conv2d_backward/%d/%d/%d/%d" % (b, c, hw, oc)] = typical_time(lambda: torch.ops.aten.convolution_backward(
            gy, x, w, [oc], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True])) * 1e3
    x, w, b = torch.randn(4096, 1024, generator=g), torch.randn(1024, generator=g), torch.randn(1024, generator=g)
    gy = torch.randn(4096, 1024, generator=g)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [1024], w, b, 1e-5)
    r["layernorm_backward/4096/1024"] = typical_time(lambda: torch.ops.aten.native_layer_norm_backward(
        gy, x, [1024], mean, rstd, w, b, [True, True, True])) * 1e3
    for m, k, n in GEMM_SHAPES:
        if m * k * n > 1024 ** 3:
            continue  # the largest take seconds in eager PyTorch and add nothing the OpenBLAS/oneDNN columns do not say
        a, bb = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
        r["sgemm/%d/%d/%d" % (m, k, n)] = typical_time(lambda: a @ bb) * 1e3
    return r


def numpy_anchors():
    rng = np.random.default_rng(0)
    r = {}
    x = rng.standard_normal((4096, 1024), dtype=np.float32)

    def softmax():
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        return e / e.sum(axis=1, keepdims=True)

    r["softmax/4096/1024"] = typical_time(softmax) * 1e3
    w, b = rng.standard_normal(1024, dtype=np.float32), rng.standard_normal(1024, dtype=np.float32)

    def layernorm():
        mu = x.mean(axis=1, keepdims=True)
        var = x.var(axis=1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * w + b

    r["layernorm/4096/1024"] = typical_time(layernorm) * 1e3
    g, ids = rng.standard_normal((4096, 768), dtype=np.float32), rng.integers(0, 30522, 4096)

    def embedding_grad():
        t = np.zeros((30522, 768), np.float32)
        np.add.at(t, ids, g)
        return t

    r["embedding_grad"] = typical_time(embedding_grad) * 1e3
    big = rng.standard_normal(1 << 24, dtype=np.float32)
    r["gelu"] = typical_time(lambda: big * 0.5 * (1.0 + np.tanh(0.7978845608 * (big + 0.044715 * big ** 3)))) * 1e3
    r["sum_of_squares"] = typical_time(lambda: np.dot(big, big)) * 1e3
    return r


def fmt(v, unit=""):
    if v is None:
        return "—"
    return ("%.3g" % v) + unit


def ratio(zyntax_ms, anchor_ms):
    """How many times faster zyntax is (> 1: faster), by time."""
    if zyntax_ms is None or anchor_ms is None:
        return "—"
    return "%.2f×" % (anchor_ms / zyntax_ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per repetition of a C++ benchmark")
    ap.add_argument("--repetitions", type=int, default=5, help="repetitions of each C++ benchmark (the median is reported)")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    if not os.path.exists(BENCH):
        sys.exit("build the benchmarks first: scripts/bench_cpu.sh")

    cpp = run_cpp_bench(args.min_time, args.repetitions)
    threads = os.cpu_count() or 1
    th = torch_anchors(threads)
    npy = numpy_anchors()

    def z(name):
        return ms(cpp[name]) if name in cpp else None

    def counter(name, key):
        return cpp[name].get(key) if name in cpp else None

    lines = []
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines += ["# Performance", "",
              "Measured by `bench/compare_cpu.py` (`scripts/bench_cpu.sh`): zyntax kernels and their anchors "
              "side by side in one run (C++ figures: the median of %d repetitions in random order; PyTorch and "
              "NumPy figures the same way: the median of 5 repetitions of the mean time per call). Ratios are "
              "anchor time / zyntax time: above 1 zyntax is faster." % args.repetitions, "",
              "## CPU", "",
              "- Machine: %s, %d logical cores, %s" % (performance_doc.cpu_name(), threads, platform.platform()),
              "- Date: %s" % now,
              "- zyntax: `cpu` device (LLVM JIT on all cores; matrix products packed and register-blocked, "
              "row values computed once, reductions interchanged so parallel loops vectorise)",
              "- Anchors: OpenBLAS and oneDNN (Debian's libopenblas, libdnnl) in the same process; PyTorch %s and "
              "NumPy %s (Debian) in the same run" % (torch.__version__ if torch else "(not installed)", np.__version__),
              ""]

    lines += ["### sgemm (f32, m×k @ k×n)", "",
              "| m × k × n | zyntax ms | GFLOP/s | OpenBLAS ms | oneDNN ms | PyTorch ms | vs faster of OpenBLAS/oneDNN | target |",
              "|---|---|---|---|---|---|---|---|"]
    for m, k, n in GEMM_SHAPES:
        shape = "%d/%d/%d" % (m, k, n)
        zt = z("BM_zyntax_sgemm/" + shape)
        ob, dn = z("BM_openblas_sgemm/" + shape), z("BM_onednn_sgemm/" + shape)
        best = min(v for v in (ob, dn) if v is not None) if (ob or dn) else None
        want = 1.0 if m * k * n <= 256 ** 3 else 0.9
        lines.append("| %d × %d × %d | %s | %s | %s | %s | %s | %s | ≥ %.1f×%s |" % (
            m, k, n, fmt(zt) if zt else "not run (too slow without schedules)", fmt(counter("BM_zyntax_sgemm/" + shape, "GFLOPS")),
            fmt(ob), fmt(dn), fmt(th.get("sgemm/" + shape)), ratio(zt, best), want,
            "" if zt is None or best is None else (" — met" if best / zt >= want else " — missed")))
    lines.append("")

    mem = counter("BM_memcpy_bandwidth", "GBps")
    lines += ["### Memory-bound kernels (64 MiB of f32, larger than each core's caches)", "",
              "Bandwidth counts bytes read + written. Measured copy bandwidth (memcpy, on all cores): **%s GB/s**. "
              "On a shared virtual machine it varies from run to run (48 to 106 GB/s on the same day here), and the "
              "percentages with it: the `copy` row, measured in the same run, is the steadier yardstick." % fmt(mem), "",
              "| kernel | zyntax ms | zyntax GB/s | % of memcpy bandwidth | PyTorch ms | vs PyTorch | NumPy ms | target |",
              "|---|---|---|---|---|---|---|---|"]
    for label, name, key in [("copy", "BM_zyntax_copy", "copy"), ("GELU (tanh form)", "BM_zyntax_gelu", "gelu"),
                             ("GELU (erf form, `gelu`)", "BM_zyntax_gelu_erf", "gelu_erf"),
                             ("sum of squares (`reduce(+)`, reads only; anchors `dot(x, x)`)", "BM_zyntax_sum_of_squares", "sum_of_squares")]:
        zt, gb = z(name), counter(name, "GBps")
        pct = "%.0f%%" % (100 * gb / mem) if gb and mem else "—"
        met = ""
        if gb and mem and key in th and zt:
            met = " — met" if gb >= 0.8 * mem and th[key] > zt else " — missed"
        lines.append("| %s | %s | %s | %s | %s | %s | %s | ≥ 80%% of bandwidth, faster than PyTorch%s |" % (
            label, fmt(zt), fmt(gb), pct, fmt(th.get(key)), ratio(zt, th.get(key)), fmt(npy.get(key)), met))
    gb = counter("BM_zyntax_gelu_in_cache", "GBps")
    if gb:
        lines.append("| GELU on 256 KiB (in L2: the arithmetic's own rate) | %s | %s | %s | — | — | — | — |" % (
            fmt(z("BM_zyntax_gelu_in_cache")), fmt(gb), "%.0f%%" % (100 * gb / mem) if mem else "—"))
    lines.append("")

    lines += ["### Row kernels and attention", "",
              "| kernel | shape | zyntax ms | zyntax GB/s | % of memcpy bandwidth | PyTorch ms | vs PyTorch | NumPy ms |",
              "|---|---|---|---|---|---|---|---|"]
    for label, name, key, shape in [
            ("softmax", "BM_zyntax_softmax/4096/1024", "softmax/4096/1024", "4096×1024"),
            ("softmax", "BM_zyntax_softmax/1024/4096", "softmax/1024/4096", "1024×4096"),
            ("layernorm", "BM_zyntax_layernorm/4096/1024", "layernorm/4096/1024", "4096×1024"),
            ("attention (flash, ZynML)", "BM_zyntax_attention/12/128/64", "attention/12/128/64", "12 heads × 128 × 64"),
            ("attention (flash, ZynML)", "BM_zyntax_attention/4/512/64", "attention/4/512/64", "4 heads × 512 × 64"),
            ("embedding gradient (scatter-add)", "BM_zyntax_embedding_grad", "embedding_grad",
             "4096×768 → 30522 rows")]:
        zt, gb = z(name), counter(name, "GBps")
        pct = "%.0f%%" % (100 * gb / mem) if gb and mem else "—"
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, shape, fmt(zt), fmt(gb), pct, fmt(th.get(key)), ratio(zt, th.get(key)), fmt(npy.get(key))))
    lines.append("")

    lines += ["### Convolution (3×3, stride 1, zero padding 1, NCHW)", "",
              "| kernel | batch × channels × size → out channels | zyntax ms | GFLOP/s | PyTorch ms | vs PyTorch |",
              "|---|---|---|---|---|---|"]
    for b, c, hw, oc in CONV_SHAPES:
        name, key = "BM_zyntax_conv2d/%d/%d/%d/%d" % (b, c, hw, oc), "conv2d/%d/%d/%d/%d" % (b, c, hw, oc)
        lines.append("| conv2d (with bias) | %d × %d × %d² → %d | %s | %s | %s | %s |" % (
            b, c, hw, oc, fmt(z(name)), fmt(counter(name, "GFLOPS")), fmt(th.get(key)), ratio(z(name), th.get(key))))
    for b, c, hw in DEPTHWISE_SHAPES:
        name, key = "BM_zyntax_depthwise/%d/%d/%d" % (b, c, hw), "depthwise/%d/%d/%d" % (b, c, hw)
        lines.append("| depthwise conv2d | %d × %d × %d² | %s | — | %s | %s |" % (
            b, c, hw, fmt(z(name)), fmt(th.get(key)), ratio(z(name), th.get(key))))
    lines.append("")

    lines += ["### Backward passes (the op library's kernels, as ComputeDevice runs them)", "",
              "| op | shape | zyntax ms | PyTorch ms | vs PyTorch |", "|---|---|---|---|---|"]
    for b, c, hw, oc in CONV_BACKWARD_SHAPES:
        name, key = "BM_zyntax_conv2d_backward/%d/%d/%d/%d" % (b, c, hw, oc), "conv2d_backward/%d/%d/%d/%d" % (b, c, hw, oc)
        lines.append("| conv2d_backward (input, weights, bias; 3×3, padding 1) | %d × %d × %d² → %d | %s | %s | %s |" % (
            b, c, hw, oc, fmt(z(name)), fmt(th.get(key)), ratio(z(name), th.get(key))))
    name, key = "BM_zyntax_layernorm_backward/4096/1024", "layernorm_backward/4096/1024"
    lines.append("| layer_norm_backward (input, gamma, beta) | 4096×1024 | %s | %s | %s |" % (
        fmt(z(name)), fmt(th.get(key)), ratio(z(name), th.get(key))))
    lines.append("")

    comp = cpp.get("BM_compile_cold_and_warm", {})
    launch = cpp.get("BM_zyntax_launch_tiny")
    lines += ["### Compile and launch", "",
              "| what | measured | target |", "|---|---|---|",
              "| compile a kernel cold (lower, O3, code generation, load) | %s ms | < 100 ms |" % fmt(comp.get("cold_ms")),
              "| load a kernel from the disk cache | %s ms | < 5 ms |" % fmt(comp.get("warm_ms")),
              "| launch a cached kernel on 8 elements (host side included) | %s µs | < 5 µs |" % (
                  fmt(launch["real_time"] * {"ns": 1e-3, "us": 1, "ms": 1e3}[launch["time_unit"]]) if launch else "—"),
              ""]

    lines += ["### Reading these numbers", "",
              "The CPU backend compiles every kernel natively. Matrix products (plain, transposed, batched, with an "
              "element-wise epilogue) get a BLIS-style schedule as a CIR pass: A and B packed into panels that stay "
              "in L2 and L1, an 8x32 register block of vector FMAs (AVX-512; 6x16 on AVX2), the work split into one "
              "task per core (a single product into the grid of row and column groups that packs least per task, so "
              "a short, wide one splits its columns; a row-major B is read in place where a task's rows are one "
              "block of A, since each of its panels then meets every row while in cache, and A where a task's "
              "columns are one block of B). Convolutions run through the same schedule as im2col products, packing "
              "no B at stride 1: each task copies the part of the zero-padded input it reads once, and the "
              "micro-kernel reads each im2col row from that copy at its window offset (an implicit GEMM over pixels "
              "counted in the padded row width, whose two padding columns per row are computed and dropped); the "
              "weights (finite-checked first, so that skipped padding terms never become inf × 0) are read in "
              "place. A convolution's weight gradient is a product too, with the input's windows on the left: its "
              "rows (window taps) are short runs of the image and its depth (the output pixels) long ones, so its "
              "panels are packed along the image rows, the padding as each run's range. Depthwise convolutions are "
              "not products: their window sum is turned inside out so the pixel loop runs innermost (one "
              "accumulator row per output row, each pixel still summing its terms in window order), the padding "
              "becomes loop ranges, and the pixels whose window lies inside the image run with the window row "
              "unrolled over plain loads. A batch of one still gives every core work: an outer parallel loop of too "
              "few iterations merges with the loop inside it (the depthwise convolution at 1 × 256 × 56² ran on one "
              "core before). Whole-tensor reductions fold one contiguous chunk per task in a register (f32 sums in "
              "f64, vectorised) and the tasks' partials meet atomically. The norms' parameter gradients (column "
              "sums over all rows) sum some 64 blocks of rows, one task each, reading along the rows, and then the "
              "blocks. Row kernels that compute a value twice (softmax's exp) keep it in the output row instead. "
              "Outputs that a kernel writes whole are not zero-filled and reuse warm blocks, so large element-wise "
              "kernels do not pay page faults. f32 exp and tanh are inline polynomials with no select for NaN (exp "
              "with no divide; tanh one formula over its whole range, e / (e + 2) with e = expm1(2|x|), no second "
              "polynomial for small |x|); f32 erf evaluates a rational fit in vector f64 (within 1 ulp); the "
              "activations `gelu`, `gelu_tanh`, `sigmoid` and `silu` of f32 values are computed in vector f64 with an "
              "inline exp (gelu's erfc in the tail as exp(-z²) times a fitted erfcx) and rounded once, so none calls "
              "libm per element and their tails (tiny and subnormal results) are right. When a "
              "kernel's GB/s on 256 KiB (in cache) is no higher than on 64 MiB, its arithmetic, not memory, bounds "
              "it on this machine. Results match the reference executor bit for bit except f32 exp/tanh (within 2 "
              "ulp), erf and the activations (1 ulp), running sums (split into partial sums) and matrix "
              "products (FMAs in a different grouping): within 1e-4 of the sum of |terms|.", ""]

    # Other scripts' sections (GPU, tiny LM) are measured elsewhere: kept.
    text = "\n".join(lines)
    head, cpu = text.split("\n## CPU", 1)
    performance_doc.replace_sections(args.out, ["CPU"], "## CPU" + cpu, head=head + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
