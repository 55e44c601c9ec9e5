"""Zyntax Compute from Python: compile ZynML, call its kernels on NumPy
arrays and PyTorch tensors.

    import numpy as np, zyntax
    prog = zyntax.compile('''
    def scale(x: tensor[n, f32], by: f32) {
        return compute(x) {
            @kernel elementwise
            for i in 0..n:
                out[i] = x[i] * by
        }
    }''')
    y = prog.scale(np.arange(4, dtype=np.float32), by=2.0)   # a NumPy array

Arrays go in through DLPack: on a CPU device a contiguous array is read in
place (no copy); a torch tensor on the GPU a program runs on ("cuda:N") is
taken on that GPU, never through host memory; results come back as the
kind of array given (torch in, torch out; a CUDA tensor in, a CUDA tensor
out, over the GPU memory the result is in). Errors: ProgramError (the program does not compile: every
diagnostic, located), ShapeError (a ValueError naming the kernel, the
argument and both shapes), ComputeError (what went wrong while running).
"""
from . import _zyntax
from ._zyntax import Array, ComputeError, Device, ProgramError, ShapeError

__version__ = _zyntax.__version__
__all__ = ["compile", "load", "devices", "device", "Device", "Program", "KernelFunction", "Array", "ShapeError",
           "ComputeError", "ProgramError"]

_devices = {}


def device(id="auto"):
    """The compute device `id` ('auto', 'cpu', 'cpu:reference', 'cuda:0', 'vulkan:0'), opened once."""
    if isinstance(id, Device):
        return id
    if id not in _devices:
        _devices[id] = Device(id)
    return _devices[id]


_open = device  # for functions whose `device` parameter hides it


def devices():
    """Every device here, as dicts: id, type, name, backend, memory, cores."""
    return _zyntax.devices()


def _is_torch(x):
    return type(x).__module__.startswith("torch")


_NUMPY_TYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16", "i32": "int32",
                "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "bool": "bool"}


def to_array(x, dev, dtype=None):
    """x (NumPy array, torch tensor, zyntax.Array, or a Python number/list,
    made a NumPy array of `dtype`) on `dev`."""
    if isinstance(x, Array):
        return x
    if _is_torch(x):
        x = x.detach()
        if x.device.type == "cuda" and dev.id == "cuda:%d" % x.device.index:
            return Array.from_dlpack(x.contiguous(), dev)  # copied on the GPU, not through host memory
        if x.device.type != "cpu":
            x = x.cpu()
        return Array.from_dlpack(x, dev)
    import numpy as np
    if not hasattr(x, "__dlpack__"):
        x = np.asarray(x, dtype=dtype)
    if isinstance(x, np.ndarray) and not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder("="))  # DLPack takes this machine's byte order only
    if isinstance(x, np.ndarray) and not x.flags.writeable:
        x = x.copy()  # NumPy refuses to export read-only arrays
    return Array.from_dlpack(x, dev)


def from_array(a, like_torch, on_device=False):
    """A zyntax.Array as a torch tensor (like_torch) or a NumPy array, sharing its memory.
    With on_device (torch only), a CUDA tensor over the GPU memory holding
    the array where a CUDA GPU holds it (no copy), else a CPU tensor."""
    if like_torch:
        import torch.utils.dlpack
        return torch.utils.dlpack.from_dlpack(a.to_dlpack(on_device=on_device))
    import numpy as np
    # Over the array's own host memory, writable as NumPy's own results are
    # (NumPy marks what it takes through DLPack read-only); the view keeps
    # the array alive. Elsewhere (a GPU's array, bf16) a copy.
    interface = a.host_array_interface()
    if interface is not None:
        return np.asarray(_HostView(a, interface))
    return np.array(np.from_dlpack(a))


class _HostView:
    """What NumPy reads an array's host memory through; owns the array."""

    def __init__(self, array, interface):
        self.array = array
        self.__array_interface__ = interface


class _ProgramCallable:
    """What a program's kernels and functions share: a handle and a device."""
    _what = ""

    def __init__(self, handle, device):
        self._handle = handle
        self._device = device

    @property
    def name(self):
        return self._handle.name

    @property
    def signature(self):
        return self._handle.signature

    @property
    def params(self):
        return self._handle.params

    def __repr__(self):
        return "<zyntax %s %s>" % (self._what, self._handle.signature)


class KernelFunction(_zyntax.KernelCall, _ProgramCallable):
    """A kernel of a program, called like a function: arrays positionally
    (the compute block's inputs, in order), then host numbers, positionally
    in the signature's order or by name.

    A call whose arguments are NumPy arrays, CPU torch tensors or zyntax
    arrays, with host numbers by name, runs in C++ (_zyntax.KernelCall):
    bound once per signature, then the kernel and its result's memory; the
    rest takes _general."""
    _what = "kernel"

    def __init__(self, handle, device):
        _zyntax.KernelCall.__init__(self, handle, device)
        _ProgramCallable.__init__(self, handle, device)
        self._arrays = len(handle.params)
        self._host_names = [h[0] for h in handle.host_values]

    def _general(self, *arrays, device=None, **host_values):
        if len(arrays) > self._arrays:
            arrays, extra = arrays[:self._arrays], arrays[self._arrays:]
            if len(extra) > len(self._host_names):
                raise ShapeError("kernel %s takes %d arrays and %d host values, got %d arguments: %s" % (
                    self.name, self._arrays, len(self._host_names), self._arrays + len(extra), self.signature))
            for name, value in zip(self._host_names, extra):
                if name in host_values:
                    raise TypeError("kernel %s: host value '%s' given twice (positionally and by name)" % (self.name, name))
                host_values[name] = value
        if device is None:
            # Arrays and NumPy arrays as they are: no conversion in Python.
            out = self._handle.call(self._device, arrays, host_values)
            if out is not None:
                return from_array(out, any(_is_torch(a) for a in arrays)) if type(out) is Array else out
        dev = self._device if device is None else _open(device)
        torch_inputs = [a for a in arrays if _is_torch(a)]
        if any(t.requires_grad for t in torch_inputs):
            import warnings
            warnings.warn("kernel %s has no backward: its result is detached from autograd, so no gradient flows back "
                          "to its inputs (zyntax.torch's ops have backward passes; or wrap the kernel in a "
                          "torch.autograd.Function)" % self.name, stacklevel=3)
        params = self._handle.params
        inputs = [to_array(a, dev, _NUMPY_TYPES.get(params[i][1]) if i < len(params) else None)
                  for i, a in enumerate(arrays)]
        out = self._handle.run(dev, inputs, host_values)  # integers stay exact
        # A torch tensor comes back where the first torch input lives: from
        # the GPU's memory without a copy where the result is there already.
        on_gpu = bool(torch_inputs) and torch_inputs[0].device.type == "cuda"
        result = from_array(out, bool(torch_inputs), on_device=on_gpu)
        return result.to(torch_inputs[0].device) if torch_inputs else result


class ProgramFunction(_ProgramCallable):
    """A function of a program, called with its host code (its compute
    blocks fused as `zyntax run` fuses them) on the program's device:
    arguments in order (arrays, NumPy arrays, torch tensors, numbers),
    numbers also by name. Returns what the function returns: an array for a
    tensor (a torch tensor when given torch tensors), a number for a number,
    a tuple for a tuple."""
    _what = "function"

    def __init__(self, handle, device):
        super().__init__(handle, device)
        self._params = handle.params  # read once: calls are hot
        self._tensor_params = frozenset(i for i, p in enumerate(self._params) if p[1])

    @property
    def last_tier(self):
        """How the last call ran: "interpreted", "compiled" (compiled code,
        arguments bound by the interpreter) or "direct" (straight into the
        compiled code); "" before the first call."""
        return self._handle.last_tier

    def __call__(self, *args, **numbers):
        # Numbers and zyntax arrays go as they are (the common case of a
        # compiled host function: no conversion in Python at all).
        plain = True
        for i, a in enumerate(args):
            t = type(a)
            if t is Array or (t in _NUMBERS and i not in self._tensor_params):
                continue
            if t.__name__ == "ndarray" and t.__module__ == "numpy" and a.flags.writeable:
                continue  # read in place through DLPack
            plain = False
            break
        if plain:
            out = self._handle.call(args, numbers, self._device)
            if len(out) == 1:
                return out[0] if type(out[0]) in _NUMBERS else from_array(out[0], False)
            return tuple(r if type(r) in _NUMBERS else from_array(r, False) for r in out) if out else None
        dev = self._device
        params = self._params
        torch_inputs = [a for a in args if _is_torch(a)]
        inputs = []
        for i, a in enumerate(args):
            tensor = i < len(params) and params[i][1]
            if isinstance(a, Array) or _is_torch(a) or hasattr(a, "__dlpack__") or tensor:
                inputs.append(to_array(a, dev, _NUMPY_TYPES.get(params[i][2]) if i < len(params) and params[i][2] else None))
            else:
                inputs.append(a)
        out = self._handle.call(inputs, numbers, self._device)
        results = []
        for a in out:
            if not isinstance(a, Array):
                results.append(_torch_number(a) if torch_inputs else a)
                continue
            r = from_array(a, bool(torch_inputs))
            results.append(r.item() if getattr(r, "ndim", 1) == 0 and not torch_inputs else r)
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)


# Numbers a function call passes as they are (and gets back as they are).
_NUMBERS = (int, float)


def _torch_number(x):
    """A number as the 0-d tensor a function given torch tensors returns."""
    import torch
    return torch.tensor(x, dtype=torch.int64 if isinstance(x, int) else torch.float64)


class Program:
    """A compiled ZynML program: each kernel is an attribute (prog.softmax)
    and prog.kernel('name') finds one by name."""

    def __init__(self, program, device):
        self._program = program
        self._device = device
        self._functions = {}  # by name: looked up once
        self._kernels = {}

    @property
    def kernels(self):
        return list(self._program.kernel_names)

    @property
    def device(self):
        return self._device

    def kernel(self, name):
        k = self._kernels.get(name)
        if k is None:
            k = self._kernels[name] = KernelFunction(self._program.kernel(name), self._device)
        return k

    @property
    def functions(self):
        return list(self._program.function_names)

    def function(self, name):
        """The function `name`, called with its host code: ProgramError naming those there are if none."""
        f = self._functions.get(name)
        if f is None:
            f = self._functions[name] = ProgramFunction(self._program.function(name), self._device)
        return f

    def __getattr__(self, name):
        # Called only for names not found otherwise: what it finds is kept
        # as an attribute, so that `prog.name(...)` in a loop looks it up once.
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._program.kernel_names and name in self._program.function_names:
            found = self.function(name)
        else:
            if name not in self._program.kernel_names:
                try:
                    self._program.kernel(name)  # raises ProgramError with the kernels there are
                except ProgramError as e:
                    raise AttributeError(str(e)) from None
            found = self.kernel(name)
        self.__dict__[name] = found
        return found

    def __dir__(self):
        return list(super().__dir__()) + self.kernels

    def __repr__(self):
        return "<zyntax program on %s: %s>" % (self._device.id, ", ".join(self.kernels))


def compile(source, device="auto", name="<zynml>"):
    """Compiles ZynML source text; ProgramError with located diagnostics if it does not compile."""
    dev = _open(device)
    return Program(_zyntax.Program.from_source(source, name, dev), dev)


def load(path, device="auto"):
    """Compiles a .zynml file."""
    dev = _open(device)
    return Program(_zyntax.Program.load(str(path), dev), dev)


def load_ipython_extension(ipython):
    """`%load_ext zyntax`: the %%zynml cell magic."""
    from .ipython import register
    register(ipython)
