// The process's devices: every device of every backend this build enabled
// (CMake's ZYNTAX_BACKENDS), opened once: the host's backends (cpu,
// reference) on first use, the others when first needed. A backend lives in
// src/backends/<name>/ and registers its devices with one function,
// register_<name>_backend(DeviceRegistry&); this file's registry.cpp calls
// each enabled one, in the order CMake lists them.
#pragma once

#include <string>
#include <vector>

#include "runtime/device.hpp"

namespace zyntax {

DeviceRegistry& device_registry();

// The backends this build enabled, in order ("cpu", "reference", "cuda").
const std::vector<std::string>& enabled_backends();

}  // namespace zyntax
