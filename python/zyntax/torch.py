"""The op library as PyTorch autograd functions: forward and backward both
run on a zyntax device (f32; any leading axes are rows).

    import torch, zyntax.torch as zt
    x = torch.randn(8, 64, requires_grad=True)
    y = zt.softmax(x)               # zyntax's softmax kernel
    y.sum().backward()              # zyntax's softmax_backward kernel

Each function takes device= (default 'auto'); tensors on a GPU are copied
through host memory."""
import torch

import zyntax
from zyntax import from_array, to_array


def _arr(t, dev):
    return to_array(t.detach().contiguous().float(), dev)


def _t(a, like):
    return from_array(a, True).to(like.device)


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dev):
        y = _t(dev.softmax(_arr(x, dev)), x)
        ctx.dev = dev
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        dev = ctx.dev
        return _t(dev.softmax_backward(_arr(y, dev), _arr(g, dev)), g), None


class _RmsNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps, dev):
        ctx.dev, ctx.eps = dev, eps
        ctx.save_for_backward(x, weight)
        return _t(dev.rms_norm(_arr(x, dev), _arr(weight, dev), eps), x)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        dev = ctx.dev
        gx, gw = dev.rms_norm_backward(_arr(x, dev), _arr(w, dev), _arr(g, dev), ctx.eps)
        return _t(gx, g), _t(gw, g), None, None


class _LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, beta, eps, dev):
        ctx.dev, ctx.eps = dev, eps
        ctx.save_for_backward(x, gamma)
        return _t(dev.layer_norm(_arr(x, dev), _arr(gamma, dev), _arr(beta, dev), eps), x)

    @staticmethod
    def backward(ctx, g):
        x, gamma = ctx.saved_tensors
        dev = ctx.dev
        gx, gg, gb = dev.layer_norm_backward(_arr(x, dev), _arr(gamma, dev), _arr(g, dev), ctx.eps)
        return _t(gx, g), _t(gg, g), _t(gb, g), None, None


class _Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, dev):
        ctx.dev = dev
        ctx.save_for_backward(a, b)
        return _t(dev.matmul(_arr(a, dev), _arr(b, dev)), a)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        dev = ctx.dev
        ga = dev.matmul(_arr(g, dev), _arr(b, dev), transpose_b=True)  # g @ b^T
        gb = dev.matmul(_arr(a, dev), _arr(g, dev), transpose_a=True)  # a^T @ g
        return _t(ga, g), _t(gb, g), None


def softmax(x, device="auto"):
    """Softmax over the last axis."""
    return _Softmax.apply(x, zyntax.device(device))


def rms_norm(x, weight, eps=1e-6, device="auto"):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    return _RmsNorm.apply(x, weight, float(eps), zyntax.device(device))


def layer_norm(x, gamma, beta, eps=1e-5, device="auto"):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis."""
    return _LayerNorm.apply(x, gamma, beta, float(eps), zyntax.device(device))


def matmul(a, b, device="auto"):
    """a @ b for 2-D a [m, k] and b [k, n]."""
    return _Matmul.apply(a, b, zyntax.device(device))
