#include "plan/cpu_plan.hpp"

#include <algorithm>
#include <stdexcept>

#include "cir/flop_count.hpp"
#include "cir/output_coverage.hpp"
#include "cir/pass_manager.hpp"
#include "cir/passes/interchange_reductions.hpp"
#include "cir/passes/jam_row_sums.hpp"
#include "cir/passes/partition_guarded_loops.hpp"
#include "cir/passes/read_each_element_once.hpp"
#include "cir/passes/reuse_row_values.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/serialize_atomic_loops.hpp"
#include "cir/passes/schedule_cpu_reduce.hpp"
#include "cir/passes/schedule_matmul.hpp"
#include "cir/passes/tile_transposed_loops.hpp"
#include "cir/passes/vectorize_wide_sums.hpp"
#include "cir/passes/widen_task_loop.hpp"
#include "plan/cpu_tuning.hpp"
#include "plan/kernel_support.hpp"

namespace zyntax {

CpuPlan plan_cpu_kernel(const cir::Kernel& kernel, int threads, int vector_bits, const TuningChoice& choice) {
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
  for (const auto& [name, value] : choice.knobs)
    if (!is_cpu_knob(name)) throw std::invalid_argument("tuning choice '" + choice.text() + "': no CPU knob '" + name + "'");
  int64_t chunks = std::max<int64_t>(choice.get("chunks", kCpuTasksPerThread * threads), 1);
  passes.push_back({"schedule_cpu_reduce", [chunks](const cir::Kernel& k) {
                      std::optional<cir::Kernel> s = cir::schedule_cpu_reduce(k, chunks);
                      return s ? *s : k;
                    }});
  cir::MatMulSchedule mm = cir::cpu_matmul_schedule(vector_bits, threads);
  mm.mr = static_cast<int>(choice.get("mr", mm.mr));
  mm.nr = static_cast<int>(choice.get("nr", mm.nr));
  mm.kc = std::max<int64_t>(choice.get("kc", mm.kc), 1);
  mm.mc = std::max<int64_t>(choice.get("mc", mm.mc), 1);
  mm.nc = std::max<int64_t>(choice.get("nc", mm.nc), 1);
  mm.a_in_place = static_cast<int>(choice.get("ain", -1));
  mm.b_in_place = static_cast<int>(choice.get("bin", -1));
  mm.row_groups = choice.get("rows", 0);
  int lanes = std::max(vector_bits / 32, 1);
  // B's panels are copied half a panel at a time: 1, 2 or 4 whole vectors.
  int vectors = mm.nr / lanes;
  bool chosen = choice.has("mr") || choice.has("nr");  // the rules' own blocks fit every target, scalar code too
  if (chosen && (mm.mr < 1 || mm.mr > 32 || mm.nr % lanes != 0 || (vectors != 1 && vectors != 2 && vectors != 4)))
    throw std::invalid_argument("tuning choice '" + choice.text() + "': no register block " + std::to_string(mm.mr) + "x" +
                                std::to_string(mm.nr) + " for " + std::to_string(vector_bits) + "-bit vectors");
  passes.push_back({"schedule_matmul", [mm](const cir::Kernel& k) {
                      std::optional<cir::Kernel> s = cir::schedule_matmul(k, mm);
                      return s ? *s : k;
                    }});
  passes.push_back({"reuse_row_values", [](const cir::Kernel& k) { return cir::reuse_row_values(k); }});
  passes.push_back({"tile_transposed_loops", [](const cir::Kernel& k) { return cir::tile_transposed_loops(k); }});
  int64_t tasks = std::max<int64_t>(choice.get("tasks", kCpuTasksPerThread * threads), 1), block = std::max<int64_t>(choice.get("block", 64), 1);
  // Too few rows for the threads (a matrix-vector product): the columns
  // split into blocks first, one per thread, each a task whose reductions
  // still turn inside out.
  int64_t reduction_tasks = std::max<int64_t>(choice.get("tasks", threads), 1);
  if (threads > 1)
    passes.push_back({"widen_task_loop", [tasks, block, reduction_tasks](const cir::Kernel& k) {
                        return cir::widen_task_loop(k, tasks, block, reduction_tasks);
                      }});
  int64_t jam = std::clamp<int64_t>(choice.get("jam", kCpuReductionJam), 1, 16);
  passes.push_back({"interchange_reductions", [jam, reduction_tasks](const cir::Kernel& k) {
                      return cir::interchange_reductions(k, static_cast<int>(jam), reduction_tasks);
                    }});
  passes.push_back({"partition_guarded_loops", [](const cir::Kernel& k) { return cir::partition_guarded_loops(k); }});
  passes.push_back({"vectorize_wide_sums", [vector_bits](const cir::Kernel& k) { return cir::vectorize_wide_sums(k, vector_bits); }});
  // The pool splits the outer loop into a few chunks per thread
  // (ThreadPool::parallel_for); a batch of one must still give each a share.
  if (threads > 1)
    passes.push_back({"widen_task_loop", [tasks, block](const cir::Kernel& k) { return cir::widen_task_loop(k, tasks, block); }});
  // Several long row sums at once: more streams from memory per core.
  int64_t sum_rows = std::clamp<int64_t>(choice.get("sumrows", kCpuRowsAtOnce), 1, 16);
  passes.push_back({"jam_row_sums", [sum_rows](const cir::Kernel& k) { return cir::jam_row_sums(k, static_cast<int>(sum_rows)); }});
  // Last: the schedules above match the expressions as written.
  passes.push_back({"read_each_element_once", [](const cir::Kernel& k) { return cir::read_each_element_once(k); }});
  cir::Kernel k = cir::run_passes(kernel, "specialize", passes);
  if (auto why = cpu_unsupported_reason(k)) {
    plan.why_not = *why;
    return plan;
  }
  std::optional<double> work = cir::count_operations(k);
  plan.one_thread = choice.has("one") ? choice.get("one", 0) != 0 : work && *work < kCpuOperationsToShare;
  plan.kernel = std::move(k);
  return plan;
}

}  // namespace zyntax
