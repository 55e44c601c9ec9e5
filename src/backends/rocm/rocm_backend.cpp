// The rocm backend: every AMD GPU the HIP runtime reports, as "rocm:N".
// The runtime is opened at run time, so the same binary runs everywhere:
// without ROCm or a GPU the backend has no device and says why.
#include "backends/rocm/rocm_device.hpp"

namespace zyntax {

void register_rocm_backend(DeviceRegistry& registry) {
  const rocm::Hip* hip = rocm::Hip::get();
  if (!hip) {
    registry.add_unavailable("rocm", "no AMD GPU: " + rocm::Hip::unavailable_reason(), /*gpu=*/true);
    return;
  }
  try {
    std::vector<std::unique_ptr<rocm::Gpu>> gpus = rocm::Gpu::open_all(*hip);
    if (gpus.empty()) registry.add_unavailable("rocm", "no AMD GPU: " + rocm::gpu_unavailable_reason(), /*gpu=*/true);
    std::string why;
    for (std::unique_ptr<rocm::Gpu>& gpu : gpus) {
      if (std::unique_ptr<Device> d = make_rocm_device(std::move(gpu), &why)) registry.add(std::move(d));
      else registry.add_unavailable("rocm", why, /*gpu=*/true);
    }
  } catch (const rocm::HipError& e) {
    registry.add_unavailable("rocm", std::string("the AMD GPU cannot be used: ") + e.what(), /*gpu=*/true);
  }
}

}  // namespace zyntax
