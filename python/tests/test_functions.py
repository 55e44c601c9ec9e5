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


HOST_FUNCTIONS = """
def ema(prices: tensor[n, f64], alpha: float) -> float {
    var s = prices[0]
    for i in 1..n {
        s = alpha * prices[i] + (1.0 - alpha) * s
    }
    return s
}

def collatz(start: int) -> int {
    var n = start
    var steps = 0
    while n != 1 {
        if n % 2 == 0 {
            n = n / 2
        } else {
            n = 3 * n + 1
        }
        steps += 1
    }
    return steps
}

def at(t: tensor[n, f64], i: int) -> float {
    return t[i]
}
"""


def _until_direct(f, *args):
    """Calls f until its calls go straight into compiled code (the tier
    compiles in the background, taking as long as the machine takes)."""
    import time
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        r = f(*args)
        if f.last_tier == "direct":
            return r
        time.sleep(0.001)
    raise AssertionError("%s never went straight into compiled code (last: %r)" % (f.name, f.last_tier))


def test_compiled_host_functions_are_called_directly_with_the_interpreters_results():
    prog = zyntax.compile(HOST_FUNCTIONS, device="cpu", name="host.zynml")
    rng = np.random.default_rng(3)
    p = rng.standard_normal(101)
    interpreted = prog.ema(p, 0.25)
    assert prog.ema.last_tier == "interpreted" and type(interpreted) is float
    assert _until_direct(prog.ema, p, 0.25) == interpreted
    for n in (1, 2, 31, 1000):
        q = rng.standard_normal(n)
        want = q[0]
        for v in q[1:]:
            want = 0.25 * v + (1.0 - 0.25) * want
        assert prog.ema(q, 0.25) == want  # bit for bit: the same operations in the same order
        assert prog.ema.last_tier == "direct"
    # Torch tensors and zyntax arrays take the same code.
    assert prog.ema(torch.from_numpy(p), 0.25).item() == interpreted
    assert prog.ema(zyntax.Array.from_dlpack(p, prog.device), 0.25) == interpreted
    assert _until_direct(prog.collatz, 27) == 111
    steps = [prog.collatz(k) for k in range(1, 40)]
    assert prog.collatz.last_tier == "direct"
    assert all(type(s) is int for s in steps) and steps[26] == 111


def test_errors_of_direct_calls_read_as_the_interpreters():
    prog = zyntax.compile(HOST_FUNCTIONS, device="cpu", name="host.zynml")
    t = np.arange(4.0)
    with pytest.raises(zyntax.ComputeError) as interpreted:
        prog.at(t, 9)
    assert "host.zynml:25:14: error: index 9 is out of range for axis 0 of a tensor of shape [4]" in str(interpreted.value)
    assert _until_direct(prog.at, t, 1) == 1.0
    with pytest.raises(zyntax.ComputeError) as direct:
        prog.at(t, 9)
    assert str(direct.value) == str(interpreted.value)
    with pytest.raises(zyntax.ComputeError, match="must be a tensor of f64"):
        prog.at(t.astype(np.float32), 1)
    assert prog.at(t, -1) == 3.0
