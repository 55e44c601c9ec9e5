"""The op library as PyTorch autograd functions: forward and backward both
run on a zyntax device (any leading axes are rows). The op library computes
in f32: f16 and bf16 tensors are computed in f32 and given back in their own
dtype (as autocast does); f64 tensors are a TypeError, never silently
rounded to f32.

    import torch, zyntax.torch as zt
    x = torch.randn(8, 64, requires_grad=True)
    y = zt.softmax(x)               # zyntax's softmax kernel
    y.sum().backward()              # zyntax's softmax_backward kernel

Each function takes device= (default 'auto'); CUDA tensors on the GPU the
device is ('cuda:N') stay in its memory (taken and given back through
DLPack), tensors on another device are copied through host memory."""
import torch

import zyntax
from zyntax import from_array, to_array


def _arr(t, dev):
    return to_array(t.detach().contiguous().float(), dev)


def _t(a, like):
    """A result as a tensor where `like` is, in like's dtype where that is a float type."""
    t = from_array(a, True, on_device=like.is_cuda)
    return t.to(like.device, like.dtype) if like.is_floating_point() else t.to(like.device)


_COMPUTED_IN_F32 = (torch.float32, torch.float16, torch.bfloat16)


def _inputs(op, device, *tensors):
    """The device; TypeError for a tensor the op library cannot compute on without losing precision."""
    for t in tensors:
        if t is not None and t.dtype not in _COMPUTED_IN_F32:
            raise TypeError("zyntax.torch.%s computes in f32 (f16 and bf16 are computed in f32 and given back in their "
                            "dtype); got a %s tensor%s" % (op, str(t.dtype).replace("torch.", ""),
                                                          ": convert it with .float()" if t.dtype == torch.float64 else ""))
    return zyntax.device(device)


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


class _Conv2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, dev):
        ctx.dev, ctx.geometry = dev, (stride[0], stride[1], padding[0], padding[1])
        ctx.has_bias = bias is not None
        ctx.save_for_backward(x, weight)
        b = _arr(bias, dev) if bias is not None else None
        return _t(dev.conv2d(_arr(x, dev), _arr(weight, dev), b, *ctx.geometry), x)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        dev = ctx.dev
        gx, gw, gb = dev.conv2d_backward(_arr(g, dev), _arr(x, dev), _arr(w, dev), *ctx.geometry)
        return _t(gx, g), _t(gw, g), (_t(gb, g) if ctx.has_bias else None), None, None, None


class _Embedding(torch.autograd.Function):
    @staticmethod
    def forward(ctx, ids, weight, dev):
        # As torch: ids are integers; a float id would be truncated to a row silently.
        if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
            raise zyntax.ShapeError("embedding: ids must be integers (int32 or int64), not %s" % str(ids.dtype).replace("torch.", ""))
        ids32 = to_array(ids.detach().to(torch.int64).to(torch.int32).cpu().contiguous().numpy().view("uint32"), dev)
        ctx.dev, ctx.ids, ctx.vocab = dev, ids32, weight.shape[0]
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= weight.shape[0]):
            raise zyntax.ShapeError("embedding: ids must be in 0..%d" % (weight.shape[0] - 1))
        return _t(dev.embedding(_arr(weight, dev), ids32), weight)

    @staticmethod
    def backward(ctx, g):
        return None, _t(ctx.dev.embedding_backward(_arr(g, ctx.dev), ctx.ids, ctx.vocab), g), None


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d(x, weight, bias=None, stride=1, padding=0, device="auto"):
    """2-D convolution over NCHW x with OIHW weights (zero padding), as torch.nn.functional.conv2d."""
    return _Conv2d.apply(x, weight, bias, _pair(stride), _pair(padding), _inputs("conv2d", device, x, weight, bias))


def embedding(ids, weight, device="auto"):
    """weight[ids] for integer ids of any shape: ids.shape + [dim]; the gradient flows to weight."""
    return _Embedding.apply(ids, weight, _inputs("embedding", device, weight))


def softmax(x, dim=-1, device="auto"):
    """Softmax over axis `dim` (the last by default), as torch.softmax."""
    dev = _inputs("softmax", device, x)
    last = x.dim() - 1
    dim = dim + x.dim() if dim < 0 else dim
    if x.dim() and not 0 <= dim <= last:
        raise IndexError("zyntax.torch.softmax: dim %d is out of range for a tensor of %d axes" % (dim, x.dim()))
    if x.dim() == 0 or dim == last:
        return _Softmax.apply(x, dev)
    return _Softmax.apply(x.movedim(dim, -1), dev).movedim(-1, dim)


def rms_norm(x, weight, eps=1e-6, device="auto"):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    return _RmsNorm.apply(x, weight, float(eps), _inputs("rms_norm", device, x, weight))


def layer_norm(x, gamma, beta, eps=1e-5, device="auto"):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis."""
    return _LayerNorm.apply(x, gamma, beta, float(eps), _inputs("layer_norm", device, x, gamma, beta))


def matmul(a, b, device="auto"):
    """a @ b for 2-D a [m, k] and b [k, n]."""
    return _Matmul.apply(a, b, _inputs("matmul", device, a, b))
