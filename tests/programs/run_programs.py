#!/usr/bin/python3
"""End-to-end tests of zyntax on the ZynML programs in this directory.

Each program loads its inputs from .npy files in the current directory and
saves its outputs with save(). For every case this runner makes random inputs
with NumPy, writes them into a fresh temporary directory, runs

    zyntax run <absolute path to the program>      (cwd = that directory)

checks the exit status, loads the outputs and compares them (shape, dtype,
values) with a reference computed independently in NumPy (never by running
zyntax). Besides, every program must pass `zyntax check` and
`zyntax compile --emit ast|cir` ("static" cases), and a few cases are run twice
to check that the results are bitwise deterministic.

    /usr/bin/python3 tests/programs/run_programs.py [--zyntax PATH] [-k SUBSTRING]...
        [-j JOBS] [-v] [--list] [--device DEVICE] [--keep DIR]

-k selects the cases whose name, program[label], contains SUBSTRING (e.g.
-k matmul, -k 'relu[nan'); --keep DIR keeps the inputs and outputs of each
failing case under DIR so that the printed command can be rerun there.

Exit status: 0 when every selected case passes, 1 otherwise.
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_ZYNTAX = os.path.join(ROOT, "build", "zyntax")
TIMEOUT_S = 120
KEEP_DIR = None   # --keep: where failing cases leave their directories
COMPARE_FUSION = False  # --compare-fusion: every case again with --fusion off, the same bytes
FUSED_CASES = []  # with --compare-fusion: the cases in which something fused
COMPARE_HOST = False  # --compare-host: every case compiled (--host compiled) and interpreted, the same bytes
COMPILED_CASES = []  # with --compare-host: the cases in which a host function ran compiled
DEVICE = None     # --device: passed to every `zyntax run` that names no device itself

F32 = np.float32
F64 = np.float64
BAD_OUTPUT = ("Segmentation", "AddressSanitizer", "terminate called", "Aborted",
              "runtime error:", "LeakSanitizer")


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

class Case:
    """One run of one program.

    inputs:   {file stem: ndarray}, written as <stem>.npy
    expected: {file stem: ndarray}, compared with <stem>.npy after the run;
              the expected dtype is the ndarray's dtype
    tol:      {file stem: (rtol, atol)} or one (rtol, atol) for all outputs;
              None means exact equality, "shape" compares shape and dtype only
    args:        more arguments for `zyntax run`
    stdout_has:  texts that stdout must contain
    stdout_check: callable(stdout) raising AssertionError
    post_check:  callable(case, directory) raising AssertionError, after the run
    static:      instead of running, check + compile --emit ast|cir the program
    repeat:      run a second time; stdout and files must be bitwise the same
    """

    def __init__(self, program, label, inputs, expected, tol, args=(),
                 stdout_has=(), stdout_check=None, static=False, post_check=None, repeat=False, timed_lines=()):
        self.program = program
        self.timed_lines = tuple(timed_lines)  # lines starting so print timings: not compared between runs
        self.repeat = repeat
        self.post_check = post_check
        self.static = static
        self.label = label
        self.inputs = inputs
        self.expected = expected
        self.tol = tol
        self.args = list(args)
        self.stdout_has = list(stdout_has)
        self.stdout_check = stdout_check
        self.name = "%s[%s]" % (program, label)

    def tol_for(self, stem):
        if isinstance(self.tol, dict):
            return self.tol.get(stem, (1e-5, 1e-6))
        return self.tol


CASES = []


def add(program, label, inputs, expected, tol, **kw):
    CASES.append(Case(program, label, inputs, expected, tol, **kw))


def rng_for(*key):
    """A deterministic generator per case, so failures are reproducible."""
    seed = 0
    for part in key:
        for ch in str(part):
            seed = (seed * 131 + ord(ch)) % (2 ** 32)
    return np.random.default_rng(seed)


def randn(rng, shape, dtype=F32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# Tolerances
ELEMENTWISE = (1e-5, 1e-6)
REDUCTION = (1e-4, 1e-5)
MATMUL = (1e-4, 1e-4)
EXACT = None
BITS = "bits"   # every bit: the signs of zeros too, NaN where NaN


# ---------------------------------------------------------------------------
# NumPy references (computed in float64, cast to the expected dtype)
# ---------------------------------------------------------------------------

def ref_relu(x):
    return np.maximum(x.astype(F64), 0.0).astype(x.dtype)


def ref_mul_add(x, y):
    return (x.astype(F64) * y.astype(F64) + 1.0).astype(x.dtype)


def ref_gelu(x):
    v = x.astype(F64)
    return (v * 0.5 * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))).astype(x.dtype)


def ref_softmax(x, axis=-1):
    v = x.astype(F64)
    m = np.max(v, axis=axis, keepdims=True)
    e = np.exp(v - m)
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def ref_layer_norm(x, gamma, beta, eps):
    v = x.astype(F64)
    mean = v.mean(axis=-1, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((v - mean) / np.sqrt(var + eps) * gamma + beta).astype(x.dtype)


def ref_conv2d(inp, kernel, bias, stride, padding):
    x = inp.astype(F64)
    w = kernel.astype(F64)
    batch, in_c, in_h, in_w = x.shape
    out_c, _, kh, kw = w.shape
    xp = np.zeros((batch, in_c, in_h + 2 * padding, in_w + 2 * padding))
    xp[:, :, padding:padding + in_h, padding:padding + in_w] = x
    out_h = (in_h + 2 * padding - kh) // stride + 1
    out_w = (in_w + 2 * padding - kw) // stride + 1
    out = np.zeros((batch, out_c, out_h, out_w))
    for oh in range(out_h):
        for ow in range(out_w):
            patch = xp[:, :, oh * stride:oh * stride + kh, ow * stride:ow * stride + kw]
            out[:, :, oh, ow] = np.einsum("bchw,ochw->bo", patch, w)
    out += bias.astype(F64)[None, :, None, None]
    return out.astype(inp.dtype)


def ref_conv2d_depthwise(inp, kernel):
    x = inp.astype(F64)
    w = kernel.astype(F64)
    batch, ch, in_h, in_w = x.shape
    _, kh, kw = w.shape
    out_h, out_w = in_h - kh + 1, in_w - kw + 1
    out = np.zeros((batch, ch, out_h, out_w))
    for i in range(kh):
        for j in range(kw):
            out += x[:, :, i:i + out_h, j:j + out_w] * w[None, :, i, j, None, None]
    return out.astype(inp.dtype)


def ref_attention(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d)) V over the seq axis (axis 2) of [b, h, s, d]."""
    q, k, v = (t.astype(F64) for t in (Q, K, V))
    scores = np.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask[None, None], scores, -np.inf)
    m = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - m)
    p = e / e.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", p, v).astype(Q.dtype)


def ref_rope(x, cos_cache, sin_cache):
    v = x.astype(F64)
    c = cos_cache.astype(F64)[None, None]
    s = sin_cache.astype(F64)[None, None]
    x0, x1 = v[..., 0::2], v[..., 1::2]
    out = np.empty_like(v)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out.astype(x.dtype)


# ---------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------

VECTOR_SIZES = [1, 3, 17, 127, 1000]


def define_elementwise():
    for n in VECTOR_SIZES:
        r = rng_for("relu", n)
        x = randn(r, (n,))
        add("relu", "n=%d" % n, {"x": x}, {"y": ref_relu(x)}, ELEMENTWISE)
    # the same program with an explicit default device
    x = randn(rng_for("relu-dev"), (33,))
    for dev in ("cpu", "cpu:reference", "auto"):
        add("relu", "n=33,--device %s" % dev, {"x": x}, {"y": ref_relu(x)}, ELEMENTWISE,
            args=["--device", dev])
    # NaN and infinities propagate as in NumPy (np.maximum propagates NaN)
    x = np.array([np.nan, -1.0, np.inf, -np.inf, 0.0, 2.5, -0.0, np.nan], dtype=F32)
    add("relu", "nan/inf", {"x": x}, {"y": ref_relu(x)}, ELEMENTWISE)
    # f64 in, f64 out
    x = randn(rng_for("relu64"), (17,), F64)
    add("relu", "f64 n=17", {"x": x}, {"y": ref_relu(x)}, (1e-12, 0.0))

    for n in VECTOR_SIZES:
        r = rng_for("mul_add", n)
        x, y = randn(r, (n,)), randn(r, (n,))
        add("mul_add", "n=%d" % n, {"x": x, "y": y}, {"z": ref_mul_add(x, y)}, ELEMENTWISE)
    x = np.array([np.nan, 1.0, np.inf, np.inf, -np.inf, 0.0, 2.0, 3e38], dtype=F32)
    y = np.array([1.0, np.nan, 2.0, 0.0, 2.0, np.inf, -np.inf, 10.0], dtype=F32)
    with np.errstate(all="ignore"):
        add("mul_add", "nan/inf", {"x": x, "y": y}, {"z": ref_mul_add(x, y)}, ELEMENTWISE)
    for n in (1, 17, 127):
        r = rng_for("mul_add64", n)
        x, y = randn(r, (n,), F64), randn(r, (n,), F64)
        add("mul_add", "f64 n=%d" % n, {"x": x, "y": y}, {"z": ref_mul_add(x, y)}, (1e-12, 1e-14))

    for rows, cols in [(1, 1), (3, 5), (17, 1), (1, 17), (16, 16), (31, 7)]:
        r = rng_for("broadcast", rows, cols)
        m, v = randn(r, (rows, cols)), randn(r, (cols,))
        expected = (m.astype(F64) * v.astype(F64)[None, :]).astype(F32)
        add("broadcast", "%dx%d" % (rows, cols), {"matrix": m, "vector": v},
            {"scaled": expected}, ELEMENTWISE)

    for n in (1, 6, 33):
        r = rng_for("reversed_index", n)
        x = randn(r, (n,))
        add("reversed_index", "n=%d" % n, {"x": x}, {"r": (x.astype(F64)[::-1] * 2.0).astype(F32)}, ELEMENTWISE)

    for rows, cols in ((1, 1), (3, 5), (17, 2)):
        x = randn(rng_for("typed_let", rows, cols), (rows, cols))
        doubled = x * F32(2.0)
        add("typed_let", "%dx%d" % (rows, cols), {"x": x},
            {"doubled": doubled, "firsts": doubled[0] + F32(1.0), "sizes": np.array([rows, cols], F32)},
            {"doubled": EXACT, "firsts": EXACT, "sizes": EXACT})

    for n in (1, 3, 4, 5, 9):
        x = randn(rng_for("output_shapes", n), (n,))
        x64 = x.astype(F64)
        declared = np.zeros((n, 3), F32)
        declared[:, 1] = x
        add("output_shapes", "n=%d" % n, {"x": x},
            {"win": (x64[:max(n - 4, 0)] + x64[4:]).astype(F32), "backwards": np.zeros(0, F32), "declared": declared,
             "scaled": x * F32(2.5) + F32(1.0)},  # each operation rounded to f32
            {"win": EXACT, "backwards": EXACT, "declared": EXACT, "scaled": EXACT})

    for n in VECTOR_SIZES:
        r = rng_for("gelu", n)
        x = randn(r, (n,), scale=2.0)
        add("gelu", "n=%d" % n, {"x": x}, {"activated": ref_gelu(x)}, ELEMENTWISE)
    x = np.array([-10.0, -3.0, -1e-3, 0.0, 1e-3, 3.0, 10.0], dtype=F32)
    add("gelu", "edges", {"x": x}, {"activated": ref_gelu(x)}, ELEMENTWISE)

    for n in (1, 2, 3, 17):
        r = rng_for("host_negative", n)
        x = randn(r, (n,))
        x64 = x.astype(F64)
        window = np.array([x64[max(0, i - 2):i + 1].sum() for i in range(n)])
        add("host_negative", "n=%d" % n, {"x": x}, {"shifted": (x64 - 3).astype(F32), "windowed": window.astype(F32)}, ELEMENTWISE)


def define_reductions():
    for n in VECTOR_SIZES:
        r = rng_for("reduce", n)
        data = randn(r, (n,))
        d64 = data.astype(F64)
        add("reduce_sum", "n=%d" % n, {"data": data},
            {"sum": np.array(d64.sum(), dtype=F32)}, REDUCTION)
        add("reduce_max", "n=%d" % n, {"data": data},
            {"max_val": np.array(data.max(), dtype=F32)}, EXACT)
        add("norm", "n=%d" % n, {"data": data},
            {"norm": np.array(np.sqrt((d64 * d64).sum()), dtype=F32)}, REDUCTION)
        add("argmax", "n=%d" % n, {"data": data},
            {"max_idx": np.array(np.argmax(data), dtype=np.int64)}, EXACT)
    # accuracy over many terms (NumPy sums pairwise)
    data = rng_for("reduce-long").random(100000).astype(F32)
    add("reduce_sum", "n=100000 positive", {"data": data},
        {"sum": np.array(data.astype(F64).sum(), dtype=F32)}, (1e-5, 0.0), repeat=True)
    # the maximum at either end
    data = np.arange(10, dtype=F32)
    add("argmax", "last", {"data": data}, {"max_idx": np.array(9, dtype=np.int64)}, EXACT)
    add("argmax", "first", {"data": data[::-1].copy()}, {"max_idx": np.array(0, dtype=np.int64)}, EXACT)
    # ties: the first index, as np.argmax
    data = np.array([3.0, -1.0, 7.0, 7.0, 2.0, 7.0], dtype=F32)
    add("argmax", "ties", {"data": data}, {"max_idx": np.array(2, dtype=np.int64)}, EXACT)
    # NaN: the first NaN, as np.argmax
    data = np.array([3.0, np.nan, 7.0, np.nan], dtype=F32)
    add("argmax", "nan", {"data": data}, {"max_idx": np.array(1, dtype=np.int64)}, EXACT)
    data = np.full(8, -np.inf, dtype=F32)
    add("reduce_max", "all -inf", {"data": data}, {"max_val": np.array(-np.inf, dtype=F32)}, EXACT)

    # NaN / inf propagation (NumPy semantics)
    specials = {
        "nan middle": np.array([1.0, 5.0, np.nan, 2.0, -3.0], dtype=F32),
        "nan first": np.array([np.nan, 1.0, 2.0], dtype=F32),
        "nan last": np.array([1.0, 2.0, np.nan], dtype=F32),
        "+inf": np.array([1.0, np.inf, 2.0], dtype=F32),
        "-inf": np.array([-np.inf, -1.0, -2.0], dtype=F32),
        "+inf,-inf": np.array([np.inf, 1.0, -np.inf], dtype=F32),
    }
    with np.errstate(all="ignore"):
        for label, data in specials.items():
            add("reduce_max", label, {"data": data}, {"max_val": np.array(np.max(data), dtype=F32)}, EXACT)
            add("reduce_sum", label, {"data": data},
                {"sum": np.array(np.sum(data.astype(F64)), dtype=F32)}, REDUCTION)

    # f64 stays f64
    data = randn(rng_for("reduce64"), (127,), F64)
    add("reduce_sum", "f64 n=127", {"data": data}, {"sum": np.array(data.sum(), dtype=F64)}, (1e-12, 1e-12))

    for rows, cols in [(1, 1), (3, 5), (17, 1), (1, 127), (40, 33)]:
        r = rng_for("row_sums", rows, cols)
        m = randn(r, (rows, cols))
        add("row_sums", "%dx%d" % (rows, cols), {"matrix": m},
            {"row_sums": m.astype(F64).sum(axis=1).astype(F32)}, REDUCTION)


def define_reduce_ops():
    cases = [(1, (1, 1)), (3, (3, 5)), (17, (17, 1)), (127, (1, 127)), (40, (40, 33))]
    for n, (rows, cols) in cases:
        r = rng_for("reduce_ops", n, rows, cols)
        # magnitudes near 1 keep the product finite and away from 0
        data = (r.choice([-1.0, 1.0], n) * r.uniform(0.8, 1.25, n)).astype(F32)
        matrix = randn(r, (rows, cols))
        d64, m64 = data.astype(F64), matrix.astype(F64)
        add("reduce_ops", "n=%d %dx%d" % (n, rows, cols), {"data": data, "matrix": matrix},
            {"min_val": np.array(data.min(), F32),
             "product": np.array(np.prod(d64), F32),
             "min_idx": np.array(np.argmin(data), np.int64),
             "all_positive": np.array(np.all(data > 0)),
             "any_positive": np.array(np.any(data > 0)),
             "col_sums": m64.sum(axis=0).astype(F32),
             "row_max": matrix.max(axis=1),
             "row_argmax": np.argmax(matrix, axis=1).astype(np.int64),
             "row_min_last": matrix.min(axis=-1)},
            {"min_val": EXACT, "product": REDUCTION, "min_idx": EXACT, "all_positive": EXACT,
             "any_positive": EXACT, "col_sums": REDUCTION, "row_max": EXACT, "row_argmax": EXACT,
             "row_min_last": EXACT})
    data = np.array([2.0, 2.0, 3.0, 4.0], dtype=F32)
    add("reduce_ops", "all positive, ties", {"data": data, "matrix": np.array([[1.0, 5.0, 5.0], [np.nan, 0.0, 1.0]], F32)},
        {"min_val": np.array(2.0, F32), "product": np.array(48.0, F32), "min_idx": np.array(0, np.int64),
         "all_positive": np.array(True), "any_positive": np.array(True),
         "col_sums": np.array([np.nan, 5.0, 6.0], F32), "row_max": np.array([5.0, np.nan], F32),
         "row_argmax": np.array([1, 0], np.int64), "row_min_last": np.array([1.0, np.nan], F32)},
        {"min_val": EXACT, "product": EXACT, "min_idx": EXACT, "all_positive": EXACT,
         "any_positive": EXACT, "col_sums": REDUCTION, "row_max": EXACT, "row_argmax": EXACT,
         "row_min_last": EXACT})


def define_math():
    for n in (1, 7, 127):
        r = rng_for("math", n)
        x = r.uniform(-2.5, 2.5, n).astype(F32)
        y = r.uniform(0.1, 3.0, n).astype(F32)
        a, b = x.astype(F64), y.astype(F64)
        cols = [np.sin(a), np.cos(a), np.tan(a), np.exp(a), np.log(b), np.sqrt(b), 1.0 / np.sqrt(b),
                np.abs(a), np.floor(a), np.ceil(a), np.tanh(a), np.sinh(a), np.cosh(a), b ** a,
                np.minimum(a, b), np.maximum(a, b), np.clip(a, -1.0, 1.0), -a, a / b, a - b]
        add("math_functions", "n=%d" % n, {"x": x, "y": y},
            {"r": np.stack(cols, axis=1).astype(F32)}, (1e-5, 1e-6))
    # IEEE special values, computed by NumPy in f32: NaN propagates through
    # min / max (np.minimum / np.maximum) whichever argument it is
    x = np.array([0.0, -1.0, 80.0, -80.0, np.inf, -np.inf, np.nan, 2.0, np.nan, 0.5], dtype=F32)
    y = np.array([0.0, 1.0, np.inf, np.nan, 0.5, 2.0, 3.0, np.nan, np.inf, -np.inf], dtype=F32)
    with np.errstate(all="ignore"):
        a, b = x, y
        cols = [np.sin(a), np.cos(a), np.tan(a), np.exp(a), np.log(b), np.sqrt(b), F32(1) / np.sqrt(b),
                np.abs(a), np.floor(a), np.ceil(a), np.tanh(a), np.sinh(a), np.cosh(a), np.power(b, a),
                np.minimum(a, b), np.maximum(a, b), np.clip(a, F32(-1), F32(1)), -a, a / b, a - b]
        expected = np.stack(cols, axis=1).astype(F32)
    add("math_functions", "special values", {"x": x, "y": y}, {"r": expected}, (1e-5, 1e-30))


def ieee_min_max(x, y):
    """IEEE 754-2019 minimum and maximum: NaN propagates, -0 < +0 (NumPy
    returns either zero)."""
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    zeros = (x == 0) & (y == 0)
    lo = np.where(zeros, np.where(np.signbit(x) | np.signbit(y), F32(-0.0), F32(0.0)), lo).astype(x.dtype)
    hi = np.where(zeros, np.where(np.signbit(x) & np.signbit(y), F32(-0.0), F32(0.0)), hi).astype(x.dtype)
    return lo, hi


def ieee_expected(x, y):
    """NumPy's (ops, angles) for tests/programs/ieee_edges.zynml; angles
    computed in f64 and rounded once, as every device does."""
    x64, y64 = x.astype(F64), y.astype(F64)
    with np.errstate(all="ignore"):
        ops = np.stack([x + y, x - y, x * y, x / y, np.fmod(x, y), *ieee_min_max(x, y),
                        x / F32(0.0), x / F32(-0.0), np.fmod(x, F32(0.0)), np.fmod(x, F32(3.0)), np.fmod(x, F32(-0.5))], axis=1)
        angles = np.stack([np.arctan2(x64, y64), np.arctan2(x64, -0.0), np.arctan2(-0.0, y64),
                           np.full_like(x64, np.arctan2(-0.0, -0.0)), np.power(x64, y64)], axis=1).astype(F32)
    return {"ops": ops, "angles": angles}


def define_ieee_edges():
    special = [0.0, -0.0, 1.0, -1.0, 2.5, -7.5, 1e10, 3.0, 1e-40, np.inf, -np.inf, np.nan]
    xs, ys = np.meshgrid(np.array(special, F32), np.array(special, F32), indexing="ij")
    x, y = xs.ravel(), ys.ravel()
    add("ieee_edges", "specials", {"x": x, "y": y}, ieee_expected(x, y), {"ops": BITS, "angles": BITS})
    # fmod is exact however far apart the operands are
    r = rng_for("ieee_edges")
    x = (r.choice([-1.0, 1.0], 144) * 10.0 ** r.uniform(-30, 30, 144)).astype(F32)
    y = (r.choice([-1.0, 1.0], 144) * 10.0 ** r.uniform(-30, 30, 144)).astype(F32)
    add("ieee_edges", "wide magnitudes", {"x": x, "y": y}, ieee_expected(x, y), {"ops": BITS, "angles": ELEMENTWISE})


def define_host():
    for n in (1, 5, 33):
        x = randn(rng_for("host", n), (n,))
        x64 = x.astype(F64)
        add("host_basics", "n=%d" % n, {"x": x},
            {"y": (x64 * 2 + 1).astype(F32), "z": ((x64 * 2 + 1) * 3).astype(F32)}, ELEMENTWISE,
            stdout_has=["3.0 b 7 [0, 1, 4] 3", "shape: [%d] %d" % (n, n), "10.0 100.0 2.5 0.1",
                        "3 1024 true"])

    r = rng_for("kernel_reuse")
    a, b, c = randn(r, (3,)), randn(r, (17,)), randn(r, (5,), F64)
    A, B = randn(r, (7, 4)), randn(r, (4, 9))
    A64, B64 = A.astype(F64), B.astype(F64)
    add("kernel_reuse", "mixed shapes", {"a": a, "b": b, "c": c, "A": A, "B": B},
        {"aa": (a.astype(F64) * 3).astype(F32), "bb": (b.astype(F64) * 3).astype(F32), "cc": c * 3,
         "aa2": (a.astype(F64) * 3).astype(F32), "AB": (A64 @ B64).astype(F32),
         "BtAt": (B64.T @ A64.T).astype(F32), "AAt": (A64 @ A64.T).astype(F32)},
        {"aa": ELEMENTWISE, "bb": ELEMENTWISE, "cc": (1e-12, 0.0), "aa2": ELEMENTWISE,
         "AB": MATMUL, "BtAt": MATMUL, "AAt": MATMUL})

    for vocab, dim, n in [(1, 1, 1), (10, 4, 7), (50, 17, 33)]:
        r = rng_for("gather", vocab, dim, n)
        table = randn(r, (vocab, dim))
        ids = r.integers(0, vocab, n).astype(np.int64)
        add("gather", "vocab%d dim%d n%d" % (vocab, dim, n), {"table": table, "ids": ids},
            {"embedded": table[ids]}, EXACT)


    # Host functions over elements, recursion, integer arithmetic: their
    # results computed here as the interpreter computes them (f64 floats,
    # wrapping i64), bit for bit.
    for n, (r, c) in [(1, (3, 1)), (33, (5, 7)), (200, (4, 64))]:
        rg = rng_for("host_loops", n)
        x = randn(rg, (n,))
        m = randn(rg, (r, c), F64)
        add("host_loops", "n=%d m=%dx%d" % (n, r, c), {"x": x, "m": m},
            {"y": np.cumsum(x, dtype=F32), "sums": ref_row_sums(m, 3, 1.5)}, EXACT,
            stdout_check=lambda out, x=x: check_host_loops(out, x))


def ref_row_sums(m, k, limit):
    sums = np.zeros(3, F64)
    for i in range(min(m.shape[0], k)):
        s = 0.0
        for v in m[i]:
            if v >= -limit:
                s += float(v)
        sums[i] = s
    return sums


def wrap64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def check_host_loops(out, x):
    def ema(alpha):
        s = 0.0
        for v in x:
            s = alpha * float(v) + (1.0 - alpha) * s
        return s

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def mix(n):
        h = 1469598103934665603
        for i in range(0, n, 3):
            h = wrap64(wrap64(h * 1099511628211) + i // 2 - i % 5)
        return h

    def collatz(n):
        steps = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1
        return steps

    def math_mix(a, b):
        return math.sqrt(abs(a)) + math.exp(-a * a) + min(a, 0.5) + max(b, 2) + float(b) / 3.0 + a ** 2.0

    lines = out.splitlines()
    want = []
    for rep in range(3):
        want.append("ema %r" % ema(0.25))
        want.append("fib %d gcd %d mix %d" % (fib(20), math.gcd(1071 * rep + 462, 462), mix(100 + rep)))
        want.append("collatz %d math %r" % (collatz(27 + rep), math_mix(1.5 - rep, rep)))
    want.append("prefix %r" % float(np.max(np.cumsum(x, dtype=F32))))
    want.append("rows 3")
    for w, line in zip(want, lines):
        if w.startswith("prefix"):
            got = float(line.split()[1])  # printed as f32: its shortest digits
            if np.float32(got) != np.max(np.cumsum(x, dtype=F32)):
                raise AssertionError("printed %r, expected %r" % (line, w))
        elif line != w:
            raise AssertionError("printed %r, expected %r" % (line, w))
    if len(lines) < len(want):
        raise AssertionError("printed %d lines, expected %d" % (len(lines), len(want)))


def ref_scatter(table, grad, ids, values, bins=10):
    table_grad = np.zeros(table.shape, F64)
    np.add.at(table_grad, ids, grad.astype(F64))
    b = np.minimum((values * F32(bins)).astype(np.int64), bins - 1)
    counts = np.bincount(b, minlength=bins).astype(np.int64)
    bin_max = np.zeros(bins, F32)
    np.maximum.at(bin_max, b, values)
    return {"table_grad": table_grad.astype(F32), "counts": counts, "bin_max": bin_max}


def any_order_sum_atol(table_shape, grad, ids):
    """Per element, the bound on a float32 sum of k terms taken in any order:
    (k - 1) * 2^-24 * sum |term| (atomic adds meet in no fixed order)."""
    k = np.zeros(table_shape, F64)
    np.add.at(k, ids, np.ones(grad.shape, F64))
    magnitude = np.zeros(table_shape, F64)
    np.add.at(magnitude, ids, np.abs(grad.astype(F64)))
    return np.maximum(k - 1, 0) * 2.0 ** -24 * magnitude + 1e-6


def define_scatter():
    # Few rows and many ids: iterations meet at the same elements. The sums
    # run in any order, so they agree with float64 to that order's rounding.
    for vocab, dim, n, m in [(1, 1, 1, 1), (7, 5, 100, 33), (3, 17, 1000, 1000), (50, 64, 3000, 20000)]:
        r = rng_for("scatter", vocab, dim, n, m)
        table = randn(r, (vocab, dim))
        grad = randn(r, (n, dim))
        ids = r.integers(0, vocab, n).astype(np.int64)
        values = r.random(m).astype(F32)
        add("scatter", "vocab%d dim%d n%d m%d" % (vocab, dim, n, m),
            {"table": table, "grad": grad, "ids": ids, "values": values},
            ref_scatter(table, grad, ids, values),
            {"table_grad": (1e-6, any_order_sum_atol(table.shape, grad, ids)),
             "counts": EXACT, "bin_max": EXACT})


def define_matrix():
    for M, K, N in [(1, 1, 1), (3, 5, 7), (17, 1, 9), (1, 31, 1), (16, 16, 16), (33, 60, 17), (60, 60, 60)]:
        r = rng_for("matmul", M, K, N)
        A, B = randn(r, (M, K)), randn(r, (K, N))
        C = (A.astype(F64) @ B.astype(F64)).astype(F32)
        add("matmul", "%dx%dx%d" % (M, K, N), {"A": A, "B": B}, {"C": C}, MATMUL)
    r = rng_for("matmul-ref")
    A, B = randn(r, (9, 13)), randn(r, (13, 5))
    add("matmul", "9x13x5,--device cpu:reference", {"A": A, "B": B},
        {"C": (A.astype(F64) @ B.astype(F64)).astype(F32)}, MATMUL, args=["--device", "cpu:reference"])
    A, B = randn(r, (9, 13), F64), randn(r, (13, 5), F64)
    add("matmul", "f64 9x13x5", {"A": A, "B": B}, {"C": A @ B}, (1e-12, 1e-12))

    for batch, M, K, N in [(1, 1, 1, 1), (1, 3, 5, 7), (3, 17, 4, 9), (2, 16, 16, 16), (5, 7, 33, 3)]:
        r = rng_for("bmm", batch, M, K, N)
        A, B = randn(r, (batch, M, K)), randn(r, (batch, K, N))
        C = np.einsum("bik,bkj->bij", A.astype(F64), B.astype(F64)).astype(F32)
        add("batched_matmul", "%dx%dx%dx%d" % (batch, M, K, N), {"A": A, "B": B}, {"C": C}, MATMUL)


def define_conv():
    # (batch, in_c, out_c, in_h, in_w, kh, kw, stride, padding)
    for shape in [(1, 1, 1, 5, 5, 3, 3, 1, 0),
                  (1, 1, 1, 1, 1, 1, 1, 1, 0),
                  (2, 3, 4, 7, 9, 3, 3, 1, 1),
                  (1, 2, 3, 8, 8, 3, 3, 2, 1),
                  (3, 2, 5, 9, 6, 2, 3, 2, 2),
                  (2, 3, 2, 17, 11, 5, 5, 3, 2),
                  (1, 1, 2, 3, 3, 3, 3, 1, 2)]:
        batch, ic, oc, ih, iw, kh, kw, stride, padding = shape
        r = rng_for("conv2d", *shape)
        inp = randn(r, (batch, ic, ih, iw))
        kern = randn(r, (oc, ic, kh, kw))
        bias = randn(r, (oc,))
        params = np.array([stride, padding], dtype=np.int64)
        label = "b%d ic%d oc%d %dx%d k%dx%d s%d p%d" % shape
        add("conv2d", label, {"input": inp, "kernel": kern, "bias": bias, "params": params},
            {"output": ref_conv2d(inp, kern, bias, stride, padding)}, MATMUL)

    for batch, ch, ih, iw, kh, kw in [(1, 1, 3, 3, 3, 3), (1, 1, 1, 1, 1, 1), (2, 3, 7, 9, 3, 3),
                                      (1, 4, 17, 5, 2, 5), (3, 2, 8, 8, 1, 1)]:
        r = rng_for("dw", batch, ch, ih, iw, kh, kw)
        inp = randn(r, (batch, ch, ih, iw))
        kern = randn(r, (ch, kh, kw))
        add("conv2d_depthwise", "b%d c%d %dx%d k%dx%d" % (batch, ch, ih, iw, kh, kw),
            {"input": inp, "kernel": kern}, {"output": ref_conv2d_depthwise(inp, kern)}, MATMUL)


def make_mask(r, seq, kind):
    if kind == "causal":
        return np.tril(np.ones((seq, seq), dtype=bool))
    if kind == "full":
        return np.ones((seq, seq), dtype=bool)
    # random, but every row keeps at least one key (its diagonal)
    m = r.random((seq, seq)) < 0.6
    np.fill_diagonal(m, True)
    return m


def define_attention():
    for batch, heads, seq, hd, kind in [(1, 1, 1, 1, "full"), (1, 1, 3, 4, "causal"),
                                        (2, 3, 17, 8, "random"), (1, 2, 40, 16, "causal"),
                                        (3, 1, 9, 5, "full")]:
        r = rng_for("attention", batch, heads, seq, hd, kind)
        Q, K, V = (randn(r, (batch, heads, seq, hd)) for _ in range(3))
        mask = make_mask(r, seq, kind)
        add("attention", "b%d h%d s%d d%d %s" % (batch, heads, seq, hd, kind),
            {"Q": Q, "K": K, "V": V, "mask": mask}, {"attn": ref_attention(Q, K, V, mask)}, MATMUL)

    for batch, heads, seq, hd, kind in [(1, 1, 1, 1, "full"), (2, 3, 17, 8, "random"),
                                        (1, 2, 40, 16, "causal")]:
        r = rng_for("attention_typed", batch, heads, seq, hd, kind)
        Q, K, V = (randn(r, (batch, heads, seq, hd)) for _ in range(3))
        mask = make_mask(r, seq, kind)
        add("attention_typed", "b%d h%d s%d d%d %s" % (batch, heads, seq, hd, kind),
            {"Q": Q, "K": K, "V": V, "mask": mask},
            {"attn": ref_attention(Q, K, V, mask), "flash": ref_attention(Q, K, V)}, MATMUL)

    for program, shapes in [
        ("flash_attention", [(1, 1, 1, 4), (1, 2, 3, 8), (2, 2, 17, 16), (1, 1, 64, 8),
                             (1, 2, 70, 8), (2, 1, 40, 5)]),
        ("flash_attention_seed", [(1, 1, 64, 4), (2, 2, 128, 8)]),
        ("flash_attention_b16", [(1, 1, 1, 4), (1, 1, 16, 8), (2, 2, 17, 16), (1, 3, 33, 8),
                                 (2, 1, 40, 5), (1, 1, 48, 4)]),
    ]:
        for batch, heads, seq, hd in shapes:
            r = rng_for(program, batch, heads, seq, hd)
            Q, K, V = (randn(r, (batch, heads, seq, hd)) for _ in range(3))
            add(program, "b%d h%d s%d d%d" % (batch, heads, seq, hd),
                {"Q": Q, "K": K, "V": V}, {"attn": ref_attention(Q, K, V)}, MATMUL)


def define_fused():
    for n in VECTOR_SIZES:
        r = rng_for("softmax", n)
        x = randn(r, (n,), scale=3.0)
        add("softmax", "n=%d" % n, {"logits": x}, {"probs": ref_softmax(x)}, REDUCTION)
    x = np.array([1000.0, 999.0, -1000.0, 0.0], dtype=F32)   # needs the max shift
    add("softmax", "large", {"logits": x}, {"probs": ref_softmax(x)}, REDUCTION)
    x = np.array([1.0, -np.inf, 2.0], dtype=F32)
    add("softmax", "-inf entry", {"logits": x}, {"probs": ref_softmax(x)}, REDUCTION)

    for rows, cols in [(1, 1), (3, 5), (17, 1), (1, 127), (40, 33)]:
        r = rng_for("softmax_rows", rows, cols)
        x = randn(r, (rows, cols), scale=3.0)
        add("softmax_rows", "%dx%d" % (rows, cols), {"logits": x}, {"probs": ref_softmax(x, axis=1)},
            REDUCTION)
    x = np.array([[1000.0, 999.0, 0.0], [-1000.0, -1001.0, -1002.0]], dtype=F32)
    add("softmax_rows", "large", {"logits": x}, {"probs": ref_softmax(x, axis=1)}, REDUCTION)

    # The same as blocks of one step each, which fusion runs as two kernels.
    for rows, cols in [(1, 1), (3, 5), (17, 1), (1, 127), (40, 33)]:
        r = rng_for("softmax_blocks", rows, cols)
        x = randn(r, (rows, cols), scale=3.0)
        x64 = x.astype(F64)
        normed = (x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-6)).astype(F32)
        add("softmax_blocks", "%dx%d" % (rows, cols), {"logits": x}, {"probs": ref_softmax(x, axis=1), "normed": normed},
            REDUCTION)

    for batch, hidden in [(1, 1), (1, 3), (3, 17), (5, 127), (2, 64)]:
        r = rng_for("layer_norm", batch, hidden)
        x = randn(r, (batch, hidden), scale=2.0) + F32(0.5)
        gamma = (1.0 + 0.1 * randn(r, (hidden,))).astype(F32)
        beta = (0.1 * randn(r, (hidden,))).astype(F32)
        add("layer_norm", "%dx%d" % (batch, hidden), {"x": x, "gamma": gamma, "beta": beta},
            {"normalized": ref_layer_norm(x, gamma, beta, 1e-5)}, REDUCTION)

    for batch, heads, seq, hd in [(1, 1, 1, 2), (1, 2, 3, 4), (2, 3, 17, 8), (1, 1, 5, 64), (3, 2, 7, 6)]:
        r = rng_for("rope", batch, heads, seq, hd)
        x = randn(r, (batch, heads, seq, hd))
        angles = r.random((seq, hd // 2)) * 2 * np.pi
        cos_cache, sin_cache = np.cos(angles).astype(F32), np.sin(angles).astype(F32)
        add("rope", "b%d h%d s%d d%d" % (batch, heads, seq, hd),
            {"x": x, "cos_cache": cos_cache, "sin_cache": sin_cache},
            {"rotated": ref_rope(x, cos_cache, sin_cache)}, ELEMENTWISE)


def define_devices():
    for rows, cols in [(1, 1), (3, 5), (17, 4)]:
        r = rng_for("device", rows, cols)
        x = randn(r, (rows, cols))
        x64 = x.astype(F64)
        add("device", "%dx%d" % (rows, cols), {"x": x},
            {"cpu_result": ref_relu(x), "auto_result": (x64 @ x64.T).astype(F32)},
            {"cpu_result": ELEMENTWISE, "auto_result": MATMUL},
            stdout_has=["first device: cpu cpu", "cpu_result on: cpu"])
        add("device_config", "%dx%d" % (rows, cols), {"x": x}, {"doubled": (x64 * 2).astype(F32)},
            ELEMENTWISE, stdout_has=["doubled on: cpu"])

    def check_any(case, tmp):
        # await any: the first completed of x + 1 and x + 2, with its index
        x64 = case.inputs["x"].astype(F64)
        index = load_output(tmp, "first_index")
        if index.shape != (1,) or index[0] not in (0, 1):
            raise AssertionError("first_index: %s, expected [0] or [1]" % index)
        compare("first", load_output(tmp, "first"), (x64 + 1 + int(index[0])).astype(F32), ELEMENTWISE)

    for n in (1, 17, 127):
        r = rng_for("async", n)
        x, y = randn(r, (n,)), randn(r, (n,))
        x64, y64 = x.astype(F64), y.astype(F64)
        add("async", "n=%d" % n, {"x": x, "y": y},
            {"result": ref_mul_add(x, y), "relu": ref_relu(x),
             "total": np.array(y64.sum(), dtype=F32), "diff": (x64 - y64).astype(F32),
             "timed": (x64 * 3).astype(F32)},
            {"result": ELEMENTWISE, "relu": ELEMENTWISE, "total": REDUCTION, "diff": ELEMENTWISE,
             "timed": ELEMENTWISE},
            post_check=check_any)  # not repeated: `await any` returns whichever racer finishes first

    for n, (M, K, N) in [(1, (1, 1, 1)), (17, (3, 5, 7)), (127, (33, 17, 20))]:
        r = rng_for("multi_device", n, M, K, N)
        x, A, B = randn(r, (n,)), randn(r, (M, K)), randn(r, (K, N))
        add("multi_device", "n=%d %dx%dx%d" % (n, M, K, N), {"x": x, "A": A, "B": B},
            {"shifted": (x.astype(F64) + 1).astype(F32), "C": (A.astype(F64) @ B.astype(F64)).astype(F32)},
            {"shifted": ELEMENTWISE, "C": MATMUL},
            stdout_has=["data parallel identical: true", "model parallel identical: true"])

    # On a machine with a GPU (run with --device cuda:...): one block split
    # across the GPU and the CPU. Small integers keep every sum exact, so the
    # split result must equal the one-device result bit for bit.
    if DEVICE and DEVICE.startswith("cuda"):
        for n, (M, K, N) in [(1, (1, 1, 1)), (1000, (33, 17, 20)), (4099, (130, 64, 77))]:
            r = rng_for("gpu_and_cpu", n, M, K, N)
            x = r.integers(-8, 8, (n,)).astype(F32)
            A, B = r.integers(-4, 4, (M, K)).astype(F32), r.integers(-4, 4, (K, N)).astype(F32)
            add("gpu_and_cpu", "n=%d %dx%dx%d" % (n, M, K, N), {"x": x, "A": A, "B": B},
                {"shifted": x * 2 + 1, "C": (A.astype(F64) @ B.astype(F64)).astype(F32)},
                {"shifted": ELEMENTWISE, "C": MATMUL},
                stdout_has=["data parallel identical: true", "model parallel identical: true"])

    r = rng_for("async_races")
    x = randn(r, (300,))
    add("async_races", "timeout and any", {"x": x}, {"first": (x.astype(F64) + 1).astype(F32)}, None,
        stdout_has=["timed out: true", "fastest: 1"])

    add("memory_pool", "1GB pool", {}, {}, None,
        stdout_has=["tensor1: [512, 512] cpu", "tensor2: [256, 256] cpu", "pool reset"])

    for rows, cols in [(1, 1), (3, 5), (17, 4)]:
        r = rng_for("memory", rows, cols)
        x = randn(r, (rows, cols))
        add("memory", "%dx%d" % (rows, cols), {"x": x},
            {"copy": x, "back": (x.astype(F64) * 0.5).astype(F32), "mapped": (x.astype(F64) * 2).astype(F32),
             # allocate() makes a tensor of the right shape and dtype; its
             # contents are not compared
             "buffer": np.zeros((rows, cols), F32), "pinned": np.zeros((cols, rows), F32)},
            {"copy": EXACT, "back": ELEMENTWISE, "mapped": ELEMENTWISE, "buffer": "shape", "pinned": "shape"},
            stdout_has=["buffer: [%d, %d] f32 cpu" % (rows, cols), "pinned: [%d, %d] f32 cpu" % (cols, rows)])


# --- the transformer example ------------------------------------------------

TB_NUM_HEADS = 4     # num_heads in examples/transformer_block.zynml
TB_HIDDEN = 64       # hidden_size in examples/transformer_block.zynml
TB_WEIGHTS = ["qkv_proj", "out_proj", "ln1_weight", "ln1_bias", "ffn_up", "ffn_down",
              "ln2_weight", "ln2_bias"]


def ref_transformer_block(x, w):
    """The example's block in NumPy: attention over seq per (batch, head)."""
    x = x.astype(F64)
    w = {k: v.astype(F64) for k, v in w.items()}
    batch, seq, hidden = x.shape
    head_dim = hidden // TB_NUM_HEADS

    def layer_norm(v, gamma, beta):
        mean = v.mean(axis=-1, keepdims=True)
        var = (v * v).mean(axis=-1, keepdims=True) - mean * mean
        return (v - mean) / np.sqrt(var + 1e-6) * gamma + beta

    qkv = x @ w["qkv_proj"]
    q, k, v = np.split(qkv, 3, axis=-1)
    # [batch, seq, heads, head_dim] -> [batch, heads, seq, head_dim]
    q, k, v = (t.reshape(batch, seq, TB_NUM_HEADS, head_dim).transpose(0, 2, 1, 3) for t in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    attn = (p @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    projected = attn @ w["out_proj"]
    normed = layer_norm(x + projected, w["ln1_weight"], w["ln1_bias"])
    up = normed @ w["ffn_up"]
    up = up * 0.5 * (1.0 + np.tanh(0.7978845608 * (up + 0.044715 * up ** 3)))
    ffn = up @ w["ffn_down"]
    return layer_norm(normed + ffn, w["ln2_weight"], w["ln2_bias"])


def define_transformer():
    for batch, seq in [(2, 24), (1, 1), (3, 17), (1, 40)]:
        r = rng_for("transformer", batch, seq)
        x = randn(r, (batch, seq, TB_HIDDEN))
        # expected output depends on the weights, which the program saves:
        # it is computed after the run (see check_transformer)
        add("transformer", "b%d s%d" % (batch, seq), {"x": x}, {}, MATMUL,
            post_check=check_transformer,
            # importing runs the example's top level, but not its main()
            stdout_check=lambda out: check_absent(out, ["output shape:", "checksum:", "device:"]))


def check_transformer(case, tmp):
    weights = {}
    for name in TB_WEIGHTS:
        path = os.path.join(tmp, name + ".npy")
        if not os.path.exists(path):
            raise AssertionError("weight %s.npy was not saved" % name)
        weights[name] = np.load(path)
    h, h3, f = TB_HIDDEN, 3 * TB_HIDDEN, 4 * TB_HIDDEN
    shapes = {"qkv_proj": (h, h3), "out_proj": (h, h), "ln1_weight": (h,), "ln1_bias": (h,),
              "ffn_up": (h, f), "ffn_down": (f, h), "ln2_weight": (h,), "ln2_bias": (h,)}
    for name, shp in shapes.items():
        if weights[name].shape != shp:
            raise AssertionError("weight %s has shape %s, expected %s" % (name, weights[name].shape, shp))
    x = case.inputs["x"]
    expected = ref_transformer_block(x, weights).astype(F32)
    actual = load_output(tmp, "y")
    compare("y", actual, expected, MATMUL)


def check_absent(stdout, texts):
    for t in texts:
        if t in stdout:
            raise AssertionError("stdout has %r" % t)


def check_example(stdout):
    if "output shape: [2, 24, 64]" not in stdout:
        raise AssertionError("stdout lacks 'output shape: [2, 24, 64]'")
    m = re.search(r"^checksum:\s*(\S+)\s*$", stdout, re.M)
    if not m:
        raise AssertionError("stdout lacks a 'checksum: <number>' line")
    try:
        value = float(m.group(1))
    except ValueError:
        raise AssertionError("checksum %r is not a number" % m.group(1))
    if not math.isfinite(value):
        raise AssertionError("checksum %r is not finite" % m.group(1))


def define_example():
    add("../../examples/transformer_block", "example", {}, {}, None, stdout_check=check_example, repeat=True)
    # Its timings vary from run to run; what it computes does not.
    add("../../examples/order_book", "example", {}, {}, None,
        stdout_has=["spread 0.75 bid 99.75 5 updates 1", "spread 0.75 ask 100.5 11 updates 2",
                    "updates 100003 bid qty 100006", "(compiled)"], timed_lines=("latency:",))


def define_static():
    """`check` and `compile --emit ast|cir` accept every program without running it."""
    programs = sorted(f[:-len(".zynml")] for f in os.listdir(HERE) if f.endswith(".zynml"))
    for program in programs + ["../../examples/transformer_block", "../../examples/order_book"]:
        add(program, "static", {}, {}, None, static=True)


STATIC_COMMANDS = [["check"], ["compile", "--emit", "ast"], ["compile", "--emit", "cir"]]


def run_static(zyntax, case):
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="zyntax_prog_") as tmp:
        for sub in STATIC_COMMANDS:
            cmd = [zyntax] + sub + [program_path(case.program)]
            try:
                p = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return False, "timed out: %s" % " ".join(cmd), time.time() - t0
            out = p.stdout.decode("utf-8", "replace")
            err = p.stderr.decode("utf-8", "replace")
            problem = None
            for bad in BAD_OUTPUT:
                if bad in err or bad in out:
                    problem = "output contains %r" % bad
            if p.returncode != 0 and not problem:
                problem = "exit status %d" % p.returncode
            if sub[0] == "compile" and not problem and not out.strip():
                problem = "printed nothing"
            if sub[-1] == "cir" and not problem:
                # the CIR of each kernel: one "kernel NAME: TYPE" header per compute block
                with open(program_path(case.program), encoding="utf-8") as f:
                    blocks = sum(line.split("//")[0].count("compute(") for line in f)
                headers = sum(1 for line in out.splitlines() if line.startswith("kernel "))
                if headers < blocks:
                    problem = "printed the CIR of %d kernels, but the program has %d compute blocks" % (
                        headers, blocks)
            if problem:
                tail = "\n".join((err.strip() or out.strip()).splitlines()[:12])
                return False, "%s\n  command: %s\n  --- zyntax output ---\n  %s" % (
                    problem, " ".join(cmd), tail.replace("\n", "\n  ")), time.time() - t0
    return True, "", time.time() - t0


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def load_output(tmp, stem):
    path = os.path.join(tmp, stem + ".npy")
    if not os.path.exists(path):
        raise AssertionError("output %s.npy was not written" % stem)
    try:
        return np.load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001
        raise AssertionError("output %s.npy cannot be read by NumPy: %s" % (stem, e))


def compare(stem, actual, expected, tol):
    if actual.shape != expected.shape:
        raise AssertionError("%s: shape %s, expected %s" % (stem, actual.shape, expected.shape))
    if actual.dtype != expected.dtype:
        raise AssertionError("%s: dtype %s, expected %s" % (stem, actual.dtype, expected.dtype))
    if tol == "shape":
        return
    try:
        if tol == BITS:
            np.testing.assert_array_equal(actual, expected, err_msg=stem, strict=False)
            sign_differs = (np.signbit(actual) != np.signbit(expected)) & ~np.isnan(expected)
            if sign_differs.any():
                where = np.argwhere(sign_differs)[:8].tolist()
                raise AssertionError("%s: the sign differs at %s: %s, expected %s" % (
                    stem, where, actual[sign_differs][:8], expected[sign_differs][:8]))
        elif tol is None:
            np.testing.assert_array_equal(actual, expected, err_msg=stem, strict=False)
        elif isinstance(tol[1], np.ndarray):
            # A bound per element: report where it is exceeded and by how much.
            rtol, atol = tol
            a, e = actual.astype(F64), expected.astype(F64)
            over = ~(np.abs(a - e) <= atol + rtol * np.abs(e)) & ~(np.isnan(a) & np.isnan(e))
            if over.any():
                where = np.argwhere(over)[:8].tolist()
                raise AssertionError("%s: %d elements outside their bound, at %s: %s, expected %s, bound %s" % (
                    stem, over.sum(), where, a[over][:8], e[over][:8], atol[over][:8]))
        else:
            rtol, atol = tol
            np.testing.assert_allclose(actual.astype(F64), expected.astype(F64), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=stem)
    except AssertionError as e:
        raise AssertionError(summarize(str(e), actual, expected))


def summarize(msg, actual, expected):
    lines = [l for l in msg.strip().splitlines() if l.strip()]
    msg = "\n".join(lines[:12])
    if actual.size <= 12:
        msg += "\n  actual:   %s\n  expected: %s" % (np.array2string(actual.ravel(), precision=7),
                                                      np.array2string(expected.ravel(), precision=7))
    return msg


def program_path(program):
    return os.path.normpath(os.path.join(HERE, program + ".zynml"))


def run_case(zyntax, case):
    """Returns (ok, message, seconds)."""
    if case.static:
        return run_static(zyntax, case)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="zyntax_prog_") as tmp:
        ok, msg = run_in(zyntax, case, tmp)
        if not ok and KEEP_DIR:
            kept = os.path.join(KEEP_DIR, re.sub(r"[^A-Za-z0-9_.=-]+", "_", case.name))
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(tmp, kept)
            msg = msg.replace("<tmp with inputs>", kept)
    return ok, msg, time.time() - t0


def untimed(stdout, timed_lines):
    return "".join(l for l in stdout.splitlines(True) if not l.startswith(timed_lines)) if timed_lines else stdout


def check_deterministic(cmd, tmp, first_stdout, what="second run", why="not deterministic", timed_lines=()):
    """A second run in a copy of the directory gives the same stdout and bitwise the same files."""
    with tempfile.TemporaryDirectory(prefix="zyntax_prog_again_") as again:
        for name in os.listdir(tmp):
            shutil.copy(os.path.join(tmp, name), again)
        p = subprocess.run(cmd, cwd=again, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT_S)
        if p.returncode != 0:
            raise AssertionError("%s: exit status %d" % (what, p.returncode))
        if untimed(p.stdout.decode("utf-8", "replace"), timed_lines) != untimed(first_stdout, timed_lines):
            raise AssertionError("%s printed something else (%s)" % (what, why))
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), "rb") as f1, open(os.path.join(again, name), "rb") as f2:
                if f1.read() != f2.read():
                    raise AssertionError("%s wrote a different %s (%s)" % (what, name, why))


def check_fusion_off(cmd, tmp, first_stdout):
    """With --fusion off the same stdout and files, bit for bit, unless the
    program is not deterministic itself (a second fused run differs too)."""
    try:
        check_deterministic(cmd + ["--fusion", "off"], tmp, first_stdout, "the run with --fusion off", "fusion changed it")
    except AssertionError:
        try:
            check_deterministic(cmd, tmp, first_stdout)
        except AssertionError:
            return  # not deterministic with fusion either: nothing to compare
        raise


def run_in(zyntax, case, tmp):
    """Runs the case in the directory tmp; returns (ok, message)."""
    for stem, arr in case.inputs.items():
        np.save(os.path.join(tmp, stem + ".npy"), arr)
    cmd = [zyntax, "run", program_path(case.program)] + case.args
    if DEVICE and "--device" not in case.args:
        cmd += ["--device", DEVICE]
    if COMPARE_FUSION:
        cmd += ["--explain-fusion"]  # on standard error: what fused, if anything
    if COMPARE_HOST:
        cmd += ["--host", "compiled", "--explain-host"]  # on standard error: what ran compiled, if anything
    try:
        p = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, "timed out after %ds: %s" % (TIMEOUT_S, " ".join(cmd))
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    try:
        for bad in BAD_OUTPUT:
            if bad in err or bad in out:
                raise AssertionError("output contains %r" % bad)
        if p.returncode != 0:
            raise AssertionError("exit status %d" % p.returncode)
        for want in case.stdout_has:
            if want not in out:
                raise AssertionError("stdout lacks %r" % want)
        if case.stdout_check:
            case.stdout_check(out)
        for stem, expected in case.expected.items():
            compare(stem, load_output(tmp, stem), expected, case.tol_for(stem))
        if case.post_check:
            case.post_check(case, tmp)
        if case.repeat:
            check_deterministic(cmd, tmp, out)
        if COMPARE_FUSION and "run as one kernel" in err:
            # Where nothing fused, --fusion off runs the same kernels: nothing to compare.
            check_fusion_off(cmd, tmp, out)
            FUSED_CASES.append(case.name)
        if COMPARE_HOST and "runs compiled" in err:
            # The interpreter gives the same stdout and files, bit for bit.
            check_deterministic(cmd[:-3] + ["--host", "interp"], tmp, out, "the run with --host interp",
                                "compiled host code changed it", case.timed_lines)
            COMPILED_CASES.append(case.name)
    except AssertionError as e:
        detail = str(e)
        tail = (err.strip() or out.strip())
        if tail:
            tail = "\n".join(tail.splitlines()[-15:])
            detail += "\n  --- zyntax output ---\n  " + tail.replace("\n", "\n  ")
        detail += "\n  command: (cd %s && %s)" % ("<tmp with inputs>", " ".join(cmd))
        return False, detail
    except Exception:  # noqa: BLE001 - a bug in this runner
        return False, "runner error:\n" + traceback.format_exc()
    return True, ""


def define_all():
    define_elementwise()
    define_reductions()
    define_reduce_ops()
    define_math()
    define_ieee_edges()
    define_host()
    define_matrix()
    define_scatter()
    define_conv()
    define_attention()
    define_fused()
    define_devices()
    define_transformer()
    define_example()
    define_static()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zyntax", default=DEFAULT_ZYNTAX, help="the zyntax binary (default: build/zyntax)")
    ap.add_argument("-k", action="append", default=[], metavar="SUBSTRING",
                    help="only cases whose name (program[label]) contains SUBSTRING; may repeat")
    ap.add_argument("-j", type=int, default=min(2, os.cpu_count() or 1), help="parallel runs")
    ap.add_argument("-v", action="store_true", help="print passing cases too")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--device", help="run every program with `--device DEVICE` (e.g. cpu:reference)")
    ap.add_argument("--compare-fusion", action="store_true",
                    help="run every case again with --fusion off: the same stdout and files, bit for bit")
    ap.add_argument("--compare-host", action="store_true",
                    help="run every case with --host compiled, and again with --host interp where a function ran "
                         "compiled: the same stdout and files, bit for bit")
    ap.add_argument("--skip-without-device", action="store_true",
                    help="exit 77 (skipped) where `zyntax devices` does not list the --device")
    ap.add_argument("--keep", metavar="DIR", help="copy the directory of each failing case (inputs, outputs) "
                    "into DIR, to rerun the printed command there")
    args = ap.parse_args()
    global KEEP_DIR, DEVICE, COMPARE_FUSION, COMPARE_HOST
    DEVICE = args.device
    COMPARE_FUSION = args.compare_fusion
    COMPARE_HOST = args.compare_host
    if args.keep:
        KEEP_DIR = os.path.abspath(args.keep)
        os.makedirs(KEEP_DIR, exist_ok=True)

    zyntax = os.path.abspath(args.zyntax)
    if not os.access(zyntax, os.X_OK):
        print("error: zyntax binary not found: %s" % zyntax, file=sys.stderr)
        return 2
    if args.skip_without_device and args.device:
        listed = subprocess.run([zyntax, "devices"], stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode()
        if not any(line.split("\t")[0] == args.device for line in listed.splitlines()):
            print("skipped: no device %s here:\n%s" % (args.device, listed))
            return 77
    define_all()
    cases = [c for c in CASES if not args.k or any(k in c.name for k in args.k)]
    if args.list:
        for c in cases:
            print(c.name)
        return 0
    if not cases:
        print("error: no case matches %s" % args.k, file=sys.stderr)
        return 2

    t0 = time.time()
    failures = []
    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        results = pool.map(lambda c: (c, run_case(zyntax, c)), cases)
        for case, (ok, msg, secs) in results:
            if ok:
                if args.v:
                    print("PASS %-55s %6.2fs" % (case.name, secs))
            else:
                failures.append(case)
                print("FAIL %-55s %6.2fs\n  %s" % (case.name, secs, msg.replace("\n", "\n  ")))
            sys.stdout.flush()
    total = time.time() - t0
    print("\n%d of %d cases passed in %.1fs" % (len(cases) - len(failures), len(cases), total))
    if COMPARE_FUSION:
        print("%d cases fused blocks and gave the same bytes with --fusion off" % len(FUSED_CASES))
        if not FUSED_CASES and not args.k:
            print("FAIL: no case fused anything: --compare-fusion compared nothing")
            return 1
    if COMPARE_HOST:
        print("%d cases ran host functions compiled and gave the same bytes interpreted" % len(COMPILED_CASES))
        if not COMPILED_CASES and not args.k:
            print("FAIL: no case ran a compiled host function: --compare-host compared nothing")
            return 1
    if failures:
        progs = sorted(set(c.program for c in failures))
        print("failing programs: %s" % ", ".join(progs))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
