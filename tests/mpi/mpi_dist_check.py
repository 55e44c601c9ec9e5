"""zyntax.dist under mpirun (tests/mpi/run_mpi_programs.sh runs it with 2
and 3 ranks, and alone): every rank checks what it receives against what
it can compute for itself, on NumPy arrays of several dtypes and on torch
tensors, and prints one line when all hold."""
import sys

import numpy as np

import zyntax.dist as dist

r, n = dist.rank(), dist.world_size()
for dtype in (np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.int8):
    x = (np.arange(7) + r).astype(dtype)
    same = dist.all_reduce(x)
    assert same is x, "a contiguous array is reduced in place"
    want = (np.arange(7) * n + n * (n - 1) // 2).astype(dtype)
    assert np.array_equal(x, want), (dtype, x, want)
    m = dist.all_reduce((np.arange(7) + r).astype(dtype), op="max")
    assert np.array_equal(m, (np.arange(7) + n - 1).astype(dtype)), (dtype, m)
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
