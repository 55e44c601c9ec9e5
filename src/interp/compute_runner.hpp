// Runs the compute blocks met by the host interpreter: gathers the inputs and
// the host values a kernel reads, lowers the block for the inputs' ranks and
// dtypes (once per combination), picks the device and launches, synchronously
// or, with @async, on a worker thread that a future waits for.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>

#include "driver/session.hpp"
#include "interp/environment.hpp"
#include "interp/pending_graph.hpp"
#include "interp/value.hpp"
#include "lower/kernel_lowering.hpp"
#include "runtime/launch.hpp"

namespace zyntax {

class ComputeRunner {
 public:
  // `explain`: where to say which blocks fused and why others did not.
  ComputeRunner(Session& session, std::ostream* explain = nullptr) : session_(session), explain_(explain) {}

  // `default_device`: the config's compute_device, or --device.
  Value run(const ast::Compute& c, Frame& frame, const std::vector<Value>& inputs, const std::string& default_device);

  // Block `c` met where fusion may take it: its result is a pending value
  // (interp/pending_block) that flush() computes, fused with the blocks
  // pending with it; or, where the block names its device, shares work
  // over devices or is @async, everything pending is computed first and
  // the block runs now, as run() does. `inputs`: tensors or pending
  // results.
  Value defer(const ast::Compute& c, Frame& frame, std::vector<Value> inputs, const std::string& default_device);

  // Computes every pending block: as few kernels as fusion/run_plan allows
  // for the results still wanted (those some binding or value holds) and
  // for blocks nothing reads (their checks still run). Errors are the
  // unfused program's: when a fused kernel fails, the blocks run again one
  // by one, so the first failing block reports with its source. Nothing
  // is left pending, whatever fails. `why`: what at `where` needs them
  // now, for --explain-fusion.
  void flush(Span where = {}, const std::string& why = "");
  bool has_pending() const { return !pending_.empty(); }

  // The result of a pending block, computing it (and all that is pending) first.
  Tensor force(const std::shared_ptr<PendingBlock>& p, Span where);

 private:
  struct Entry {
    std::unique_ptr<CompiledCompute> compiled;
    KernelAnnotations annotations;
  };
  Entry& lowered(const ast::Compute& c, Frame& frame, const std::vector<InputSignature>& sigs);
  void explain(const std::string& what);
  int line_of(const ast::Compute& c) const;

  Session& session_;
  std::ostream* explain_;
  std::mutex mu_;
  std::map<std::pair<const ast::Compute*, std::string>, std::unique_ptr<Entry>> cache_;
  PendingGraph graph_;
  std::set<std::string> explained_;
  std::vector<std::shared_ptr<PendingBlock>> pending_;  // in the order met
  std::string pending_device_;                          // where they run
  uint64_t next_seq_ = 0;
};

}  // namespace zyntax
