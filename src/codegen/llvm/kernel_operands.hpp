// The host side of one kernel call, shared by every device built on the
// LLVM lowering: the output tensor, the reduce buffers, each scalar's bytes
// in its dtype, in the order of kernel_abi.hpp; and, after the call, the
// reduce kernels' last step (the f64 sums rounded once, argmin/argmax of an
// empty range reported). The CPU passes these host buffers to the kernel; a
// GPU copies them to device memory and back.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "runtime/tensor.hpp"

namespace zyntax::codegen {

struct KernelOperands {
  // One per parameter, in order: what it is and where its host data is.
  struct Operand {
    cir::ParamRole role;
    const Tensor* input = nullptr;  // an input's tensor
    const void* scalar = nullptr;   // a scalar's value in its dtype
    size_t scalar_bytes = 0;
  };
  std::vector<Operand> params;
  Tensor out;
  bool reduce = false;
  ReduceBuffers rb;
  Tensor acc, best, has;  // reduce kernels: acc, and for argmin/argmax best and has
  std::vector<std::array<unsigned char, 8>> scalar_storage;

  // The tensor of an input or output parameter (null for a scalar).
  const Tensor* tensor(const Operand& o) const { return o.role == cir::ParamRole::Output ? &out : o.input; }
  // The reduce buffers in kernel_abi.hpp's order (acc, then best and has).
  std::vector<Tensor*> reduce_tensors();
};

// A scalar parameter's value in its dtype, as the kernel reads it: the
// bytes and how many of them there are.
struct ScalarOperand {
  std::array<unsigned char, 8> bytes{};
  size_t size = 0;
};
ScalarOperand scalar_operand(const Scalar& value, DType dtype);

// `zeroed_output`: whether the output must start as zeros (a kernel that
// may not write every element); else it may hold anything.
KernelOperands prepare_operands(const cir::Kernel& k, const std::vector<Tensor>& inputs,
                                const std::map<std::string, Scalar>& scalars, bool zeroed_output);
// The same, writing into `output` (shared with other calls; not reduce kernels).
KernelOperands prepare_operands_into(const cir::Kernel& k, const std::vector<Tensor>& inputs,
                                     const std::map<std::string, Scalar>& scalars, const Tensor& output);

// The result once the kernel has run on the operands' buffers.
Tensor finish_operands(const cir::Kernel& k, KernelOperands& ops);

}  // namespace zyntax::codegen
