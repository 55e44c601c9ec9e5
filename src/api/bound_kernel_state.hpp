// What a BoundKernel holds (made by Kernel::bind in api/program.cpp, run by
// api/bound_kernel.cpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/host_launch.hpp"
#include "zyntax/program.hpp"

namespace zyntax {

namespace api {
class DeferredOps;
}

struct BoundKernel::State {
  explicit State(ComputeDevice d) : device(std::move(d)) {}
  std::string name;
  ComputeDevice device;
  std::vector<Kernel::ArraySpec> inputs;
  Kernel::ArraySpec result;
  size_t result_bytes = 0;
  size_t bytes = 0;     // of the inputs and the result
  bool sized = false;  // the result's shape is known before the kernel runs
  // The device's launch on host memory; null where every run takes `general`.
  std::unique_ptr<HostLaunch> launch;
  api::DeferredOps* queue = nullptr;  // counts the fast path's launches as the device's
  // A run through the device's run(): its fallbacks, the profiler, errors
  // located in the program's source.
  std::function<Array(const std::vector<Array>&)> general;
};

}  // namespace zyntax
