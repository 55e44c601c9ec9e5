#include "backends/registry.hpp"

namespace zyntax {

// Each enabled backend's registration (enabled_backends.inc is written by
// CMake from ZYNTAX_BACKENDS: one ZYNTAX_BACKEND(name) line each).
#define ZYNTAX_BACKEND(name) void register_##name##_backend(DeviceRegistry& registry);
#include "enabled_backends.inc"
#undef ZYNTAX_BACKEND

DeviceRegistry& device_registry() {
  static DeviceRegistry* registry = [] {
    auto* r = new DeviceRegistry();  // never destroyed: devices may be in use until exit
#define ZYNTAX_BACKEND(name) register_##name##_backend(*r);
#include "enabled_backends.inc"
#undef ZYNTAX_BACKEND
    return r;
  }();
  return *registry;
}

const std::vector<std::string>& enabled_backends() {
  static const std::vector<std::string> names = {
#define ZYNTAX_BACKEND(name) #name,
#include "enabled_backends.inc"
#undef ZYNTAX_BACKEND
  };
  return names;
}

}  // namespace zyntax
