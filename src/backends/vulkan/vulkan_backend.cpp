// The vulkan backend: every Vulkan device with a compute queue (and the
// 64-bit integers, 64-bit atomics and 8/16-bit storage the shaders use), as
// "vulkan:N". The loader is opened at run time, so the same binary runs
// where there is no Vulkan and says why it has no device.
#include "backends/vulkan/vulkan_device.hpp"

namespace zyntax {

void register_vulkan_backend(DeviceRegistry& registry) {
  std::vector<std::string> skipped;
  std::vector<std::unique_ptr<vulkan::Gpu>> gpus;
  try {
    gpus = vulkan::Gpu::open_all(&skipped);
  } catch (const vulkan::VulkanError& e) {
    registry.add_unavailable("vulkan", std::string("Vulkan cannot be used: ") + e.what(), /*gpu=*/true);
    return;
  }
  if (gpus.empty()) {
    std::string why = vulkan::Instance::get() ? "no Vulkan device with a compute queue" : "no Vulkan: " + vulkan::Instance::why_not();
    for (const std::string& s : skipped) why += "; " + s;
    registry.add_unavailable("vulkan", why, /*gpu=*/true);
  }
  for (std::unique_ptr<vulkan::Gpu>& gpu : gpus) registry.add(make_vulkan_device(std::move(gpu)));
}

}  // namespace zyntax
