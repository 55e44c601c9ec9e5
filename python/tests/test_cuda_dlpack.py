"""torch CUDA tensors through DLPack on a zyntax CUDA device: taken on the
GPU and given back as CUDA tensors over the GPU memory the results are in,
never through host memory. Runs only where torch has CUDA and zyntax has the
GPU (ZYNTAX_TEST_CUDA picks one other than cuda:0)."""
import os

import numpy as np
import pytest

import zyntax
from conftest import SCALE_ADD

torch = pytest.importorskip("torch")

GPU = os.environ.get("ZYNTAX_TEST_CUDA", "cuda:0")
pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or GPU not in [d["id"] for d in zyntax.devices()],
    reason="needs torch with CUDA and the zyntax device " + GPU)

SOURCE = SCALE_ADD + """
def widen(x: tensor[n, bf16]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = f32(x[i]) * 2.0
    }
}

def total(x: tensor[n, f32]) {
    return compute(x) {
        @kernel reduce(+)
        for i in 0..n:
            yield x[i]
    }
}
"""


@pytest.fixture(scope="module")
def prog():
    return zyntax.compile(SOURCE, device=GPU, name="cuda_dlpack.zynml")


@pytest.fixture(scope="module")
def tdev():
    return torch.device(GPU)


def test_a_kernel_on_cuda_tensors_returns_a_cuda_tensor_without_host_copies(prog, tdev):
    x, y = torch.randn(257, 33, device=tdev), torch.randn(257, 33, device=tdev)
    z = prog.scale_add(x, y, by=1.5)
    assert isinstance(z, torch.Tensor) and z.device == x.device and z.dtype == torch.float32
    # Both inputs were copied on the GPU, none from host memory.
    assert zyntax.device(GPU).last_run_bytes_copied_in() == 0
    torch.testing.assert_close(z, x * 1.5 + y, rtol=1e-6, atol=1e-6)


def test_the_result_is_the_gpu_memory_zyntax_holds(prog, tdev):
    dev = zyntax.device(GPU)
    x, y = torch.randn(64, 8, device=tdev), torch.ones(64, 8, device=tdev)
    ax, ay = zyntax.Array.from_dlpack(x, dev), zyntax.Array.from_dlpack(y, dev)
    assert ax.device == GPU and ax.device_address != 0  # the GPU holds it
    out = prog.kernel("scale_add")._handle.run(dev, [ax, ay], {"by": 2.0})
    assert dev.last_run_bytes_copied_in() == 0
    assert out.device_address != 0
    t = zyntax.from_array(out, like_torch=True, on_device=True)
    assert t.is_cuda and t.data_ptr() == out.device_address  # shared, not copied
    torch.testing.assert_close(t, x * 2 + 1)
    del out  # the tensor keeps the memory
    torch.testing.assert_close(t.clone(), x * 2 + 1)
    # Without on_device, the host's copy (as before).
    again = prog.kernel("scale_add")._handle.run(dev, [ax, ay], {"by": 2.0})
    assert zyntax.from_array(again, like_torch=True).device.type == "cpu"
    np.testing.assert_allclose(zyntax.from_array(again, like_torch=False), (x * 2 + 1).cpu().numpy(), rtol=1e-6)


def test_results_feed_the_next_kernel_on_the_gpu(prog, tdev):
    x, y = torch.randn(100, 10, device=tdev), torch.randn(100, 10, device=tdev)
    z = prog.scale_add(x, y, by=0.5)
    w = prog.scale_add(z, z, by=3.0)
    assert w.is_cuda and zyntax.device(GPU).last_run_bytes_copied_in() == 0
    torch.testing.assert_close(w, (x * 0.5 + y) * 4, rtol=1e-5, atol=1e-5)


def test_pending_torch_work_is_waited_for(prog, tdev):
    # x * 3 may still be running on torch's stream when zyntax takes it.
    x = torch.randn(4096, 1024, device=tdev)
    for _ in range(20):
        x = x * 1.0001
    y = x * 3
    z = prog.scale_add(y, torch.zeros_like(y), by=1.0)
    torch.testing.assert_close(z, y)


def test_bf16_and_strided(prog, tdev):
    x = torch.randn(1000, device=tdev).bfloat16()
    torch.testing.assert_close(prog.widen(x), x.float() * 2)
    a = torch.randn(40, 30, device=tdev)
    torch.testing.assert_close(prog.scale_add(a.t(), a.t(), by=1.0), a.t() * 2)  # a transposed view: made contiguous on the GPU


def test_empty(prog, tdev):
    e = torch.empty(0, 4, device=tdev)
    z = prog.scale_add(e, e, by=1.0)
    assert z.shape == (0, 4) and z.is_cuda


def test_a_reduction_comes_back_on_the_gpu(prog, tdev):
    x = torch.randn(10000, device=tdev)
    s = prog.total(x)
    assert s.is_cuda
    torch.testing.assert_close(s.double(), x.double().sum(), rtol=1e-4, atol=1e-3)


def test_cuda_tensors_on_another_device_go_through_host_memory(tdev):
    cpu = zyntax.compile(SOURCE, device="cpu")
    x = torch.randn(5, 7, device=tdev)
    z = cpu.scale_add(x, x, by=1.0)
    assert z.device == x.device
    torch.testing.assert_close(z, x * 2)
    with pytest.raises(ValueError, match="in the memory of " + GPU):
        zyntax.Array.from_dlpack(x, zyntax.device("cpu"))


def test_autograd_ops_stay_on_the_gpu(tdev):
    import zyntax.torch as zt
    a = torch.randn(64, 32, device=tdev, requires_grad=True)
    b = torch.randn(32, 48, device=tdev, requires_grad=True)
    y = zt.matmul(a, b, device=GPU)
    assert y.is_cuda
    torch.testing.assert_close(y, a @ b, rtol=1e-4, atol=1e-4)
    y.sum().backward()
    torch.testing.assert_close(a.grad, torch.ones(64, 48, device=tdev) @ b.t(), rtol=1e-4, atol=1e-4)
    x = torch.randn(16, 100, device=tdev)
    torch.testing.assert_close(zt.softmax(x, device=GPU), torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
