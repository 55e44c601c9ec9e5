#pragma once

#include <memory>
#include <string>

#include "backends/metal/metal_gpu.hpp"
#include "runtime/device.hpp"

namespace zyntax {

// A Metal device: kernels planned for its GpuTarget (plan/gpu_plan),
// written as MSL (codegen/msl), compiled into a library and made a compute
// pipeline once per kernel (a cache keyed by the kernel's hash; the MSL
// also goes into the disk cache); each run puts its inputs into buffers in
// shared storage (kept in a size-class pool for the next run), dispatches
// a threadgroup per block of the plan (in rows, so that every block has its
// own), waits for the command buffer, and reads the output in place.
// Kernels the MSL emitter cannot write, that need more buffers or argument
// bytes than Metal takes, or tensors larger than one buffer may hold, and
// runs whose checks fail, go where the runtime's fallback policy sends them
// (runtime/device.hpp).
std::unique_ptr<Device> make_metal_device(std::unique_ptr<metal::Gpu> gpu);

// The MSL a Metal device would run for a specialised kernel, and why not
// where it would not (for `zyntax compile --backend metal`).
std::string metal_msl_of(Device& device, const cir::Kernel& kernel, std::string* why_not);

// Adds a device for every GPU `runtime` finds ("metal:N") to `registry`,
// or, where it finds none, says why.
void add_metal_devices(DeviceRegistry& registry, metal::ObjcRuntime& runtime);

}  // namespace zyntax
