// A compute block deferred until something needs its value: a block of the
// host interpreter (host code goes on), or an op of the library called from
// C++ or Python. Blocks pending together run as few kernels as fusion
// allows (interp/pending_graph). Everything the launch needs is taken when
// the block is met: its inputs (tensors or other pending blocks), the host
// integers and numbers it reads, and the result's shape, so later host code
// cannot change what it computes.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "runtime/launch.hpp"
#include "support/source.hpp"

namespace zyntax {

struct PendingBlock;

// What a pending block reads: a tensor, or another pending block's result.
// A result read as another shape of its elements (`view`: a [n, h * d]
// product read as [n, h, d]) is a tensor to fusion: its block is computed
// first, and read through the view.
struct PendingInput {
  Tensor tensor;
  std::shared_ptr<PendingBlock> pending;
  Shape view;  // empty: the result's own shape

  bool waits() const;  // a pending block's result, not computed yet
  Tensor value() const;  // the tensor, or the computed result (through the view)
};

struct PendingBlock {
  uint64_t seq = 0;                       // the order blocks were met in
  CompiledCompute* compiled = nullptr;    // the block lowered for its inputs' ranks and dtypes
  std::string label;                      // its kernel's name (the name its result is bound to, the op), for explanations
  int line = 0;                           // its line in its program, for explanations
  Span span;                              // where its errors are reported
  std::map<std::string, PendingInput> inputs;  // by the kernel's input names
  std::map<std::string, int64_t> host_dims;
  std::map<std::string, int64_t> dims;    // every dimension, from the inputs' shapes and host_dims
  std::map<std::string, Scalar> scalars;
  Shape shape;                            // of the result
  DType dtype = DType::F32;
  Tensor result;                          // once computed

  bool computed() const { return result.valid(); }
};

inline bool PendingInput::waits() const { return pending && !pending->computed(); }

inline Tensor PendingInput::value() const {
  if (!pending) return tensor;
  return view.empty() ? pending->result : pending->result.reshaped(view);
}

}  // namespace zyntax
