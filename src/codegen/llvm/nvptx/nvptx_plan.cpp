#include "codegen/llvm/nvptx/nvptx_plan.hpp"

#include "cir/output_coverage.hpp"
#include "cir/pass_manager.hpp"
#include "cir/passes/collapse_parallel_loops.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "codegen/llvm/ir_emitter.hpp"

namespace zyntax::codegen {

GpuPlan plan_gpu_kernel(const cir::Kernel& kernel) {
  GpuPlan plan;
  plan.writes_whole_output = cir::writes_whole_output(kernel);
  std::vector<cir::Pass> passes;
  if (unsupported_reason(kernel, EmitTarget::Nvptx)) {
    if (!kernel.dims.empty()) {
      plan.why_not = "tile values are rewritten to loops once every size is known";
      return plan;
    }
    if (!cir::scalarize_tiles(kernel, &plan.why_not)) return plan;
    passes.push_back({"scalarize_tiles", [](const cir::Kernel& k) { return *cir::scalarize_tiles(k, nullptr); }});
  }
  passes.push_back({"collapse_parallel_loops", [](const cir::Kernel& k) { return cir::collapse_parallel_loops(k); }});
  cir::Kernel k = cir::run_passes(kernel, "specialize", passes);
  if (auto why = unsupported_reason(k, EmitTarget::Nvptx)) {
    plan.why_not = *why;
    return plan;
  }
  plan.kernel = std::move(k);
  return plan;
}

}  // namespace zyntax::codegen
