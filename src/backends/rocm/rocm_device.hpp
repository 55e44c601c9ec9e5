#pragma once

#include <memory>

#include "backends/rocm/rocm_gpu.hpp"
#include "runtime/device.hpp"

namespace zyntax {

// An AMD GPU as a device (backends/module_gpu_device.hpp): kernels planned
// for the GPU's architecture (codegen/llvm/amdgpu/amdgpu_target, with the
// GPU's own compute units and limits), compiled to an HSA code object
// (amdgpu_compiler; kept in the disk cache) and loaded by the HIP runtime.
// Null, with *why, for a GPU whose architecture the code generator does
// not target.
std::unique_ptr<Device> make_rocm_device(std::unique_ptr<rocm::Gpu> gpu, std::string* why);

// The GPU behind a rocm device, null for other devices.
rocm::Gpu* rocm_gpu_of(Device& device);

}  // namespace zyntax
