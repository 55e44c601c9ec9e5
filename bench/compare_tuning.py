#!/usr/bin/env python3
"""Schedule tuning measured: each benchmark kernel run with the schedules'
rules (ZYNTAX_TUNE=off) and with the tuning database's choices after
tuning (`on` once, then `cached`), beside its anchor, and the search itself
checked against timing every candidate. Writes the "CPU tuning" section of
docs/performance.md.

  /usr/bin/python3 bench/compare_tuning.py [--rounds 3]

The anchors: the faster of OpenBLAS and oneDNN for the matrix products
(cblas_sgemm, dnnl_sgemm, called through ctypes on the same NumPy arrays),
PyTorch for conv2d and softmax. Each configuration runs in a process of its
own (the tuning mode is a process's), the rounds alternating between them;
the anchor is timed interleaved with our calls in every process, and each
ratio is to its best over all of them (it does not depend on our mode: one
slow process's anchor cannot flatter us). Needs the Python module built (build/python) and Debian's
libopenblas0 and libdnnl2 (scripts/bench_cpu.sh installs them).
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "performance.md")
ZYNTAX = os.path.join(ROOT, "build", "zyntax")

# (name, M, K, N): the products of the tuning issue.
# Also a matrix times a vector (the other side of sgemv).
PRODUCTS = [("sgemm", 128, 4096, 4096), ("sgemv", 1, 4096, 4096), ("sgemv", 4096, 4096, 1), ("sgemm", 1000, 1000, 1000),
            ("sgemm", 4095, 4097, 257)]
CONVS = [(1, 64, 56, 64), (8, 128, 28, 128)]
SOFTMAXES = [(4096, 1024), (1024, 4096)]


def kernel_source(name):
    """A kernel of bench/bench_kernels.hpp, the C++ benchmarks' own source."""
    text = open(os.path.join(ROOT, "bench", "bench_kernels.hpp")).read()
    m = re.search(r'inline const char\* %s = R"\((.*?)\)";' % name, text, re.S)
    return m.group(1)


def blas():
    """cblas_sgemm and dnnl_sgemm on row-major NumPy arrays, or None each where missing."""
    P = ctypes.c_void_p
    out = {}
    try:
        ob = ctypes.CDLL("libopenblas.so.0")

        def openblas(a, b, c):
            M, K = a.shape
            N = b.shape[1]
            ob.cblas_sgemm(101, 111, 111, M, N, K, ctypes.c_float(1.0), P(a.ctypes.data), K, P(b.ctypes.data), N,
                           ctypes.c_float(0.0), P(c.ctypes.data), N)
        out["OpenBLAS"] = openblas
    except OSError:
        pass
    try:
        dn = ctypes.CDLL("libdnnl.so.2")
        i64 = ctypes.c_int64

        def onednn(a, b, c):
            M, K = a.shape
            N = b.shape[1]
            dn.dnnl_sgemm(ctypes.c_char(b"N"), ctypes.c_char(b"N"), i64(M), i64(N), i64(K), ctypes.c_float(1.0), P(a.ctypes.data),
                          i64(K), P(b.ctypes.data), i64(N), ctypes.c_float(0.0), P(c.ctypes.data), i64(N))
        out["oneDNN"] = onednn
    except OSError:
        pass
    return out


def measure(mode):
    """One process's figures: {case: {"ours": ms, "anchor": ms, "anchor_name": ...}}."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from compare_cpu import typical_time as median_time
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import zyntax
    torch.set_num_threads(os.cpu_count())
    rng = np.random.default_rng(1)
    libs = blas()
    res = {}
    mm = zyntax.compile(kernel_source("kMatmul"), device="cpu")
    for name, M, K, N in PRODUCTS:
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((K, N), dtype=np.float32)
        c = np.empty((M, N), np.float32)
        first = time.perf_counter()
        ours = mm.f(a, b)
        first = time.perf_counter() - first
        anchors = {}
        for lib, fn in libs.items():
            fn(a, b, c)
            assert np.allclose(c, ours, rtol=1e-3, atol=1e-2 * np.sqrt(K)), lib
        t_ours = []
        for _ in range(2):  # interleaved
            t_ours.append(median_time(lambda: mm.f(a, b)))
            for lib, fn in libs.items():
                anchors.setdefault(lib, []).append(median_time(lambda: fn(a, b, c)))
        best_lib = min(anchors, key=lambda l: min(anchors[l]))
        res["%s %d×%d×%d" % (name, M, K, N)] = {"ours": min(t_ours) * 1e3, "anchor": min(anchors[best_lib]) * 1e3,
                                              "anchor_name": best_lib, "first_call_s": first,
                                              "shapes": "f32[%d,%d] f32[%d,%d] -> f32[%d,%d]" % (M, K, K, N, M, N)}
    conv = zyntax.compile(kernel_source("kConv2d"), device="cpu")
    for b_, c_, hw, oc in CONVS:
        x = rng.standard_normal((b_, c_, hw, hw), dtype=np.float32)
        w = rng.standard_normal((oc, c_, 3, 3), dtype=np.float32)
        bias = rng.standard_normal(oc, dtype=np.float32)
        tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(bias)
        first = time.perf_counter()
        conv.f(x, w, bias)
        first = time.perf_counter() - first
        t_ours, t_torch = [], []
        for _ in range(2):
            t_ours.append(median_time(lambda: conv.f(x, w, bias)))
            t_torch.append(median_time(lambda: F.conv2d(tx, tw, tb, padding=1)))
        res["conv2d %d×%d×%d²→%d" % (b_, c_, hw, oc)] = {"ours": min(t_ours) * 1e3, "anchor": min(t_torch) * 1e3,
                                                         "anchor_name": "PyTorch", "first_call_s": first,
                                                         "shapes": "f32[%d,%d,%d,%d] f32[%d,%d,3,3] f32[%d] -> f32[%d,%d,%d,%d]" % (
                                                             b_, c_, hw, hw, oc, c_, oc, b_, oc, hw, hw)}
    sm = zyntax.compile(kernel_source("kSoftmax"), device="cpu")
    for r, cols in SOFTMAXES:
        x = rng.standard_normal((r, cols), dtype=np.float32)
        tx = torch.from_numpy(x)
        first = time.perf_counter()
        sm.f(x)
        first = time.perf_counter() - first
        t_ours, t_torch = [], []
        for _ in range(2):
            t_ours.append(median_time(lambda: sm.f(x)))
            t_torch.append(median_time(lambda: torch.softmax(tx, dim=1)))
        res["softmax %d×%d" % (r, cols)] = {"ours": min(t_ours) * 1e3, "anchor": min(t_torch) * 1e3, "anchor_name": "PyTorch",
                                            "first_call_s": first, "shapes": "f32[%d,%d] -> f32[%d,%d]" % (r, cols, r, cols)}
    return res


def run_mode(mode, cache):
    env = dict(os.environ, ZYNTAX_TUNE=mode, ZYNTAX_CACHE_DIR=cache)
    p = subprocess.run([sys.executable, __file__, "--measure", mode], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit("measuring with ZYNTAX_TUNE=%s failed:\n%s" % (mode, p.stderr.decode()))
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def exhaustive_check(cache):
    """`zyntax tune --compare-exhaustive` on a small product: how close the
    search comes to the best of every candidate, and in what share of its time."""
    prog = os.path.join(cache, "small.zynml")
    with open(prog, "w") as f:
        f.write(kernel_source("kMatmul") + "\nlet c = f(rand([384, 512]), rand([512, 384]))\n")
    env = dict(os.environ, ZYNTAX_CACHE_DIR=os.path.join(cache, "exhaustive"))
    p = subprocess.run([ZYNTAX, "tune", prog, "--device", "cpu", "--compare-exhaustive"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return p.stdout.decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0
    import performance_doc
    cache = tempfile.mkdtemp(prefix="zyntax-tuning-bench-")
    start = time.perf_counter()
    tuned_first = run_mode("on", cache)  # tunes every kernel once, and records it
    tuning_s = time.perf_counter() - start
    rounds = {"off": [], "cached": []}
    for _ in range(args.rounds):
        for mode in ("off", "cached"):
            rounds[mode].append(run_mode(mode, cache))
    records = [json.loads(l) for l in open(os.path.join(cache, "tuning", "records.jsonl"))]
    exhaustive = exhaustive_check(cache)

    def best(mode, case, key):
        return min(r[case][key] for r in rounds[mode])

    def best_anchor(case):
        # The anchor does not depend on our tuning mode: its best over every
        # process, so that one slow process's anchor cannot flatter us.
        return min(best(mode, case, "anchor") for mode in rounds)

    lines = ["## CPU tuning", "",
             "Schedule tuning (`zyntax tune`, `ZYNTAX_TUNE`): each kernel with the schedules' rules (`off`) and with the "
             "tuning database's choice (`cached`, after one run with `on`), each configuration in its own process, %d rounds "
             "alternating, the best round of each; every ratio is the anchor's time over ours, the anchor timed interleaved "
             "with our calls in each process and its best over all of them taken (above 1: we are faster). Written by `bench/compare_tuning.py`." % args.rounds, "",
             ] + performance_doc.machine_lines() + ["",
             "| kernel | anchor | anchor ms | rules ms | ratio | tuned ms | ratio | choice |",
             "|---|---|---|---|---|---|---|---|"]
    by_shape = {r["shapes"]: r for r in records}
    for case in rounds["off"][0]:
        off, tuned = best("off", case, "ours"), best("cached", case, "ours")
        anchor = best_anchor(case)
        name = rounds["off"][0][case]["anchor_name"]
        rec = by_shape.get(rounds["off"][0][case]["shapes"])
        choice = rec["choice"] if rec else "no record"
        lines.append("| %s | %s | %.2f | %.2f | %.2f× | %.2f | %.2f× | %s |" % (
            case, name, anchor, off, anchor / off, tuned, anchor / tuned, choice))
    lines += ["", "Tuning every kernel above took %.0f s (the `on` run, compiles and timings included)." % tuning_s, "",
              "The search against timing every candidate (`zyntax tune --compare-exhaustive`, a 384×512×384 product): "
              "`of best` is the search's choice over the best candidate, both timed in the exhaustive run; the last column "
              "is the search's time over the exhaustive search's (which runs second and reuses the plans the search "
              "compiled: those compiles are counted in its time as the search paid them).", "", "```", exhaustive.strip(), "```"]
    performance_doc.replace_sections(OUT, ["CPU tuning"], "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
