#pragma once

#include <memory>

#include "backends/cuda/cuda_gpu.hpp"
#include "runtime/device.hpp"

namespace zyntax {

// An NVIDIA GPU as a device: kernels planned by plan/gpu_plan for the GPU's
// own target description (codegen/llvm/nvptx/nvptx_target), compiled to PTX
// for the GPU's architecture (nvptx_compiler), loaded by the driver once per
// kernel (a module cache keyed by the kernel's hash), launched with
// the plan's threads per block over enough blocks to cover the outer
// parallel loop (grid-stride beyond that). Each run has a stream of its own
// (runs from several host threads overlap). Inputs the GPU already holds
// (Tensor::mirror: an earlier kernel's output, a tensor placed here with
// copy_in) are read where they are; views of mapped host memory
// (share_host, to_device(copy=false)) are read in place; other inputs are
// copied to device memory from the GPU's pool, and kept there for the next
// kernel when the tensor is placed on this GPU. The result stays in the
// GPU's memory as the output tensor's mirror, copied back when the host
// first reads it (a reduction's result comes back at once). Kernels the plan
// cannot compile, and a failed runtime check, go where the runtime's
// fallback policy sends them (runtime/device.hpp).
std::unique_ptr<Device> make_cuda_device(std::unique_ptr<cuda::Gpu> gpu);

// The GPU behind a cuda device, null for other devices.
cuda::Gpu* cuda_gpu_of(Device& device);

}  // namespace zyntax
