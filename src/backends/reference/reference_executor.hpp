// The reference executor: runs a specialised CIR kernel with scalar C++ that
// follows the IR literally, one element at a time, every access bounds-checked.
// It is slow on purpose and obviously correct: the ground truth every other
// backend is tested against.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "runtime/tensor.hpp"

namespace zyntax {

// A kernel translated once into closures over numbered slots, so that a
// launch does no name lookups. Build it from a specialised kernel (no dims).
class ReferenceKernel {
 public:
  explicit ReferenceKernel(const cir::Kernel& k);
  ~ReferenceKernel();
  ReferenceKernel(const ReferenceKernel&) = delete;
  ReferenceKernel& operator=(const ReferenceKernel&) = delete;

  // `inputs` in the order of the kernel's Input params; `scalars` by name.
  // Throws zyntax::Error (with the source span) for out-of-bounds accesses,
  // shape mismatches, integer division by zero and empty arg reductions.
  Tensor run(const std::vector<Tensor>& inputs, const std::map<std::string, Scalar>& scalars) const;

  const cir::Kernel& kernel() const { return kernel_; }

 private:
  struct Compiled;
  cir::Kernel kernel_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace zyntax
