// A kernel's GPU plan for an NVIDIA architecture named as `--arch` takes it
// ("sm_80", "sm_90"), with that architecture's shared memory per block.
#pragma once

#include <optional>
#include <string>

#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "codegen/llvm/nvptx/nvptx_plan.hpp"

namespace zyntax::testing {

struct PlannedForArch {
  std::optional<cir::Kernel> kernel;
  std::string why_not, schedule;
  int block_threads = 0;
  int64_t shared_bytes = 0;
  bool writes_whole_output = false;
};

inline PlannedForArch plan_for_arch(const cir::Kernel& k, const std::string& arch_name) {
  codegen::NvptxArch arch = *codegen::parse_nvptx_arch(arch_name);
  codegen::GpuPlan p = codegen::plan_gpu_kernel(k, codegen::nvptx_max_shared_bytes(arch), arch.capability);
  return {p.kernel, p.why_not, p.schedule, p.block_threads, p.shared_bytes, p.writes_whole_output};
}

}  // namespace zyntax::testing
