#include "plan/cpu_plan.hpp"

#include "cir/flop_count.hpp"
#include "cir/output_coverage.hpp"
#include "cir/pass_manager.hpp"
#include "cir/passes/interchange_reductions.hpp"
#include "cir/passes/partition_guarded_loops.hpp"
#include "cir/passes/read_each_element_once.hpp"
#include "cir/passes/reuse_row_values.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/serialize_atomic_loops.hpp"
#include "cir/passes/schedule_cpu_reduce.hpp"
#include "cir/passes/schedule_matmul.hpp"
#include "cir/passes/vectorize_wide_sums.hpp"
#include "cir/passes/widen_task_loop.hpp"
#include "plan/kernel_support.hpp"

namespace zyntax {

CpuPlan plan_cpu_kernel(const cir::Kernel& kernel, int threads, int vector_bits) {
  CpuPlan plan;
  plan.writes_whole_output = cir::writes_whole_output(kernel);
  std::vector<cir::Pass> passes;
  if (cpu_unsupported_reason(kernel)) {
    if (!kernel.dims.empty()) {
      plan.why_not = "tile values are rewritten to loops once every size is known";
      return plan;
    }
    if (!cir::scalarize_tiles(kernel, &plan.why_not)) return plan;
    passes.push_back({"scalarize_tiles", [](const cir::Kernel& k) { return *cir::scalarize_tiles(k, nullptr); }});
  }
  if (threads < kCpuAtomicThreads)
    passes.push_back({"serialize_atomic_loops", [](const cir::Kernel& k) { return cir::serialize_atomic_loops(k); }});
  // A whole-tensor reduction: a chunk per task, folded in a register.
  passes.push_back({"schedule_cpu_reduce", [threads](const cir::Kernel& k) {
                      std::optional<cir::Kernel> s = cir::schedule_cpu_reduce(k, 4 * int64_t(threads));
                      return s ? *s : k;
                    }});
  cir::MatMulSchedule mm = cir::cpu_matmul_schedule(vector_bits, threads);
  passes.push_back({"schedule_matmul", [mm](const cir::Kernel& k) {
                      std::optional<cir::Kernel> s = cir::schedule_matmul(k, mm);
                      return s ? *s : k;
                    }});
  passes.push_back({"reuse_row_values", [](const cir::Kernel& k) { return cir::reuse_row_values(k); }});
  passes.push_back({"interchange_reductions", [](const cir::Kernel& k) { return cir::interchange_reductions(k); }});
  passes.push_back({"partition_guarded_loops", [](const cir::Kernel& k) { return cir::partition_guarded_loops(k); }});
  passes.push_back({"vectorize_wide_sums", [vector_bits](const cir::Kernel& k) { return cir::vectorize_wide_sums(k, vector_bits); }});
  // The pool splits the outer loop into a few chunks per thread
  // (ThreadPool::parallel_for); a batch of one must still give each a share.
  if (threads > 1)
    passes.push_back({"widen_task_loop", [threads](const cir::Kernel& k) { return cir::widen_task_loop(k, 4 * int64_t(threads)); }});
  // Last: the schedules above match the expressions as written.
  passes.push_back({"read_each_element_once", [](const cir::Kernel& k) { return cir::read_each_element_once(k); }});
  cir::Kernel k = cir::run_passes(kernel, "specialize", passes);
  if (auto why = cpu_unsupported_reason(k)) {
    plan.why_not = *why;
    return plan;
  }
  std::optional<double> work = cir::count_operations(k);
  plan.one_thread = work && *work < kCpuOperationsToShare;
  plan.kernel = std::move(k);
  return plan;
}

}  // namespace zyntax
