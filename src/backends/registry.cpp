#include "backends/registry.hpp"

#include <string>

namespace zyntax {

// Each enabled backend's registration (enabled_backends.inc is written by
// CMake from ZYNTAX_BACKENDS: one ZYNTAX_BACKEND(name) line each).
#define ZYNTAX_BACKEND(name) void register_##name##_backend(DeviceRegistry& registry);
#include "enabled_backends.inc"
#undef ZYNTAX_BACKEND

namespace {

bool is_host_backend(const std::string& name) { return name == "cpu" || name == "reference"; }

}  // namespace

DeviceRegistry& device_registry() {
  static DeviceRegistry* registry = [] {
    auto* r = new DeviceRegistry();  // never destroyed: devices may be in use until exit
    // The host's backends open now; the others (GPU drivers, slow to open)
    // when something beyond the host is first asked for.
#define ZYNTAX_BACKEND(name) \
  if (is_host_backend(#name))  \
    register_##name##_backend(*r); \
  else                         \
    r->defer(register_##name##_backend);
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
