#include "codegen/llvm/kernel_operands.hpp"

#include <cstring>

#include "support/diagnostics.hpp"
#include "support/scalar.hpp"

namespace zyntax::codegen {

std::vector<Tensor*> KernelOperands::reduce_tensors() {
  if (!reduce) return {};
  if (rb.arg) return {&acc, &best, &has};
  return {&acc};
}

ScalarOperand scalar_operand(const Scalar& value, DType dtype) {
  Tensor v = Tensor::scalar(cast(value, dtype));
  ScalarOperand o;
  o.size = v.nbytes();
  std::memcpy(o.bytes.data(), v.data(), o.size);
  return o;
}

KernelOperands prepare_operands(const cir::Kernel& kernel, const std::vector<Tensor>& inputs,
                                const std::map<std::string, Scalar>& scalars, bool zeroed_output) {
  KernelOperands ops;
  const cir::Param& outp = kernel.output();
  Shape out_shape;
  for (const cir::Expr& d : outp.type.shape) out_shape.push_back(d.as<cir::IntImm>()->value);
  ops.out = zeroed_output ? Tensor::zeros(outp.type.dtype, out_shape) : Tensor::for_overwrite(outp.type.dtype, out_shape);
  ops.scalar_storage.reserve(kernel.params.size());
  size_t next_input = 0;
  for (const cir::Param& p : kernel.params) {
    KernelOperands::Operand o;
    o.role = p.role;
    if (p.role == cir::ParamRole::Input) {
      o.input = &inputs.at(next_input++);
    } else if (p.role == cir::ParamRole::Scalar) {
      ScalarOperand v = scalar_operand(scalars.at(p.name), p.type.dtype);
      ops.scalar_storage.push_back(v.bytes);
      o.scalar = ops.scalar_storage.back().data();
      o.scalar_bytes = v.size;
    }
    ops.params.push_back(o);
  }
  ops.reduce = kernel.kind == cir::KernelKind::Reduce;
  if (ops.reduce) {
    ops.rb = reduce_buffers(kernel);
    if (ops.rb.arg) {
      ops.acc = ops.out;  // the index itself
      ops.best = Tensor::zeros(ops.rb.best_dtype, out_shape);
      ops.has = Tensor::zeros(DType::Bool, out_shape);
    } else {
      ops.acc = Tensor::full(ops.rb.acc_dtype, out_shape, reduce_identity(kernel.reduce_op, ops.rb.acc_dtype));
    }
  }
  return ops;
}

KernelOperands prepare_operands_into(const cir::Kernel& k, const std::vector<Tensor>& inputs,
                                     const std::map<std::string, Scalar>& scalars, const Tensor& output) {
  KernelOperands ops = prepare_operands(k, inputs, scalars, /*zeroed_output=*/false);
  ops.out = output;  // shares the storage
  return ops;
}

Tensor finish_operands(const cir::Kernel& kernel, KernelOperands& ops) {
  if (ops.reduce && ops.rb.arg) {
    for (int64_t i = 0; i < ops.has.numel(); ++i)
      if (!ops.has.get(i).truthy())
        throw Error(kernel.span, std::string(reduce_op_name(kernel.reduce_op)) + " of an empty range has no index");
  } else if (ops.reduce) {
    for (int64_t i = 0; i < ops.out.numel(); ++i) ops.out.set(i, ops.acc.get(i));  // f64 sums rounded once, as the reference
  }
  return ops.out;
}

}  // namespace zyntax::codegen
