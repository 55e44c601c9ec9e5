#!/usr/bin/env python3
"""Shapes the schedules' rules were not written for, beside their anchors in
one process: matrix products whose rows of B lie a multiple of 1 KiB apart
(against the faster of OpenBLAS and oneDNN), sums along rows and down
columns, a softmax down columns, transposes and gathers of rows (against
PyTorch), each on the `cpu` device with
the rules alone (ZYNTAX_TUNE=off: no tuning record is used). Writes the
"CPU shapes" section of docs/performance.md.

  /usr/bin/python3 bench/compare_shapes.py

Needs the Python module built (build/python) and Debian's libopenblas0 and
libdnnl2 (scripts/bench_cpu.sh installs them).
"""
import os
import sys

os.environ["ZYNTAX_TUNE"] = "off"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
OUT = os.path.join(ROOT, "docs", "performance.md")

PRODUCTS = [(128, 4096, 1024), (128, 4096, 1536), (256, 2048, 768), (64, 1024, 1024)]
SUMS = [(4096, 1000), (1000, 4097), (10, 100000)]
SOFTMAXES = [(4096, 1000), (1000, 4096)]
TRANSPOSES = [(4096, 1000), (1024, 1024), (100000, 64)]
GATHERS = [(30522, 768, 4096), (50257, 1024, 512), (1000, 64, 100000)]

SOURCE = """
def row_sum(x: tensor[r, c, f32]) {
    return compute(x) {
        @kernel fused
        for i in 0..r:
            var s = 0.0
            for j in 0..c:
                s += x[i, j]
            out[i] = s
    }
}
def column_sum(x: tensor[r, c, f32]) {
    return compute(x) {
        @kernel fused
        for j in 0..c:
            var s = 0.0
            for i in 0..r:
                s += x[i, j]
            out[j] = s
    }
}
def column_softmax(x: tensor[r, c, f32]) {
    return compute(x) {
        @kernel fused
        for j in 0..c:
            var m = -inf
            for i in 0..r:
                m = max(m, x[i, j])
            var s = 0.0
            for i in 0..r:
                s += exp(x[i, j] - m)
            for i in 0..r:
                out[i, j] = exp(x[i, j] - m) / s
    }
}
def transpose(x: tensor[r, c, f32]) {
    return compute(x) {
        @kernel elementwise
        for j in 0..c, i in 0..r:
            out[j, i] = x[i, j]
    }
}
def gather(t: tensor[v, d, f32], ids: tensor[n, i32]) {
    return compute(t, ids) {
        @kernel elementwise
        for i in 0..n, k in 0..d:
            out[i, k] = t[ids[i], k]
    }
}
"""


def main():
    import numpy as np
    import torch
    import zyntax
    import performance_doc
    from compare_cpu import typical_time
    from compare_tuning import blas, kernel_source
    torch.set_num_threads(os.cpu_count())
    rng = np.random.default_rng(1)
    libs = blas()
    mm = zyntax.compile(kernel_source("kMatmul"), device="cpu")
    prog = zyntax.compile(SOURCE, device="cpu")
    rows = []

    def timed(name, shape, ours, anchor_name, anchor, check):
        ours_out = ours()
        check(np.asarray(ours_out))
        t_ours, t_anchor = [], []
        for _ in range(3):  # interleaved
            t_ours.append(typical_time(ours))
            t_anchor.append(typical_time(anchor))
        rows.append((name, shape, min(t_ours) * 1e3, anchor_name, min(t_anchor) * 1e3))
        print("%-20s %-16s ours %.3f ms  %s %.3f ms" % (name, shape, rows[-1][2], anchor_name, rows[-1][4]), flush=True)

    for M, K, N in PRODUCTS:
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((K, N), dtype=np.float32)
        c = np.empty((M, N), np.float32)
        best = min(libs, key=lambda lib: typical_time(lambda: libs[lib](a, b, c)))
        timed("sgemm", "%d×%d×%d" % (M, K, N), lambda: mm.f(a, b), best, lambda: libs[best](a, b, c),
              lambda y: np.testing.assert_allclose(y, a @ b, rtol=1e-3, atol=1e-2 * np.sqrt(K)))
    for r, cols in SUMS:
        x = rng.standard_normal((r, cols), dtype=np.float32)
        tx = torch.from_numpy(x)
        timed("row sum", "%d×%d" % (r, cols), lambda: prog.row_sum(x), "PyTorch", lambda: tx.sum(1),
              lambda y: np.testing.assert_allclose(y, x.sum(1, dtype=np.float64), rtol=1e-3, atol=1e-3 * np.sqrt(cols)))
        timed("column sum", "%d×%d" % (r, cols), lambda: prog.column_sum(x), "PyTorch", lambda: tx.sum(0),
              lambda y: np.testing.assert_allclose(y, x.sum(0, dtype=np.float64), rtol=1e-3, atol=1e-3 * np.sqrt(r)))
    for r, cols in SOFTMAXES:
        x = rng.standard_normal((r, cols), dtype=np.float32)
        tx = torch.from_numpy(x)
        timed("softmax down columns", "%d×%d" % (r, cols), lambda: prog.column_softmax(x), "PyTorch", lambda: torch.softmax(tx, 0),
              lambda y: np.testing.assert_allclose(y, torch.softmax(tx, 0).numpy(), rtol=1e-4, atol=1e-6))
    for r, cols in TRANSPOSES:
        x = rng.standard_normal((r, cols), dtype=np.float32)
        tx = torch.from_numpy(x)
        timed("transpose", "%d×%d" % (r, cols), lambda: prog.transpose(x), "PyTorch", lambda: tx.t().contiguous(),
              lambda y: np.testing.assert_array_equal(y, x.T))
    for v, d, n in GATHERS:  # an embedding's rows looked up (torch indexes with int64)
        t = rng.standard_normal((v, d), dtype=np.float32)
        ids = rng.integers(0, v, n).astype(np.int32)
        tt, tids = torch.from_numpy(t), torch.from_numpy(ids.astype(np.int64))
        timed("gather rows", "%d of %d×%d" % (n, v, d), lambda: prog.gather(t, ids), "PyTorch", lambda: tt[tids],
              lambda y: np.testing.assert_array_equal(y, t[ids]))

    lines = ["## CPU shapes", "",
             "Shapes the schedules' rules were not written for, with the rules alone (`ZYNTAX_TUNE=off`), beside their "
             "anchors in one process, 3 rounds interleaved, the best of each; the ratio is the anchor's time over ours "
             "(above 1: we are faster). Products against the faster of OpenBLAS and oneDNN (the faster of the two at "
             "each shape), the rest against PyTorch. Written by `bench/compare_shapes.py`.", ""] + performance_doc.machine_lines() + [
             "", "| kernel | shape | zyntax ms | anchor | anchor ms | ratio |", "|---|---|---|---|---|---|"]
    for name, shape, ours, anchor_name, anchor in rows:
        lines.append("| %s | %s | %.3f | %s | %.3f | %.2f× |" % (name, shape, ours, anchor_name, anchor, anchor / ours))
    lines += ["", "Before the rules knew these shapes (the same Intel Xeon, 2026-12-01, the build before them): sgemm "
              "128×4096×1024 at 0.36–0.40× (its B read in place, rows a page apart), 128×4096×1536 0.72–0.78×, 64×1024×1024 "
              "0.54×; row sums 4096×1000 at 0.06×, 1000×4097 0.27×, 10×100000 0.31× (turned inside out across rows, on one "
              "thread); column sums 4096×1000 0.80×, 1000×4097 0.69× (on one thread); softmax down the columns of 4096×1000 0.10× (each "
              "column walked down its rows); transpose 4096×1000 0.29× (untiled). Gathers of rows, before the kernels took "
              "their buffers as noalias (the same machine, 2026-12-02): 0.71×, 0.71× and 0.54× (each element's index "
              "read again after every store, the copy one element at a time)."]
    performance_doc.replace_sections(OUT, ["CPU shapes"], "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
