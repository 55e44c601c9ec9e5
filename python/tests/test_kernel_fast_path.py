"""A kernel call's fast path (_zyntax.KernelCall: bound once per signature,
run on the arguments' own memory) against the general path it stands in for
(forced with device=) on random inputs of many shapes and element types,
and what it hands to the general path: positional host values, strided and
big-endian arrays, tensors that need a gradient, bf16, wrong arguments."""
import threading
import warnings

import numpy as np
import pytest
import torch
from conftest import SCALE_ADD

import zyntax

SOURCE = SCALE_ADD + """
def shift(ids: tensor[n, i64], by: int) {
    return compute(ids) {
        @kernel elementwise
        for i in 0..n:
            out[i] = ids[i] + by
    }
}

def halve(x: tensor[n, f64]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i] * 0.5
    }
}
"""


@pytest.fixture(scope="module")
def prog():
    return zyntax.compile(SOURCE, device="cpu")


SHAPES = [(1, 1), (1, 7), (3, 5), (16, 16), (33, 129), (257, 3), (300, 301)]


@pytest.mark.parametrize("shape", SHAPES)
def test_fast_path_agrees_with_the_general_path(prog, shape):
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    x = rng.standard_normal(shape, dtype=np.float32)
    y = rng.standard_normal(shape, dtype=np.float32)
    fast = prog.scale_add(x, y, by=1.5)
    general = prog.scale_add(x, y, by=1.5, device="cpu")
    assert type(fast) is np.ndarray and fast.dtype == np.float32 and fast.shape == shape
    np.testing.assert_array_equal(fast, general)
    np.testing.assert_allclose(fast, x * 1.5 + y, rtol=1e-6, atol=1e-6)
    # The same kernel again with other sizes and values: a binding of its own each.
    np.testing.assert_allclose(prog.scale_add(y, x, by=-2), y * -2 + x, rtol=1e-6, atol=1e-6)


def test_every_kind_of_argument(prog):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    want = x * 2 + x
    np.testing.assert_array_equal(prog.scale_add(x, x, by=2.0), want)
    # Read-only arrays are read in place too.
    ro = x.copy()
    ro.setflags(write=False)
    np.testing.assert_array_equal(prog.scale_add(ro, ro, by=2.0), want)
    # zyntax arrays, and a result that is one.
    z = zyntax.Array.from_dlpack(x.copy(), prog.device)
    np.testing.assert_array_equal(prog.scale_add(z, x, by=2.0), want)
    # Torch tensors in, a torch tensor out.
    t = torch.from_numpy(x)
    out = prog.scale_add(t, t, by=2.0)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_array_equal(out.numpy(), want)
    # Integers stay exact over 64 bits.
    ids = np.array([2**62, -5, 0], dtype=np.int64)
    np.testing.assert_array_equal(prog.shift(ids, by=2**40), ids + 2**40)
    np.testing.assert_array_equal(prog.shift(ids, by=3.0), ids + 3)
    # Zero elements.
    assert prog.halve(np.zeros(0)).shape == (0,)


def test_what_the_general_path_takes(prog):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    want = x * 2 + x
    # Host values positionally; NumPy scalars as host values.
    np.testing.assert_array_equal(prog.scale_add(x, x, 2.0), want)
    np.testing.assert_array_equal(prog.scale_add(x, x, by=np.float32(2.0)), want)
    # Strided and big-endian arrays are copied first.
    wide = np.zeros((3, 8), dtype=np.float32)
    wide[:, ::2] = x
    np.testing.assert_array_equal(prog.scale_add(wide[:, ::2], x, by=2.0), want)
    np.testing.assert_array_equal(prog.halve(np.arange(4, dtype=">f8")), np.arange(4) * 0.5)
    # Python lists.
    np.testing.assert_array_equal(prog.halve([1.0, 2.0]), [0.5, 1.0])
    # A tensor that needs a gradient: a result, and a warning that none flows.
    t = torch.from_numpy(x).clone().requires_grad_()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = prog.scale_add(t, t, by=2.0)
    assert any("no backward" in str(w.message) for w in seen)
    np.testing.assert_array_equal(out.detach().numpy(), want)


def test_errors_are_the_general_paths(prog):
    x = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(zyntax.ShapeError, match=r"axis 1 must be m = 3"):
        prog.scale_add(x, np.ones((2, 4), dtype=np.float32), by=1.0)
    with pytest.raises(zyntax.ShapeError, match=r"argument x is f64 \[2, 3\], but the kernel takes tensor\[n, m, f32\]"):
        prog.scale_add(x.astype(np.float64), x, by=1.0)
    with pytest.raises(zyntax.ShapeError, match=r"needs the host value 'by'"):
        prog.scale_add(x, x)
    with pytest.raises(zyntax.ShapeError, match=r"reads no host value 'bye'"):
        prog.scale_add(x, x, by=1.0, bye=2.0)
    with pytest.raises(zyntax.ShapeError, match=r"is an integer, not 1.5"):
        prog.shift(np.zeros(3, dtype=np.int64), by=1.5)
    # And the next call works.
    np.testing.assert_array_equal(prog.scale_add(x, x, by=1.0), x * 2)


def test_calls_from_several_threads(prog):
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((n, 33), dtype=np.float32) for n in (1, 5, 64, 700)]
    failures = []

    def work(k):
        for i in range(200):
            x = inputs[(i + k) % len(inputs)]
            if not np.array_equal(prog.scale_add(x, x, by=float(k)), x * k + x):
                failures.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
