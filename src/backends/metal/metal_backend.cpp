// The metal backend: every Apple GPU Metal reports (M1 and later, and the
// Macs' Metal 3 GPUs), as "metal:N". The Objective-C runtime and the Metal
// framework are opened at run time, so the same sources build everywhere
// and, away from macOS, the backend has no device and says why.
#include "backends/metal/metal_device.hpp"
#include "backends/metal/system_objc_runtime.hpp"

namespace zyntax {

void add_metal_devices(DeviceRegistry& registry, metal::ObjcRuntime& runtime) {
  std::string why;
  std::vector<std::unique_ptr<metal::Gpu>> gpus;
  try {
    gpus = metal::Gpu::open_all(runtime, &why);
  } catch (const metal::MetalError& e) {
    registry.add_unavailable("metal", std::string("Metal cannot be used: ") + e.what(), /*gpu=*/true);
    return;
  }
  if (gpus.empty()) registry.add_unavailable("metal", "no Metal GPU: " + why, /*gpu=*/true);
  for (std::unique_ptr<metal::Gpu>& gpu : gpus) registry.add(make_metal_device(std::move(gpu)));
}

void register_metal_backend(DeviceRegistry& registry) {
  metal::SystemObjcRuntime* runtime = metal::SystemObjcRuntime::get();
  if (!runtime) {
    registry.add_unavailable("metal", metal::SystemObjcRuntime::why_not(), /*gpu=*/true);
    return;
  }
  add_metal_devices(registry, *runtime);
}

}  // namespace zyntax
