#pragma once

#include <memory>

#include "backends/cuda/cuda_gpu.hpp"
#include "runtime/device.hpp"

namespace zyntax {

// An NVIDIA GPU as a device (backends/module_gpu_device.hpp): kernels
// planned for the GPU's own target description (codegen/llvm/nvptx/
// nvptx_target), compiled to PTX for its architecture (nvptx_compiler),
// which the driver compiles and loads; Hopper's warpgroup products read
// their factors through tensor maps the driver makes (tensor_maps.hpp).
std::unique_ptr<Device> make_cuda_device(std::unique_ptr<cuda::Gpu> gpu);

// The GPU behind a cuda device, null for other devices.
cuda::Gpu* cuda_gpu_of(Device& device);

}  // namespace zyntax
