// Arrays and GPU memory held by other libraries (zyntax/device_memory.hpp):
// memory of a CUDA GPU taken in as a tensor whose bytes the GPU holds (a
// cuda::GpuMirror, as a kernel's output there), and an array's mirror
// handed out.
#include "zyntax/device_memory.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "api/api_internal.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/gpu_mirror.hpp"

namespace zyntax {

namespace {

cuda::Gpu& gpu_of(const DeviceImpl& dev, const std::string& op) {
  cuda::Gpu* gpu = dev.devices.size() == 1 ? cuda_gpu_of(*dev.device) : nullptr;
  if (!gpu) throw ComputeError(op + ": " + dev.description.id + " is not a GPU of the CUDA backend (cuda:N)");
  return *gpu;
}

}  // namespace

Array array_from_device_memory(const ComputeDevice& device, uint64_t address, ElementType type, std::vector<size_t> shape) {
  const std::string op = "array_from_device_memory";
  if (!device.impl()) throw ComputeError(op + ": the device was moved from");
  const DeviceImpl& dev = *device.impl();
  cuda::Gpu& gpu = gpu_of(dev, op);
  size_t n = api::product(shape);  // ShapeError past 63 bits
  if (shape.size() > 64) throw ShapeError(op + ": " + std::to_string(shape.size()) + " axes; tensors have at most 64");
  if (n > 0 && address == 0) throw ShapeError(op + ": no memory for " + std::to_string(n) + " elements");
  Tensor t = Tensor::for_overwrite(api::dtype_of(type), {static_cast<int64_t>(n)});
  try {
    cuda::DeviceBuffer b(gpu, std::max<size_t>(t.nbytes(), 1));
    if (t.nbytes() > 0) {
      const cuda::Driver& d = gpu.driver();
      gpu.bind();
      // The producer's work runs on streams of its own: all of it first.
      d.check(d.cuCtxSynchronize(), "waiting for the work queued on " + gpu.id());
      d.check(d.cuMemcpyDtoDAsync(b.address(), address, t.nbytes(), gpu.stream()),
              "copying " + std::to_string(t.nbytes()) + " bytes on " + gpu.id());
      gpu.synchronize();
    }
    // As a kernel's output: the host's bytes filled only when the host reads them.
    t.set_mirror(std::make_shared<cuda::GpuMirror>(gpu.id(), std::move(b)), /*host_current=*/false);
  } catch (const cuda::CudaError& e) {
    throw ComputeError(op + ": " + e.what());
  } catch (const DataError& e) {  // out of memory
    throw ComputeError(op + ": " + e.what());
  }
  t.set_device(gpu.id());
  return Array(api::wrap(dev, std::move(t)), std::move(shape));
}

DeviceMemory device_memory_of(const Array& a) {
  DeviceMemory mem;
  if (!a.buffer().impl()) return mem;
  const std::string device = a.buffer().device();
  if (device.rfind("cuda:", 0) != 0) return mem;
  std::shared_ptr<const cuda::GpuMirror> m = cuda::gpu_mirror_of(a.buffer().impl()->tensor, device);
  if (!m) return mem;
  mem.address = m->address();
  mem.ordinal = std::stoi(device.substr(5));
  mem.keep = std::move(m);
  return mem;
}

size_t last_run_bytes_copied_in(const ComputeDevice& device) {
  if (!device.impl() || device.impl()->devices.size() != 1) return 0;
  return cuda_last_run_bytes_copied_in(*device.impl()->device);
}

}  // namespace zyntax
