// A compute block deferred by the interpreter: host code goes on, and the
// blocks pending together run as few kernels as fusion allows
// (fusion/run_plan) when something needs their values. Everything the
// launch needs is taken when the block is met: its inputs (tensors or
// other pending blocks), the host integers and numbers it reads, and the
// result's shape, so later host code cannot change what it computes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "interp/value.hpp"
#include "runtime/launch.hpp"

namespace zyntax {

struct PendingBlock {
  uint64_t seq = 0;                       // the order blocks were met in
  const ast::Compute* block = nullptr;
  CompiledCompute* compiled = nullptr;    // the block lowered for its inputs' ranks and dtypes
  std::string label;                      // its kernel's name (the name its result is bound to), for explanations
  int line = 0;
  std::map<std::string, Value> inputs;    // by the kernel's input names: Tensor or Pending
  std::map<std::string, int64_t> host_dims;
  std::map<std::string, int64_t> dims;    // every dimension, from the inputs' shapes and host_dims
  std::map<std::string, Scalar> scalars;
  Shape shape;                            // of the result
  DType dtype = DType::F32;
  Tensor result;                          // once computed

  bool computed() const { return result.valid(); }
};

}  // namespace zyntax
