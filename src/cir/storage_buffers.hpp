// The storage buffers a GPU kernel binds, which a target may limit (Vulkan's
// maxPerStageDescriptorStorageBuffers, WebGPU's
// maxStorageBuffersPerShaderStage): one per tensor parameter, a reduction's
// accumulators, and the status words its checks write. A GLSL reduction
// accumulates in a buffer of its own (in f64 where it sums floats), plus the
// best value and whether one was seen for argmin/argmax; WGSL accumulates in
// the output itself and adds only argmin/argmax's two.
#pragma once

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::cir {

int gpu_storage_buffers(const Kernel& k, GpuApi api);

}  // namespace zyntax::cir
