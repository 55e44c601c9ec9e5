"""zyntax.dist under mpirun (tests/mpi/run_mpi_programs.sh runs it with 2
and 3 ranks, and alone): every rank checks what it receives against what
it can compute for itself, on NumPy arrays of several dtypes and on torch
tensors, and prints one line when all hold."""
import sys

import numpy as np

import zyntax.dist as dist

r, n = dist.rank(), dist.world_size()


def rank_data(k, dtype, size):
    """What rank k holds: every rank can make every other rank's."""
    v = np.random.default_rng(100 + k).integers(0, 50, size)
    return v.astype(dtype) if dtype != np.bool_ else v % 3 == 0


DTYPES = (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
          np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)
for dtype in DTYPES:
    for size in (0, 1, 7, 1001):
        every = np.stack([rank_data(k, dtype, size) for k in range(n)])
        for op, reduce in (("sum", np.sum), ("max", np.max), ("min", np.min), ("mean", None)):
            if dtype == np.bool_ and op == "mean":
                continue
            x = rank_data(r, dtype, size)
            got = dist.all_reduce(x, op=op)
            assert got is x, "a contiguous array is reduced in place"
            if op == "mean":
                if np.issubdtype(dtype, np.floating):
                    want = (every.astype(np.float64).sum(axis=0) / n).astype(dtype)
                else:  # the sum wraps in the dtype, then divides toward zero
                    wrapped = every.sum(axis=0, dtype=dtype).astype(np.int64)
                    want = (np.sign(wrapped) * (np.abs(wrapped) // n)).astype(dtype)
            elif dtype == np.bool_:
                want = every.any(axis=0) if op in ("sum", "max") else every.all(axis=0)
            else:
                want = reduce(every, axis=0).astype(dtype) if op != "sum" else every.sum(axis=0, dtype=dtype)
            tol = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-12}.get(dtype, 0)
            ok = np.allclose(got, want, rtol=tol, atol=tol) if tol else np.array_equal(got, want)
            assert ok, (np.dtype(dtype).name, size, op, got[:5], want[:5])
b = dist.all_reduce(np.array([r == 0, False, True]), op="max")
assert b.tolist() == [True, False, True]
mean = dist.all_reduce(np.full(3, float(r), np.float32), op="mean")
assert np.allclose(mean, (n - 1) / 2)
assert dist.all_reduce(np.zeros(0, np.float32)).shape == (0,)
root = dist.broadcast(np.full((2, 3), r, np.int64), root=n - 1)
assert (root == n - 1).all()
g = dist.all_gather(np.full((r + 1, 2), r, np.int32))
assert g.shape == (n * (n + 1) // 2, 2) and g[-1, 0] == n - 1
strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
out = dist.all_reduce(strided)
assert np.array_equal(out, strided * n)
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    t = torch.arange(5, dtype=torch.float32) + r
    same = dist.all_reduce(t, op="sum")
    assert same is t and torch.equal(t, torch.arange(5, dtype=torch.float32) * n + n * (n - 1) / 2)
    gt = dist.all_gather(torch.full((1, 2), float(r)))
    assert tuple(gt.shape) == (n, 2)
print("python rank %d of %d ok" % (r, n))
sys.stdout.flush()
