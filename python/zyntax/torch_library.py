"""zyntax's ops as torch operators (torch.library): torch.ops.zyntax.<name>.

Each op has a CPU kernel (the op on zyntax's default device, or the device
given to register), a Meta kernel that gives the result's shape and dtype
without computing it (meta and fake tensors, tracing), and an Autograd kernel
that connects the op's backward pass, so the ops appear as single nodes in
torch.jit traces and, on torch versions that have it, in torch.compile graphs.

The op library registers itself when zyntax.torch is imported:

    torch.ops.zyntax.matmul(a, b), .softmax(x, dim), .rms_norm(x, w, eps),
    .layer_norm(x, g, b, eps), .rope(x, offset), .causal_attention(q, k, v),
    .cross_entropy(logits, targets, ignore_index)

A program's own kernel becomes one with register(kernel): its result's shape
comes from the kernel's types (Kernel.result_spec); a kernel has no backward,
so a gradient wanted through it is warned about, as calling it directly is.
"""
import warnings

import torch

NAMESPACE = "zyntax"
_library = None
_registered = {}

_TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
                 "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8,
                 "bool": torch.bool}
_ELEMENT_TYPES = {v: k for k, v in _TORCH_DTYPES.items()}


def available():
    """Whether this torch can register operators from Python."""
    lib = getattr(torch, "library", None)
    return lib is not None and hasattr(lib, "Library")


def _lib():
    global _library
    if _library is None:
        _library = torch.library.Library(NAMESPACE, "DEF")
    return _library


def define(name, schema, compute, meta, differentiable=True):
    """torch.ops.zyntax.<name>: `compute` (a function of tensors with its own
    autograd, e.g. an autograd.Function) on CPU tensors, `meta` on meta
    tensors. Not differentiable: a gradient wanted through it is warned
    about and the result is detached."""
    if name in _registered:
        raise ValueError("torch.ops.%s.%s is registered already" % (NAMESPACE, name))
    lib = _lib()
    lib.define("%s%s" % (name, schema))

    def on_cpu(*args):
        with torch.no_grad():
            return compute(*args)

    def with_autograd(*args):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if any(t.device.type == "meta" for t in tensors):
            return meta(*args)
        if differentiable:
            return compute(*args)
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            warnings.warn("torch.ops.%s.%s has no backward: its result is detached from autograd, so no gradient "
                          "flows back to its inputs" % (NAMESPACE, name), stacklevel=3)
        with torch.no_grad():
            return compute(*args)

    lib.impl(name, on_cpu, "CPU")
    lib.impl(name, meta, "Meta")
    lib.impl(name, with_autograd, "Autograd")
    _registered[name] = getattr(getattr(torch.ops, NAMESPACE), name)
    return _registered[name]


def register(kernel, name=None):
    """A program's kernel (prog.kernel(name) or prog.<name>) as
    torch.ops.zyntax.<name>: its arrays as tensors, then its host values as
    floats or ints, in its signature's order. Returns the operator."""
    handle = kernel._handle
    name = name or handle.name
    params = handle.params
    hosts = handle.host_values  # [(name, "int" or "float")]
    schema = "(%s) -> Tensor" % ", ".join(["Tensor %s" % p[0] for p in params] + ["%s %s" % (kind, h) for h, kind in hosts])
    n = len(params)

    def compute(*args):
        return kernel(*args[:n], **{h: v for (h, _), v in zip(hosts, args[n:])})

    def meta(*args):
        specs = []
        for a in args[:n]:
            if a.dtype not in _ELEMENT_TYPES:
                raise TypeError("kernel %s: %s tensors have no zyntax element type" % (handle.name, a.dtype))
            specs.append((_ELEMENT_TYPES[a.dtype], list(a.shape)))
        dtype, shape = handle.result_spec(specs, {h: v for (h, _), v in zip(hosts, args[n:])})
        return torch.empty(shape, dtype=_TORCH_DTYPES[dtype], device="meta")

    return define(name, schema, compute, meta, differentiable=False)
