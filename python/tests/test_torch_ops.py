"""The op library as torch autograd functions: forward and backward against
PyTorch's own ops, and gradients against central finite differences."""
import numpy as np
import pytest
import torch

import zyntax
import zyntax.torch as zt
from conftest import devices_under_test

DEVICES = devices_under_test(d["id"] for d in zyntax.devices() if d["id"] in ("cpu", "cpu:reference", "vulkan:0"))
SHAPES = [(1, 1), (3, 7), (17, 33)]


def grads(f, *inputs):
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    y = f(*leaves)
    weights = torch.linspace(-1, 1, y.numel()).reshape(y.shape)  # a loss that weighs every output differently
    (y * weights).sum().backward()
    return y.detach(), [x.grad for x in leaves]


def check(zy, ref, inputs, rtol=1e-4, atol=1e-5):
    y, g = grads(zy, *inputs)
    y_ref, g_ref = grads(ref, *inputs)
    torch.testing.assert_close(y, y_ref, rtol=rtol, atol=atol)
    for a, b in zip(g, g_ref):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax(device, shape):
    x = torch.randn(shape) * 3
    check(lambda x: zt.softmax(x, device=device), lambda x: torch.softmax(x, -1), [x])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rms_norm(device, shape):
    x, w = torch.randn(shape), torch.randn(shape[-1])
    ref = lambda x, w: x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    check(lambda x, w: zt.rms_norm(x, w, 1e-6, device=device), ref, [x, w])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm(device, shape):
    x, g, b = torch.randn(shape), torch.randn(shape[-1]), torch.randn(shape[-1])
    ref = lambda x, g, b: torch.nn.functional.layer_norm(x, (shape[-1],), g, b, 1e-5)
    check(lambda x, g, b: zt.layer_norm(x, g, b, 1e-5, device=device), ref, [x, g, b], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mkn", [(1, 1, 1), (5, 3, 7), (33, 17, 9)])
def test_matmul(device, mkn):
    m, k, n = mkn
    a, b = torch.randn(m, k), torch.randn(k, n)
    check(lambda a, b: zt.matmul(a, b, device=device), torch.matmul, [a, b])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("geometry", [((1, 1, 5, 5), (1, 1, 3, 3), 1, 0), ((2, 3, 9, 7), (4, 3, 3, 2), 2, 1),
                                      ((1, 2, 8, 8), (3, 2, 1, 1), 1, 0)])
def test_conv2d(device, geometry):
    xs, ws, stride, padding = geometry
    x, w, b = torch.randn(xs), torch.randn(ws), torch.randn(ws[0])
    check(lambda x, w, b: zt.conv2d(x, w, b, stride, padding, device=device),
          lambda x, w, b: torch.nn.functional.conv2d(x, w, b, stride, padding), [x, w, b], rtol=1e-3, atol=1e-4)
    check(lambda x, w: zt.conv2d(x, w, None, stride, padding, device=device),
          lambda x, w: torch.nn.functional.conv2d(x, w, None, stride, padding), [x, w], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_embedding(device):
    ids = torch.tensor([[3, 0, 3], [9, 1, 3]])
    weight = torch.randn(10, 6)
    y, (g,) = grads(lambda w: zt.embedding(ids, w, device=device), weight)
    y_ref, (g_ref,) = grads(lambda w: torch.nn.functional.embedding(ids, w), weight)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(g, g_ref, rtol=1e-5, atol=1e-6)  # row 3 gathers three gradients
    with pytest.raises(zyntax.ShapeError, match="ids must be in 0..9"):
        zt.embedding(torch.tensor([10]), weight, device=device)
    for ids in (torch.tensor([1.7]), torch.tensor([-0.5]), torch.tensor([True])):  # torch refuses these too
        with pytest.raises(zyntax.ShapeError, match="ids must be integers"):
            zt.embedding(ids, weight, device=device)


@pytest.mark.parametrize("op", ["softmax", "rms_norm", "layer_norm"])
def test_gradients_against_finite_differences(op):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 6))
    w = rng.normal(size=6)
    b = rng.normal(size=6)
    weights = rng.normal(size=(3, 6))
    f = {
        "softmax": lambda x: zt.softmax(x, device="cpu"),
        "rms_norm": lambda x: zt.rms_norm(x, torch.tensor(w, dtype=torch.float32), device="cpu"),
        "layer_norm": lambda x: zt.layer_norm(x, torch.tensor(w, dtype=torch.float32), torch.tensor(b, dtype=torch.float32),
                                              device="cpu"),
    }[op]
    loss = lambda x: float((f(torch.tensor(x, dtype=torch.float32)).double() * torch.tensor(weights)).sum())
    xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    (f(xt).double() * torch.tensor(weights)).sum().backward()
    eps = 1e-2
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (loss(up) - loss(down)) / (2 * eps)
    np.testing.assert_allclose(xt.grad.numpy(), numeric, rtol=2e-2, atol=2e-3)


def test_shape_errors_name_the_op():
    with pytest.raises(zyntax.ShapeError, match="matmul"):
        zt.matmul(torch.randn(2, 3), torch.randn(4, 5), device="cpu")
    with pytest.raises(zyntax.ShapeError, match="rms_norm"):
        zt.rms_norm(torch.randn(2, 3), torch.randn(4), device="cpu")


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_softmax_over_any_axis_with_its_gradient(dim):
    x = torch.randn(3, 4, 5, dtype=torch.float32, requires_grad=True)
    y = zt.softmax(x, dim=dim, device="cpu")
    torch.testing.assert_close(y, torch.softmax(x.detach(), dim=dim), rtol=1e-5, atol=1e-6)
    w = torch.randn(3, 4, 5)
    (y * w).sum().backward()
    xr = x.detach().clone().requires_grad_()
    (torch.softmax(xr, dim=dim) * w).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-5)
    with pytest.raises(IndexError, match="dim 3 is out of range for a tensor of 3 axes"):
        zt.softmax(x, dim=3, device="cpu")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_computed_in_f32_and_given_back_in_its_dtype(dtype):
    x = torch.randn(4, 8).to(dtype).requires_grad_()
    w = torch.randn(8).to(dtype)
    y = zt.rms_norm(x, w, device="cpu")
    assert y.dtype == dtype
    want = zt.rms_norm(x.detach().float(), w.float(), device="cpu").to(dtype)
    torch.testing.assert_close(y, want)
    y.float().sum().backward()
    assert x.grad.dtype == dtype
    assert zt.matmul(x.detach(), x.detach().t(), device="cpu").dtype == dtype


def test_f64_is_refused_not_rounded():
    x = torch.randn(2, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"zyntax.torch.softmax computes in f32 .* got a float64 tensor: convert it with .float\(\)"):
        zt.softmax(x, device="cpu")
    with pytest.raises(TypeError, match="matmul"):
        zt.matmul(x, x.t(), device="cpu")
