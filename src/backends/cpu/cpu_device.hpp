#pragma once

#include <memory>

#include "runtime/device.hpp"

namespace zyntax {

// The CPU device: kernels compiled to native code through LLVM and run on
// all cores (the outer parallel loop split over the thread pool), after the
// CPU schedules of plan/cpu_plan. Kernels the plan cannot compile, and a
// failed runtime check, go where the runtime's fallback policy sends them
// (runtime/device.hpp). `threads` > 0 gives the device a thread pool of its own of that
// size (a logical CPU device, "cpu:0"); 0 shares the process's pool.
std::unique_ptr<Device> make_llvm_cpu_device(const std::string& id, int threads = 0);

}  // namespace zyntax
