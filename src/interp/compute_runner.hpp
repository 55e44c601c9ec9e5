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
#include "fusion/run_plan.hpp"
#include "interp/environment.hpp"
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

  // A run of blocks (interp/fusion_chains), each binding `name`; inputs
  // naming an earlier block of the run hold no value. Run as few kernels as
  // fusion/block_fusion allows; the last block's result returned. Errors
  // are the unfused program's: when a fused kernel fails, the blocks run
  // again one by one, so the first failing block reports with its source.
  struct ChainBlock {
    const ast::Compute* block = nullptr;
    std::vector<Value> inputs;
    std::string name;
  };
  Value run_chain(const std::vector<ChainBlock>& chain, Frame& frame, const std::string& default_device);

 private:
  struct Entry {
    std::unique_ptr<CompiledCompute> compiled;
    KernelAnnotations annotations;
  };
  Entry& lowered(const ast::Compute& c, Frame& frame, const std::vector<InputSignature>& sigs);
  // One block of a run: its kernel and its own inputs by name (those that
  // are not earlier blocks of the run).
  struct Member {
    Entry* entry = nullptr;
    std::map<std::string, Tensor> inputs;
    Span span;
    bool standalone = false;  // names its device: launched as written
  };
  // A run's plan (fusion/run_plan), its fused kernels compiled.
  struct PlannedRun {
    fusion::RunPlan plan;
    std::vector<std::unique_ptr<CompiledCompute>> compiled;  // per launch; null: the block's own
  };
  Tensor run_unfused(const std::vector<ChainBlock>& chain, const std::vector<Member>& members, Device& device, Frame& frame);
  void explain(const std::string& what);

  Session& session_;
  std::ostream* explain_;
  std::mutex mu_;
  std::map<std::pair<const ast::Compute*, std::string>, std::unique_ptr<Entry>> cache_;
  std::map<std::string, std::shared_ptr<PlannedRun>> runs_;  // by the run's blocks and their signatures
  std::set<std::string> explained_;
};

}  // namespace zyntax
