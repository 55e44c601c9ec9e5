#pragma once

#include <memory>

#include "backends/vulkan/vulkan_gpu.hpp"
#include "runtime/device.hpp"

namespace zyntax {

// A Vulkan device: kernels planned for its GpuTarget (plan/gpu_plan),
// written as GLSL (codegen/glsl), compiled to SPIR-V in process and made a
// compute pipeline once per kernel (a cache keyed by the kernel's hash);
// each run puts its inputs into storage buffers (kept in a size-class pool
// for the next run; host-visible where the device has such device-local
// memory, else device-local ones filled through staging buffers),
// dispatches a workgroup per block of the plan (in rows, so that every
// block has its own), waits, and reads the output back.
// Kernels the GLSL emitter cannot write, that need more bindings or push
// constants than the device has, or tensors larger than one buffer may
// hold, and runs whose checks fail, go where the runtime's fallback policy
// sends them (runtime/device.hpp).
std::unique_ptr<Device> make_vulkan_device(std::unique_ptr<vulkan::Gpu> gpu);

// The GLSL a Vulkan device would run for a specialised kernel, and why not
// where it would not (for `zyntax compile --backend vulkan`).
std::string vulkan_glsl_of(Device& device, const cir::Kernel& kernel, std::string* why_not);

}  // namespace zyntax
