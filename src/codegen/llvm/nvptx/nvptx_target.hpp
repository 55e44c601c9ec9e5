// NVIDIA GPU architectures as LLVM 19's NVPTX target knows them, and what
// each offers the planner (target/gpu_target): a GpuTarget from an
// architecture's name (`zyntax compile --arch sm_90`, no GPU needed) or
// from a device's own properties (the cuda backend).
#pragma once

#include <optional>
#include <string>

#include "target/gpu_target.hpp"

namespace zyntax::codegen {

// A GPU architecture LLVM 19 compiles for, and the PTX version used.
struct NvptxArch {
  std::string name;         // "sm_80", "sm_90a"
  int capability = 0;       // 80, 90
  std::string ptx_feature;  // "+ptx78"
};

// "sm_80", "sm_90", "sm_90a", ... (also "80", "9.0"); none if not one LLVM 19 knows.
std::optional<NvptxArch> parse_nvptx_arch(const std::string& name);
// The architecture for a device of compute capability major.minor (the
// newest LLVM knows that the device can run), for the driver to finish:
// sm_90a for exactly 9.0 (H100, H200: the accelerated features run on no
// other capability), sm_90 for any later one.
NvptxArch nvptx_arch_for(int major, int minor);
// "sm_60, sm_61, ..." for messages.
std::string nvptx_arch_list();

// What GPUs of this architecture offer. Without a device to ask, the
// multiprocessors are those of the architecture's largest part (an A100's
// 108 for sm_80, an H100's 132 for sm_90), and a block's shared memory the
// architecture's opt-in maximum (227 KiB on sm_90, 163 KiB on sm_80, 99 KiB
// on sm_86 and sm_89, 48 KiB before sm_70). Matrix units (f16, bf16, TF32)
// and asynchronous copies from sm_80; tensor copies (cp.async.bulk.tensor)
// and warpgroup matrix units (wgmma) on sm_90a only (not sm_90).
GpuTarget nvptx_gpu_target(const NvptxArch& arch);

// A device's own: its multiprocessors, its opt-in shared memory per block,
// its threads per block and warp size, on the architecture's features.
struct NvidiaDeviceLimits {
  int multiprocessors = 0;
  int64_t shared_per_block_optin = 0;
  int max_threads_per_block = 0;
  int warp_size = 32;
};
GpuTarget nvptx_gpu_target(const NvptxArch& arch, const NvidiaDeviceLimits& device);

}  // namespace zyntax::codegen
