#pragma once

#include <memory>
#include <string>

#include "runtime/device.hpp"

namespace zyntax {

// A CPU device whose kernels run on the reference executor.
std::unique_ptr<Device> make_reference_device(const std::string& id);

}  // namespace zyntax
