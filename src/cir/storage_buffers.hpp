// The storage buffers a GPU kernel binds, which a target may limit (Vulkan's
// maxPerStageDescriptorStorageBuffers, WebGPU's
// maxStorageBuffersPerShaderStage): one per tensor parameter, a reduction's
// accumulators, and the status words its checks write. A GLSL reduction
// accumulates in a buffer of its own (in f64 where it sums floats), plus the
// best value and whether one was seen for argmin/argmax; WGSL accumulates in
// the output itself and adds only argmin/argmax's two.
// CUDA binds no buffers but passes them as parameters, which it limits.
#pragma once

#include <cstdint>
#include <string>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::cir {

int gpu_storage_buffers(const Kernel& k, GpuApi api);

// The bytes of parameters a CUDA kernel takes (its entry point,
// codegen/llvm/nvptx): a pointer per tensor, each scalar and size, a
// reduction's accumulators and the status word, 8 bytes each, and 128 per
// tensor map of a warpgroup product (added by the code generator; not
// counted here, where none exist yet).
int64_t gpu_parameter_bytes(const Kernel& k);

// What `k` would take beyond `target`'s limits on storage buffers or
// parameter bytes ("bind 9 storage buffers ..., more than the 8 ..."), or ""
// where it fits.
std::string gpu_binding_excess(const Kernel& k, const GpuTarget& target);

}  // namespace zyntax::cir
