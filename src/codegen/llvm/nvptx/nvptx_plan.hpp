// The CIR passes that make a kernel what the NVPTX backend compiles: tile
// values rewritten to loops (once every size is known), then the nest of
// parallel loops collapsed into one that the grid's threads share.
// Shared by the cuda device and `zyntax compile --backend nvptx`.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::codegen {

struct GpuPlan {
  std::optional<cir::Kernel> kernel;  // none: the GPU cannot run it
  std::string why_not;                // and why
  bool writes_whole_output = false;   // the output needs no zero-filling
};

GpuPlan plan_gpu_kernel(const cir::Kernel& k);

}  // namespace zyntax::codegen
