// Computes a graph of pending blocks (interp/pending_block) on one device:
// the results still wanted (held by something other than the blocks of the
// graph that read them) and the blocks nothing reads (their checks still
// run), as few kernels as fusion/run_plan allows. Shared by the host
// interpreter's deferred compute blocks (interp/compute_runner) and the op
// library's deferred ops (api/deferred_ops).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fusion/run_plan.hpp"
#include "interp/pending_block.hpp"
#include "runtime/device.hpp"

namespace zyntax {

class PendingGraph {
 public:
  // Said once per explanation: which blocks ran as one kernel, which not and why.
  using Explain = std::function<void(const std::string&)>;
  // A block's launch failed (a DataError, or an Error of a failed check at
  // its source): throws the caller's error for it (the interpreter: at the
  // block's source line; the op library: naming the op), or returns to let
  // the error go on as it is.
  using Fail = std::function<void(const PendingBlock&, const std::exception&)>;

  // Computes `nodes` (in the order met; every pending block they read is
  // among them or computed) and returns the kernels launched. Errors are
  // those of the blocks run one by one: when a fused kernel fails, they run
  // again unfused, so the first failing block reports through `fail`; the
  // blocks before it keep their results, those after it have none.
  size_t run(std::vector<std::shared_ptr<PendingBlock>> nodes, Device& device, const Explain& explain, const Fail& fail);

 private:
  // A graph's plan (fusion/run_plan), its fused kernels compiled.
  struct PlannedRun {
    fusion::RunPlan plan;
    std::vector<std::unique_ptr<CompiledCompute>> compiled;  // per launch; null: the block's own
  };
  void run_unfused(const std::vector<std::shared_ptr<PendingBlock>>& nodes, Device& device, const Fail& fail);

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<PlannedRun>> runs_;  // by the graph's blocks, signatures and reads
};

}  // namespace zyntax
