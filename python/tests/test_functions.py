"""A program's functions called from Python with their host code: blocks
fused as `zyntax run` fuses them, host statements between them, on every
device, against NumPy; and the errors users meet."""
import numpy as np
import pytest
import torch

import zyntax
from conftest import devices_under_test

SOURCE = """
def softmax_rows(x: tensor[n, m, f32], temperature: f32) {
    let mx = compute(x) {
        @kernel reduce(max, axis=1)
        for i in 0..n, j in 0..m:
            yield x[i, j]
    }
    let inv = 1.0 / temperature
    let e = compute(x, mx) {
        @kernel elementwise
        for i in 0..n, j in 0..m:
            out[i, j] = exp((x[i, j] - mx[i]) * inv)
    }
    let s = compute(e) {
        @kernel reduce(+, axis=1)
        for i in 0..n, j in 0..m:
            yield e[i, j]
    }
    let y = compute(e, s) {
        @kernel elementwise
        for i in 0..n, j in 0..m:
            out[i, j] = e[i, j] / s[i]
    }
    return y
}

def stats(x: tensor[n, f64]) {
    return (x * 2.0, sum(x), len(x))
}

def gather(x: tensor[n, f32], at: int) {
    return compute(x) {
        for i in 0..n:
            out[i] = x[(i + at) % 8]
    }
}

print("the top level does not run")
"""

DEVICES = devices_under_test(d["id"] for d in zyntax.devices())


@pytest.fixture(scope="module", params=DEVICES)
def prog(request):
    return zyntax.compile(SOURCE, device=request.param, name="functions.zynml")


def test_the_functions_are_listed(prog):
    assert prog.functions == ["softmax_rows", "stats", "gather"]
    assert prog.softmax_rows.signature == "softmax_rows(x: tensor[n, m, f32], temperature: f32)"


@pytest.mark.parametrize("shape", [(1, 1), (5, 9), (33, 17)])
def test_a_softmax_of_four_blocks_against_numpy(prog, shape, capfd):
    x = np.random.default_rng(shape[0]).standard_normal(shape).astype(np.float32)
    z = (x.astype(np.float64) - x.max(axis=1, keepdims=True)) * 2.0
    want = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(prog.softmax_rows(x, 0.5), want, rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(prog.function("softmax_rows")(x, temperature=0.5), want, rtol=2e-6, atol=2e-7)
    y = prog.softmax_rows(torch.from_numpy(x), 0.5)
    assert isinstance(y, torch.Tensor)
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-6, atol=2e-7)
    assert "top level" not in capfd.readouterr().out


def test_tuples_and_numbers_come_back(prog):
    doubled, total, n = prog.stats(np.array([1.0, 2.0, 4.0]))
    np.testing.assert_array_equal(doubled, [2.0, 4.0, 8.0])
    assert total == 7.0 and n == 3


def test_errors_say_what_and_where():
    prog = zyntax.compile(SOURCE, device="cpu", name="functions.zynml")
    with pytest.raises(zyntax.ProgramError, match="no function 'softmax_row' .did you mean 'softmax_rows'"):
        prog.function("softmax_row")
    with pytest.raises(zyntax.ComputeError, match=r"functions.zynml:34:22: error: index out of bounds: x\[4\]: axis 0 has size 4"):
        prog.function("gather")(np.ones(4, np.float32), 1)
    np.testing.assert_array_equal(prog.function("gather")(np.arange(8, dtype=np.float32), 3)[:2], [3, 4])
