// The cuda backend: every NVIDIA GPU the CUDA driver reports, as "cuda:N".
// The driver is opened at run time, so the same binary runs everywhere:
// without a driver or a GPU the backend has no device and says why.
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_driver.hpp"

namespace zyntax {

void register_cuda_backend(DeviceRegistry& registry) {
  try {
    std::vector<std::unique_ptr<cuda::Gpu>> gpus = cuda::Gpu::open_all();
    if (gpus.empty()) registry.add_unavailable("cuda", "no CUDA GPU: " + cuda::gpu_unavailable_reason(), /*gpu=*/true);
    for (std::unique_ptr<cuda::Gpu>& gpu : gpus) registry.add(make_cuda_device(std::move(gpu)));
  } catch (const cuda::CudaError& e) {
    registry.add_unavailable("cuda", std::string("the GPU cannot be used: ") + e.what(), /*gpu=*/true);
  }
}

}  // namespace zyntax
