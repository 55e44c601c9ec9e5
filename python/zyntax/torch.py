"""The op library as PyTorch autograd functions: forward and backward both
run on a zyntax device (any leading axes are rows). The op library computes
in f32: f16 and bf16 tensors are computed in f32 and given back in their own
dtype (as autocast does); f64 tensors are a TypeError, never silently
rounded to f32.

    import torch, zyntax.torch as zt
    x = torch.randn(8, 64, requires_grad=True)
    y = zt.softmax(x)               # zyntax's softmax kernel
    y.sum().backward()              # zyntax's softmax_backward kernel

Ops: matmul (batched, broadcasting), softmax, rms_norm, layer_norm, conv2d,
embedding, rope, causal_attention (grouped-query), cross_entropy, and the
AdamW optimizer. Each function takes device= (default 'auto'); CUDA tensors on the GPU the
device is ('cuda:N') stay in its memory (taken and given back through
DLPack), tensors on another device are copied through host memory."""
import torch

import zyntax
from zyntax import _zyntax, from_array, to_array


def _arr(t, dev):
    if t.dtype is torch.float32:
        a = _zyntax.array_from_torch(t, dev)  # a contiguous CPU tensor, read in place
        if a is not None:
            return a
    return to_array(t.detach().contiguous().float(), dev)


def _t(a, like):
    """A result as a tensor where `like` is, in like's dtype where that is a float type."""
    if like.dtype is torch.float32 and like.is_cpu:
        t = _zyntax.torch_over(a)  # over the result's host memory
        if t is not None:
            return t
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
    return _op_device(device)


_OP_DEVICES = {}


def _op_device(device):
    """The handle the ops run on: one of its own per device id, its ops run
    when called. torch reads each result at once, so letting ops wait to
    fuse (the C++ API's default) would only add to every call. A Device
    given by the caller is used as it is."""
    if isinstance(device, zyntax.Device):
        return device
    d = _OP_DEVICES.get(device)
    if d is None:
        d = zyntax.Device(device)
        d.fusion = False
        _OP_DEVICES[device] = d
    return d


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


class _Rope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, offset, dev):
        ctx.dev, ctx.offset = dev, offset
        return _t(dev.rope(_arr(x, dev), offset, False), x)

    @staticmethod
    def backward(ctx, g):
        return _t(ctx.dev.rope(_arr(g, ctx.dev), ctx.offset, True), g), None, None


class _CausalAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, dev):
        ctx.dev = dev
        ctx.save_for_backward(q, k, v)
        return _t(dev.causal_attention(_arr(q, dev), _arr(k, dev), _arr(v, dev)), q)

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        dev = ctx.dev
        gq, gk, gv = dev.causal_attention_backward(_arr(g, dev), _arr(q, dev), _arr(k, dev), _arr(v, dev))
        return _t(gq, g), _t(gk, g), _t(gv, g), None


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, ignore_index, dev):
        # The kernel computes the gradient with the loss: kept for backward.
        ids = targets.detach().to(torch.int64).cpu()
        classes = logits.shape[1]
        bad = (ids != ignore_index) & ((ids < 0) | (ids >= classes))
        if bool(bad.any()):
            raise IndexError("zyntax.torch.cross_entropy: target %d is out of bounds for %d classes"
                             % (int(ids[bad][0]), classes))
        ids32 = to_array(ids.to(torch.int32).numpy().view("uint32"), dev)
        loss, grad = dev.cross_entropy(_arr(logits, dev), ids32, ignore_index & 0xFFFFFFFF)
        ctx.grad, ctx.like = grad, logits
        return torch.tensor(loss, dtype=logits.dtype, device=logits.device)

    @staticmethod
    def backward(ctx, g):
        return _t(ctx.grad, ctx.like) * g, None, None, None


def _over_batches(fn, *tensors, rank):
    """fn on tensors of `rank` axes; leading axes beyond those are batches, one call each."""
    lead = tensors[0].shape[:-rank]
    if not lead:
        return fn(*tensors)
    flat = [t.reshape((-1,) + tuple(t.shape[-rank:])) for t in tensors]
    out = torch.stack([fn(*(f[i] for f in flat)) for i in range(flat[0].shape[0])])
    return out.reshape(tuple(lead) + tuple(out.shape[1:]))


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
    """a @ b as torch.matmul: 2-D products, a batch of them, broadcasting over
    the leading axes, 1-D operands as vectors. a [..., m, k] @ b [k, n] is
    one product of all of a's rows."""
    dev = _inputs("matmul", device, a, b)
    if a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0]:
        return _Matmul.apply(a, b, dev)  # the common case first: no reshaping
    if a.dim() == 0 or b.dim() == 0:
        raise RuntimeError("zyntax.torch.matmul: both arguments need at least 1 dimension, got %dD and %dD"
                           % (a.dim(), b.dim()))
    if a.dim() == 1:
        return matmul(a.unsqueeze(0), b, device).squeeze(-2)
    if b.dim() == 1:
        return matmul(a, b.unsqueeze(-1), device).squeeze(-1)
    if a.shape[-1] != b.shape[-2]:
        raise zyntax.ShapeError("matmul: a is %s and b %s: inner sizes %d and %d differ"
                           % (list(a.shape), list(b.shape), a.shape[-1], b.shape[-2]))
    if b.dim() == 2:
        rows = a.reshape(-1, a.shape[-1])
        return _Matmul.apply(rows, b, dev).reshape(tuple(a.shape[:-1]) + (b.shape[1],))
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = a.expand(tuple(batch) + tuple(a.shape[-2:]))
    b = b.expand(tuple(batch) + tuple(b.shape[-2:]))
    return _over_batches(lambda x, y: _Matmul.apply(x, y, dev), a, b, rank=2)


def rope(x, offset=0, device="auto"):
    """Rotary position embedding of x [..., seq, heads, head_dim] (head_dim
    even): the pair (2p, 2p + 1) at position offset + t turned by the angle
    (offset + t) * 10000^(-2p / head_dim). Leading axes are batches."""
    dev = _inputs("rope", device, x)
    if x.dim() < 3 or x.shape[-1] % 2:
        raise zyntax.ShapeError("rope: x must be [..., seq, heads, head_dim] with head_dim even, got %s"
                           % list(x.shape))
    return _over_batches(lambda t: _Rope.apply(t, int(offset), dev), x, rank=3)


def causal_attention(q, k, v, device="auto"):
    """softmax(q k^T / sqrt(head_dim), causal) v for q [..., seq, heads,
    head_dim] and k, v [..., seq, kv_heads, head_dim], heads a multiple of
    kv_heads (grouped-query attention: query head h reads key head
    h // (heads / kv_heads)). Leading axes are batches."""
    dev = _inputs("causal_attention", device, q, k, v)
    return _over_batches(lambda a, b, c: _CausalAttention.apply(a, b, c, dev), q, k, v, rank=3)


def cross_entropy(logits, targets, ignore_index=-100, device="auto"):
    """The mean cross-entropy of softmax(logits) [n, classes] against integer
    targets [n], as torch.nn.functional.cross_entropy (mean over the targets
    that are not ignore_index)."""
    dev = _inputs("cross_entropy", device, logits)
    if logits.dim() != 2 or targets.shape != logits.shape[:1]:
        raise zyntax.ShapeError("cross_entropy: logits must be [n, classes] and targets [n], got %s and %s"
                           % (list(logits.shape), list(targets.shape)))
    if targets.dtype.is_floating_point:
        raise RuntimeError("zyntax.torch.cross_entropy: targets must be class indices (integers), not %s"
                           % str(targets.dtype).replace("torch.", ""))
    return _CrossEntropy.apply(logits, targets, int(ignore_index), dev)


class AdamW(torch.optim.Optimizer):
    """torch.optim.AdamW with the step computed by the op library's kernel
    (decoupled weight decay, bias-corrected moments). On a CPU device the
    parameters and moments are updated in place; elsewhere through a copy."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, device="auto"):
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError("zyntax.torch.AdamW: lr, eps and weight_decay must be >= 0 and betas in [0, 1), got "
                             "lr=%r betas=%r eps=%r weight_decay=%r" % (lr, betas, eps, weight_decay))
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self._device = device

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                dev = _inputs("AdamW", self._device, p, p.grad)
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32, memory_format=torch.contiguous_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32, memory_format=torch.contiguous_format)
                state["step"] += 1
                beta1, beta2 = group["betas"]
                in_place = dev.id.startswith("cpu") and p.dtype is torch.float32 and p.is_cpu and p.is_contiguous()
                param = _zyntax.array_from_torch(p, dev) if in_place else _arr(p, dev)
                m = _zyntax.array_from_torch(state["exp_avg"], dev) if in_place else _arr(state["exp_avg"], dev)
                v = _zyntax.array_from_torch(state["exp_avg_sq"], dev) if in_place else _arr(state["exp_avg_sq"], dev)
                dev.adamw_step(param, _arr(p.grad, dev), m, v, group["lr"], beta1, beta2, group["eps"],
                               group["weight_decay"], state["step"])
                if not in_place:
                    p.copy_(_t(param, p))
                    state["exp_avg"].copy_(_t(m, state["exp_avg"]))
                    state["exp_avg_sq"].copy_(_t(v, state["exp_avg_sq"]))
        return loss


def _register_op_library():
    """The ops above as torch.ops.zyntax.<name> (zyntax/torch_library.py)."""
    from . import torch_library as lib

    def like(x):
        return torch.empty_like(x, device="meta")

    def conv_meta(x, weight, bias, stride, padding):
        h = (x.shape[2] + 2 * padding[0] - weight.shape[2]) // stride[0] + 1
        w = (x.shape[3] + 2 * padding[1] - weight.shape[3]) // stride[1] + 1
        return x.new_empty((x.shape[0], weight.shape[0], h, w))

    lib.define("matmul", "(Tensor a, Tensor b) -> Tensor", lambda a, b: matmul(a, b), torch.matmul)
    lib.define("softmax", "(Tensor x, int dim) -> Tensor", lambda x, dim: softmax(x, dim), lambda x, dim: like(x))
    lib.define("rms_norm", "(Tensor x, Tensor weight, float eps) -> Tensor", lambda x, w, eps: rms_norm(x, w, eps),
               lambda x, w, eps: like(x))
    lib.define("layer_norm", "(Tensor x, Tensor gamma, Tensor beta, float eps) -> Tensor",
               lambda x, g, b, eps: layer_norm(x, g, b, eps), lambda x, g, b, eps: like(x))
    lib.define("rope", "(Tensor x, int offset) -> Tensor", lambda x, offset: rope(x, offset), lambda x, offset: like(x))
    lib.define("causal_attention", "(Tensor q, Tensor k, Tensor v) -> Tensor", lambda q, k, v: causal_attention(q, k, v),
               lambda q, k, v: like(q))
    lib.define("cross_entropy", "(Tensor logits, Tensor targets, int ignore_index) -> Tensor",
               lambda x, t, ignore: cross_entropy(x, t, ignore), lambda x, t, ignore: x.new_empty(()))
    lib.define("embedding", "(Tensor ids, Tensor weight) -> Tensor", lambda ids, w: embedding(ids, w),
               lambda ids, w: w.new_empty(tuple(ids.shape) + (w.shape[1],)))
    lib.define("conv2d", "(Tensor x, Tensor weight, Tensor? bias, int[] stride, int[] padding) -> Tensor",
               lambda x, w, b, stride, padding: conv2d(x, w, b, stride, padding), conv_meta)


def register(kernel, name=None):
    """A program's kernel as the torch operator torch.ops.zyntax.<name>
    (zyntax/torch_library.py): in torch.jit traces (and torch.compile graphs
    where torch has it) as one node, its result's shape known to meta tensors."""
    from . import torch_library
    if not torch_library.available():
        raise RuntimeError("this torch (%s) has no torch.library to register operators with" % torch.__version__)
    return torch_library.register(kernel, name)


try:
    from . import torch_library as _torch_library
    if _torch_library.available() and not _torch_library._registered:
        _register_op_library()
except RuntimeError as e:  # the namespace defined already in this process (a reload): the first definitions stay
    if "already" not in str(e) and "registered" not in str(e):
        raise
