"""A user's own ZynML kernels called from Python on NumPy arrays and torch
tensors, on every device, against NumPy; and the errors users meet."""
import numpy as np
import pytest
import torch

import zyntax
from conftest import devices_under_test

SOURCE = """
def softmax(x: tensor[n, m, f32], temperature: f32) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            let mut top = x[i, 0]
            for j in 0..m:
                top = max(top, x[i, j])
            let mut total = 0.0
            for j in 0..m:
                total += exp((x[i, j] - top) / temperature)
            for j in 0..m:
                out[i, j] = exp((x[i, j] - top) / temperature) / total
    }
}

def axpy(a: tensor[n, f64], b: tensor[n, f64]) {
    return compute(a, b) {
        @kernel elementwise
        for i in 0..n:
            out[i] = 2.5 * a[i] + b[i]
    }
}

def shift(ids: tensor[n, i64], by: i64) {
    return compute(ids) {
        @kernel elementwise
        for i in 0..n:
            out[i] = ids[i] + by
    }
}

def row_sums(x: tensor[n, m, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            let mut total = 0.0
            for j in 0..m:
                total += x[i, j]
            out[i] = total
    }
}
"""

DEVICES = devices_under_test(d["id"] for d in zyntax.devices())  # every device here, or ZYNTAX_TEST_DEVICES
SHAPES = [(1, 1), (3, 7), (17, 33), (64, 5)]


def np_softmax(x, t):
    z = (x.astype(np.float64) - x.max(axis=1, keepdims=True)) / t
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module", params=DEVICES)
def prog(request):
    return zyntax.compile(SOURCE, device=request.param, name="kernels.zynml")


def test_the_kernels_are_listed(prog):
    assert prog.kernels == ["softmax", "axpy", "shift", "row_sums"]
    assert prog.softmax.signature == "softmax(x: tensor[n, m, f32], temperature: float)"


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_against_numpy(prog, shape):
    x = np.random.default_rng(sum(shape)).normal(0, 2, shape).astype(np.float32)
    y = prog.softmax(x, temperature=0.7)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == shape
    np.testing.assert_allclose(y, np_softmax(x, 0.7), rtol=1e-5, atol=2e-7)


@pytest.mark.parametrize("shape", SHAPES)
def test_reduction_against_numpy(prog, shape):
    x = np.random.default_rng(7 + sum(shape)).normal(0, 1, shape).astype(np.float32)
    np.testing.assert_allclose(prog.row_sums(x), x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_f64_and_i64(prog):
    a = np.array([1, -2, 3.25, 1e300, 5e-324])
    b = np.array([0.5, 0.5, -1, 0, 0])
    np.testing.assert_array_equal(prog.axpy(a, b), 2.5 * a + b)
    ids = np.array([0, -5, 2**63 - 8], dtype=np.int64)
    np.testing.assert_array_equal(prog.shift(ids, by=7), ids + 7)


def test_torch_in_torch_out(prog):
    x = torch.randn(5, 9)
    y = prog.softmax(x, temperature=1.0)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_tensors_of_every_kind_give_torch_results(device):
    # Contiguous CPU tensors take the fast path (read in place), the others
    # the general one: views, offsets into a storage, integer and f64
    # tensors, a tensor that needs a gradient (warned about): all agree.
    p = zyntax.compile(SOURCE, device=device)
    x = torch.randn(8, 12)
    cases = [x, x[2:], x[:, 1:], x.t(), x[::2]]
    for c in cases:
        y = p.row_sums(c)
        assert isinstance(y, torch.Tensor)
        torch.testing.assert_close(y, c.sum(dim=1), rtol=1e-5, atol=1e-5)
    a = torch.randn(33, dtype=torch.float64)
    b = torch.randn(33, dtype=torch.float64)
    torch.testing.assert_close(p.axpy(a, b), 2.5 * a + b)
    torch.testing.assert_close(p.axpy(a[1:], b[:-1]), 2.5 * a[1:] + b[:-1])
    ids = torch.tensor([3, -9, 2**40], dtype=torch.int64)
    assert torch.equal(p.shift(ids, 7), ids + 7)
    with pytest.warns(UserWarning, match="detached"):
        y = p.row_sums(x.clone().requires_grad_())
    torch.testing.assert_close(y, x.sum(dim=1), rtol=1e-5, atol=1e-5)


def test_torch_results_share_no_memory_with_inputs(prog):
    # The result is the kernel's own: writing it leaves the input alone.
    x = torch.ones(4, 4)
    y = prog.row_sums(x)
    y += 1
    assert torch.equal(x, torch.ones(4, 4))


def test_strided_and_read_only_inputs(prog):
    x = np.random.default_rng(3).normal(size=(6, 10)).astype(np.float32)
    view = x[:, ::2]  # not contiguous: gathered into a copy
    np.testing.assert_allclose(prog.row_sums(view), view.sum(axis=1), rtol=1e-5, atol=1e-5)
    frozen = x.copy()
    frozen.flags.writeable = False
    np.testing.assert_allclose(prog.row_sums(frozen), x.sum(axis=1), rtol=1e-5, atol=1e-5)
    t = torch.from_numpy(x).t()  # a transposed torch view
    np.testing.assert_allclose(prog.row_sums(t.contiguous()).numpy(), x.T.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(prog.row_sums(t).numpy(), x.T.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_lists_take_the_kernels_element_type(prog):
    np.testing.assert_allclose(prog.row_sums([[1, 2], [3, 4]]), [3, 7])
    assert prog.shift([1, 2], by=1).dtype == np.int64


def test_cpu_arrays_are_read_in_place():
    dev = zyntax.device("cpu")
    x = np.arange(4, dtype=np.float64)
    a = zyntax.Array.from_dlpack(x, dev)
    prog = zyntax.compile(SOURCE, device="cpu")
    zero = np.zeros(4)
    assert list(prog.axpy(a, zero)) == [0, 2.5, 5, 7.5]
    x[0] = 4.0  # the kernel reads the array's own memory
    assert prog.axpy(a, zero)[0] == 10.0
    # On the way out too: NumPy sees the array's own memory.
    out = zyntax.from_array(a, like_torch=False)
    assert out.__array_interface__["data"][0] == x.__array_interface__["data"][0]


def test_errors_name_the_kernel_the_argument_and_the_shapes():
    prog = zyntax.compile(SOURCE, device="cpu", name="kernels.zynml")
    with pytest.raises(zyntax.ShapeError, match=r"argument a is f32 \[3\], but the kernel takes tensor\[n, f64\]"):
        prog.axpy(np.zeros(3, np.float32), np.zeros(3))
    with pytest.raises(ValueError, match=r"input 'b' has shape \[4\], but its axis 0 must be n = 3"):
        prog.axpy(np.zeros(3), np.zeros(4))
    with pytest.raises(zyntax.ShapeError, match="takes 2 arrays, got 1"):
        prog.axpy(np.zeros(3))
    with pytest.raises(zyntax.ShapeError, match="needs the host value 'temperature'"):
        prog.softmax(np.zeros((2, 2), np.float32))
    with pytest.raises(zyntax.ShapeError, match="reads no host value 'temp'"):
        prog.softmax(np.zeros((2, 2), np.float32), temperature=1, temp=2)
    with pytest.raises(AttributeError, match="did you mean 'softmax'"):
        prog.sofmax
    with pytest.raises(TypeError, match="no element type"):
        prog.row_sums(np.zeros((2, 2), np.complex64))
    with pytest.raises(zyntax.ProgramError) as e:
        zyntax.compile("let x = 1\nlet y = z + 1\n", name="bad.zynml")
    assert "bad.zynml:2:9: error: unknown name 'z'" in str(e.value) and "^" in str(e.value)
    with pytest.raises(zyntax.ProgramError, match="cannot read"):
        zyntax.load("/nonexistent/kernels.zynml")
    with pytest.raises(zyntax.ComputeError, match="not available|no device"):
        zyntax.device("tpu:3")


def test_a_kernel_that_fails_while_running_says_where():
    prog = zyntax.compile("""
def gather(x: tensor[n, f32], ids: tensor[k, i64]) {
    return compute(x, ids) {
        @kernel elementwise
        for i in 0..k:
            out[i] = x[ids[i]]
    }
}""", device="cpu", name="gather.zynml")
    np.testing.assert_array_equal(prog.gather(np.array([1., 2., 3.], np.float32), np.array([2, 0])), [3, 1])
    with pytest.raises(zyntax.ComputeError, match=r"gather.zynml:6:22: error: index out of bounds: x\[5\]: axis 0 has size 3"):
        prog.gather(np.array([1., 2., 3.], np.float32), np.array([5]))


def test_integer_host_values_stay_exact_over_64_bits():
    prog = zyntax.compile("def shift(x: tensor[n, i64], off: int) {\n return compute(x) {\n  for i in 0..n:\n"
                          "   out[i] = x[i] + off\n }\n}\n", device="cpu")
    x = np.array([1, 2], np.int64)
    big = 2**62 + 3  # past 2^53: a double would round it
    assert list(prog.shift(x, off=big)) == [big + 1, big + 2]
    assert list(prog.shift(x, off=np.int64(big))) == [big + 1, big + 2]
    with pytest.raises(zyntax.ShapeError, match="beyond a 64-bit integer"):
        prog.shift(x, off=2**70)
    with pytest.raises(zyntax.ShapeError, match="is an integer, not 2.5"):
        prog.shift(x, off=2.5)


def test_results_are_writable_numpy_arrays():
    prog = zyntax.compile(SOURCE, device="cpu")
    for device in ("cpu", "cpu:reference"):
        y = prog.axpy(np.arange(3.0), np.zeros(3), device=device)
        assert y.flags.writeable  # as NumPy's own results
        y[0] = 5.0
        assert list(y) == [5.0, 2.5, 5.0]


def test_numpy_arrays_go_straight_in_and_results_outlive_the_program():
    import gc
    import sys
    prog = zyntax.compile(SOURCE, device="cpu")
    x, zero = np.arange(5.0), np.zeros(5)
    before = sys.getrefcount(x)
    for _ in range(100):
        y = prog.axpy(x, zero)
    assert sys.getrefcount(x) == before  # the call let go of what it read in place
    assert type(y) is np.ndarray and y.flags.writeable and y.flags.c_contiguous
    np.testing.assert_array_equal(y, 2.5 * x)
    del prog
    gc.collect()
    y[1] = -1.0  # the result's memory lives as long as the NumPy array
    assert list(y) == [0.0, -1.0, 5.0, 7.5, 10.0]
    # The same call through every path gives the same result: zyntax arrays,
    # NumPy arrays, torch tensors, lists.
    prog = zyntax.compile(SOURCE, device="cpu")
    a = zyntax.Array.from_dlpack(x, zyntax.device("cpu"))
    for args in [(x, zero), (a, zero), (torch.from_numpy(x), torch.from_numpy(zero)), (list(x), list(zero))]:
        r = prog.axpy(*args)
        np.testing.assert_array_equal(r.numpy() if isinstance(r, torch.Tensor) else r, 2.5 * x)


def test_host_values_go_positionally_in_the_signatures_order():
    prog = zyntax.compile(SOURCE, device="cpu", name="kernels.zynml")
    x = np.random.default_rng(5).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(prog.softmax(x, 0.5), np_softmax(x, 0.5), rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(prog.softmax(x, 0.5), prog.softmax(x, temperature=0.5))
    assert list(prog.shift(np.array([1, 2]), 10)) == [11, 12]
    with pytest.raises(zyntax.ShapeError, match=r"kernel softmax takes 1 arrays and 1 host values, got 3 arguments"):
        prog.softmax(x, 0.5, 2.0)
    with pytest.raises(TypeError, match="host value 'temperature' given twice"):
        prog.softmax(x, 0.5, temperature=0.5)
    assert prog.softmax is prog.softmax and prog.kernel("softmax") is prog.softmax  # looked up once


def test_a_tensor_that_requires_grad_is_warned_about():
    prog = zyntax.compile(SOURCE, device="cpu")
    x = torch.randn(3, 4, requires_grad=True)
    with pytest.warns(UserWarning, match="kernel row_sums has no backward: its result is detached from autograd"):
        y = prog.row_sums(x)
    assert not y.requires_grad
    torch.testing.assert_close(y, x.detach().sum(dim=1), rtol=1e-5, atol=1e-5)
