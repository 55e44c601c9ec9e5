"""A program's functions called from Python with their host code: blocks
fused as `zyntax run` fuses them, host statements between them, on every
device, against NumPy; and the errors users meet."""
import os

import numpy as np
import pytest
import torch

import zyntax
from conftest import devices_under_test

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "api", "functions.zynml")


DEVICES = devices_under_test(d["id"] for d in zyntax.devices())


@pytest.fixture(scope="module", params=DEVICES)
def prog(request):
    return zyntax.load(PROGRAM, device=request.param)


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
    prog = zyntax.load(PROGRAM, device="cpu")
    with pytest.raises(zyntax.ProgramError, match="no function 'softmax_row' .did you mean 'softmax_rows'"):
        prog.function("softmax_row")
    with pytest.raises(zyntax.ComputeError, match=r"functions.zynml:36:22: error: index out of bounds: x\[4\]: axis 0 has size 4"):
        prog.function("gather")(np.ones(4, np.float32), 1)
    np.testing.assert_array_equal(prog.function("gather")(np.arange(8, dtype=np.float32), 3)[:2], [3, 4])
