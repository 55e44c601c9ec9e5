"""zyntax's ops as torch operators (torch.library): values and gradients as
zyntax.torch's functions give them, shapes on meta tensors as torch's own ops
give them, single nodes in torch.jit traces; a program's kernels registered
the same way."""
import pytest
import torch

import zyntax
import zyntax.torch as zt
from conftest import SCALE_ADD
from zyntax import torch_library

pytestmark = pytest.mark.skipif(not torch_library.available(), reason="this torch has no torch.library")
ops = torch.ops.zyntax

SOURCE = SCALE_ADD + """
def row_sums(x: tensor[n, m, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            var t = 0.0
            for j in 0..m:
                t += x[i, j]
            out[i] = t
    }
}

def pairs(x: tensor[n, f32], k: i64) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n, j in 0..k:
            out[i, j] = x[i] * f32(j)
    }
}
"""


def meta(*shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device="meta")


def test_ops_compute_what_the_functions_compute_with_gradients():
    torch.manual_seed(0)
    a = torch.randn(2, 5, 3, requires_grad=True)
    b = torch.randn(3, 4, requires_grad=True)
    y = ops.matmul(a, b)
    y.sum().backward()
    torch.testing.assert_close(y, a @ b)
    torch.testing.assert_close(a.grad, torch.ones(2, 5, 4) @ b.detach().T)
    x = torch.randn(4, 6, requires_grad=True)
    s = ops.softmax(x, 0)
    torch.testing.assert_close(s, torch.softmax(x, 0))
    (s * torch.arange(24.0).reshape(4, 6)).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    q, k, v = torch.randn(5, 2, 4), torch.randn(5, 1, 4), torch.randn(5, 1, 4)
    torch.testing.assert_close(ops.causal_attention(q, k, v), zt.causal_attention(q, k, v))
    torch.testing.assert_close(ops.rope(q, 3), zt.rope(q, 3))
    logits, targets = torch.randn(6, 5), torch.tensor([0, 4, -100, 2, 1, 3])
    torch.testing.assert_close(ops.cross_entropy(logits, targets, -100),
                               torch.nn.functional.cross_entropy(logits, targets))
    w = torch.randn(6)
    torch.testing.assert_close(ops.rms_norm(x.detach(), w, 1e-6), zt.rms_norm(x.detach(), w, 1e-6))


def test_meta_tensors_get_torchs_shapes():
    assert ops.matmul(meta(2, 3, 4), meta(4, 5)).shape == (2, 3, 5)
    assert ops.matmul(meta(7), meta(3, 7, 2)).shape == (3, 2)
    assert ops.softmax(meta(3, 4), 0).shape == (3, 4)
    assert ops.layer_norm(meta(3, 4), meta(4), meta(4), 1e-5).shape == (3, 4)
    assert ops.causal_attention(meta(9, 4, 8), meta(9, 2, 8), meta(9, 2, 8)).shape == (9, 4, 8)
    assert ops.cross_entropy(meta(6, 5), meta(6, dtype=torch.int64), -100).shape == ()
    assert ops.embedding(meta(2, 3, dtype=torch.int64), meta(10, 4)).shape == (2, 3, 4)
    conv = ops.conv2d(meta(2, 3, 9, 9), meta(4, 3, 3, 3), None, [2, 2], [1, 1])
    assert conv.shape == torch.nn.functional.conv2d(torch.empty(2, 3, 9, 9), torch.empty(4, 3, 3, 3),
                                                    stride=2, padding=1).shape


def test_ops_are_single_nodes_of_a_trace():
    traced = torch.jit.trace(lambda x, w: ops.softmax(ops.matmul(x, w), -1), (torch.randn(3, 4), torch.randn(4, 5)))
    kinds = [n.kind() for n in traced.graph.nodes()]
    assert "zyntax::matmul" in kinds and "zyntax::softmax" in kinds
    x, w = torch.randn(3, 4), torch.randn(4, 5)
    torch.testing.assert_close(traced(x, w), torch.softmax(x @ w, -1))


def test_a_programs_kernels_as_operators():
    prog = zyntax.compile(SOURCE, device="cpu")
    scale_add = zt.register(prog.scale_add)
    row_sums = zt.register(prog.row_sums, name="my_row_sums")
    pairs = zt.register(prog.pairs)
    assert scale_add is ops.scale_add and row_sums is ops.my_row_sums
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(scale_add(x, y, 2.5), x * 2.5 + y)
    torch.testing.assert_close(row_sums(x), x.sum(1))
    # The result's shape from the kernel's types, host values included.
    assert scale_add(meta(3, 4), meta(3, 4), 2.5).shape == (3, 4)
    assert row_sums(meta(7, 9)).shape == (7,)
    assert pairs(meta(5), 3).shape == (5, 3)
    torch.testing.assert_close(pairs(torch.ones(2), 3), torch.tensor([[0.0, 1, 2], [0, 1, 2]]))
    traced = torch.jit.trace(lambda t: row_sums(torch.relu(t)), (x,))
    assert "zyntax::my_row_sums" in [n.kind() for n in traced.graph.nodes()]
    # Shapes the kernel cannot take are its own errors, on meta tensors too.
    with pytest.raises(zyntax.ShapeError, match="row_sums: argument x has shape \\[7\\]"):
        row_sums(meta(7))
    with pytest.raises(zyntax.ShapeError, match="input .y. has shape \\[3, 5\\], but its axis 1 must be m = 4"):
        scale_add(meta(3, 4), meta(3, 5), 1.0)
    # A kernel has no backward: a gradient wanted through it is warned about.
    with pytest.warns(UserWarning, match="no backward"):
        out = row_sums(x.clone().requires_grad_())
    assert not out.requires_grad
    with pytest.raises(ValueError, match="registered already"):
        zt.register(prog.scale_add)
