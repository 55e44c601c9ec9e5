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

  // A chain of blocks (interp/fusion_chains), each reading the one before it
  // as its input named `link`, whose `inputs` holds no value: run as few
  // kernels as fusion/block_fusion allows, the last block's result returned.
  // Errors are the unfused program's: a fused kernel that fails runs again
  // block by block, so the first failing block reports with its own source.
  struct ChainBlock {
    const ast::Compute* block = nullptr;
    std::vector<Value> inputs;
    std::string link;  // empty for the first
  };
  Value run_chain(const std::vector<ChainBlock>& chain, Frame& frame, const std::string& default_device);

 private:
  struct Entry {
    std::unique_ptr<CompiledCompute> compiled;
    KernelAnnotations annotations;
  };
  Entry& lowered(const ast::Compute& c, Frame& frame, const std::vector<InputSignature>& sigs);
  // One block of a group: its kernel and its own inputs by name.
  struct Member {
    size_t index = 0;
    Entry* entry = nullptr;
    std::map<std::string, Tensor> inputs;
    std::string link_path;  // the input that is the member before it (none for the first)
    Span span;              // the block's, for its errors
  };
  Tensor launch_group(const std::vector<Member>& members, const cir::Kernel& fused, const std::string& key,
                      const std::map<std::string, Tensor>& tensors, Device& device, Frame& frame);
  void explain(const std::string& what);

  Session& session_;
  std::ostream* explain_;
  std::mutex mu_;
  std::map<std::pair<const ast::Compute*, std::string>, std::unique_ptr<Entry>> cache_;
  std::map<std::string, std::unique_ptr<CompiledCompute>> fused_;  // by their members and signatures
  std::set<std::string> explained_;
};

}  // namespace zyntax
