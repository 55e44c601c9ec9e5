"""Collectives between the ranks of a job started by mpirun
(``mpirun -np N python3 train.py``), on NumPy arrays and torch tensors:

    import zyntax.dist as dist
    g = dist.all_reduce(grad, op="mean")   # in place where it can be, and returned
    w = dist.broadcast(w, root=0)
    rows = dist.all_gather(part, axis=0)   # sizes along axis may differ by rank

A process not started by mpirun (or a build without MPI) is rank 0 of 1:
the collectives return their argument as it is. Ranks that disagree on a
tensor's dtype or shape, or a rank that does not answer within the timeout
(ZYNTAX_DIST_TIMEOUT_S, else 60 s), raise RuntimeError on every rank naming
the ranks and the operation, instead of hanging.

NumPy arrays that are C-contiguous and writeable, and CPU torch tensors that
are contiguous, are reduced in place (the same memory); anything else is
copied (a GPU tensor through the host) and copied back."""
import ctypes
import os

import numpy as np

from . import _zyntax

__all__ = ["available", "rank", "world_size", "barrier", "all_reduce", "broadcast", "all_gather", "set_timeout"]


def _load_mpi_globally():
    # Open MPI's components are plug-ins that look for MPI's own symbols in
    # the process: a module opened with Python's RTLD_LOCAL hides them.
    for name in ("libmpi.so.40", "libmpi.so"):
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            continue


if _zyntax.dist_built_with_mpi():
    _load_mpi_globally()


def available():
    """Whether this build has MPI (else every process is rank 0 of 1)."""
    return bool(_zyntax.dist_built_with_mpi())


def rank():
    return _zyntax.dist_rank() if available() else 0


def world_size():
    return _zyntax.dist_size() if available() else 1


def set_timeout(seconds):
    if available():
        _zyntax.dist_set_timeout(float(seconds))


def barrier():
    if available():
        _zyntax.dist_barrier()


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _in_place(x, collective):
    """Runs collective(ndarray) on x's own memory where it can, else on a
    copy written back; returns x."""
    if _is_torch(x):
        import torch
        if x.device.type == "cpu" and x.is_contiguous() and x.dtype != torch.bfloat16:
            collective(x.detach().numpy())
            return x
        host = x.detach().to("cpu").contiguous()
        if host.dtype == torch.bfloat16:
            raise TypeError("zyntax.dist: bfloat16 tensors have no NumPy view; convert them first")
        arr = host.numpy()
        collective(arr)
        with torch.no_grad():
            x.copy_(torch.from_numpy(arr).to(x.device))
        return x
    if isinstance(x, np.ndarray) and x.flags.c_contiguous and x.flags.writeable:
        collective(x)
        return x
    arr = np.ascontiguousarray(x).copy()
    collective(arr)
    return arr


def all_reduce(x, op="sum"):
    """Every rank's x becomes the element-wise op ("sum" or "+", "max", "min",
    "mean") of all ranks' x."""
    if op not in ("sum", "+", "max", "min", "mean"):
        raise ValueError("zyntax.dist.all_reduce: unknown op %r (sum, max, min or mean)" % (op,))
    if not available():
        return x
    return _in_place(x, lambda a: _zyntax.dist_all_reduce(a, op))


def broadcast(x, root=0):
    """Every rank's x becomes root's."""
    if not 0 <= root < world_size():
        raise ValueError("zyntax.dist.broadcast: root %d is not a rank (ranks are 0 to %d)" % (root, world_size() - 1))
    if not available():
        return x
    return _in_place(x, lambda a: _zyntax.dist_broadcast(a, int(root)))


def all_gather(x, axis=0):
    """Every rank's x concatenated along axis, in rank order (a new array,
    or a new tensor on x's device for torch)."""
    if _is_torch(x):
        import torch
        return torch.from_numpy(all_gather(x.detach().to("cpu").contiguous().numpy(), axis)).to(x.device)
    arr = np.ascontiguousarray(x)
    if not available():
        return arr.copy()
    return _zyntax.dist_all_gather(arr, int(axis))
