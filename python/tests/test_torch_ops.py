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


def check_against_finite_differences(f, x, weights, eps=1e-2):
    """f's gradient of sum(f(x) * weights) at x (NumPy, f64) against central differences."""
    loss = lambda x: float((f(torch.tensor(x, dtype=torch.float32)).double() * weights).sum())
    xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    (f(xt).double() * weights).sum().backward()
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (loss(up) - loss(down)) / (2 * eps)
    np.testing.assert_allclose(xt.grad.numpy(), numeric, rtol=2e-2, atol=2e-3)


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
    check_against_finite_differences(f, x, torch.tensor(weights))


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


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shapes", [((5, 3), (3, 4)), ((2, 5, 3), (3, 4)), ((2, 5, 3), (2, 3, 4)),
                                    ((3, 1, 4, 2), (2, 2, 5)), ((7,), (7, 3)), ((4, 7), (7,)), ((2, 3, 6), (6,))])
def test_matmul_batched_and_broadcasting(device, shapes):
    a = torch.randn(shapes[0])
    b = torch.randn(shapes[1])
    check(lambda a, b: zt.matmul(a, b, device=device), torch.matmul, [a, b])


def test_matmul_errors_say_both_shapes():
    with pytest.raises(zyntax.ShapeError, match=r"matmul: a is \[2, 3\] and b \[4, 5\]"):
        zt.matmul(torch.randn(2, 3), torch.randn(4, 5), device="cpu")


def rope_reference(x, offset):
    seq, hd = x.shape[-3], x.shape[-1]
    pos = torch.arange(offset, offset + seq, dtype=torch.float64)[:, None, None]
    p = torch.arange(hd // 2, dtype=torch.float64)
    angle = pos * torch.exp(2 * p / hd * -np.log(10000.0))
    c, s = torch.cos(angle).float(), torch.sin(angle).float()
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,offset", [((5, 2, 8), 0), ((1, 1, 2), 3), ((2, 7, 3, 6), 11)])
def test_rope(device, shape, offset):
    x = torch.randn(shape)
    check(lambda x: zt.rope(x, offset, device=device), lambda x: rope_reference(x, offset), [x])


def attention_reference(q, k, v):
    group = q.shape[-2] // k.shape[-2]
    k = k.repeat_interleave(group, dim=-2)
    v = v.repeat_interleave(group, dim=-2)
    q, k, v = (t.transpose(-3, -2) for t in (q, k, v))  # [..., heads, seq, head_dim]
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    seq = q.shape[-2]
    scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v).transpose(-3, -2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("q_shape,kv_heads", [((7, 2, 8), 2), ((5, 4, 4), 2), ((1, 3, 6), 1), ((2, 9, 4, 8), 1)])
def test_causal_attention_with_grouped_heads(device, q_shape, kv_heads):
    q = torch.randn(q_shape)
    kv_shape = q_shape[:-2] + (kv_heads, q_shape[-1])
    k, v = torch.randn(kv_shape), torch.randn(kv_shape)
    check(lambda q, k, v: zt.causal_attention(q, k, v, device=device), attention_reference, [q, k, v],
          rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n,classes", [(1, 2), (6, 5), (33, 17)])
def test_cross_entropy(device, n, classes):
    logits = torch.randn(n, classes) * 2
    targets = torch.randint(0, classes, (n,))
    if n > 2:
        targets[1] = -100  # ignored, as torch ignores it
    check(lambda x: zt.cross_entropy(x, targets, device=device),
          lambda x: torch.nn.functional.cross_entropy(x, targets), [logits])
    with pytest.raises(IndexError, match="out of bounds"):
        zt.cross_entropy(logits, torch.full((n,), classes), device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_adamw_matches_torchs(device):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    twin = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    twin.load_state_dict(model.state_dict())
    ours = zt.AdamW(model.parameters(), lr=0.01, weight_decay=0.05, device=device)
    theirs = torch.optim.AdamW(twin.parameters(), lr=0.01, weight_decay=0.05)
    x, y = torch.randn(16, 5), torch.randn(16, 3)
    for _ in range(5):
        for net, opt in ((model, ours), (twin, theirs)):
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_adamw_refuses_bad_settings():
    with pytest.raises(ValueError, match="lr"):
        zt.AdamW([torch.zeros(2, requires_grad=True)], lr=-1)


@pytest.mark.parametrize("op", ["rope", "causal_attention", "cross_entropy"])
def test_new_ops_gradients_against_finite_differences(op):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(3, 2, 4))
    kv = torch.tensor(rng.normal(size=(3, 1, 4)), dtype=torch.float32)
    targets = torch.tensor([1, 0, 3])
    f = {
        "rope": lambda x: zt.rope(x, 2, device="cpu"),
        "causal_attention": lambda x: zt.causal_attention(x, kv, kv * 0.5, device="cpu"),
        "cross_entropy": lambda x: zt.cross_entropy(x.reshape(6, 4), torch.tensor([1, 0, 3, 2, -100, 1]), device="cpu"),
    }[op]
    weights = torch.tensor(rng.normal(size=f(torch.tensor(x, dtype=torch.float32)).shape))
    check_against_finite_differences(f, x, weights)


def test_ops_given_a_device_id_run_when_called_on_a_handle_of_their_own():
    x = torch.randn(5, 7)
    shared = zyntax.device("cpu")
    assert shared.fusion  # the caller's own handle still lets ops wait and fuse
    assert zt._op_device("cpu").fusion is False
    assert zt._op_device(shared) is shared
    assert torch.equal(zt.softmax(x, device="cpu"), zt.softmax(x, device=shared))
    a, b = torch.randn(9, 4), torch.randn(4, 3)
    assert torch.equal(zt.matmul(a, b, device="cpu"), zt.matmul(a, b, device=shared))
    d = zyntax.Device("cpu")
    d.fusion = False
    assert d.fusion is False and shared.fusion
