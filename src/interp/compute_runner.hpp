// Runs the compute blocks met by the host interpreter: gathers the inputs and
// the host values a kernel reads, lowers the block for the inputs' ranks and
// dtypes (once per combination), picks the device and launches, synchronously
// or, with @async, on a worker thread that a future waits for.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "driver/session.hpp"
#include "interp/environment.hpp"
#include "interp/value.hpp"
#include "lower/kernel_lowering.hpp"
#include "runtime/launch.hpp"

namespace zyntax {

class ComputeRunner {
 public:
  explicit ComputeRunner(Session& session) : session_(session) {}

  // `default_device`: the config's compute_device, or --device.
  Value run(const ast::Compute& c, Frame& frame, const std::vector<Value>& inputs, const std::string& default_device);

 private:
  struct Entry {
    std::unique_ptr<CompiledCompute> compiled;
    KernelAnnotations annotations;
  };
  Entry& lowered(const ast::Compute& c, Frame& frame, const std::vector<InputSignature>& sigs);

  Session& session_;
  std::mutex mu_;
  std::map<std::pair<const ast::Compute*, std::string>, std::unique_ptr<Entry>> cache_;
};

}  // namespace zyntax
