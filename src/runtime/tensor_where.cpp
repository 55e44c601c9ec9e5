#include "runtime/tensor_op_helpers.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Shape shape = broadcast_shapes("where", broadcast_shapes("where", cond.shape(), a.shape()), b.shape());
  DType t = promote(a.dtype(), b.dtype());
  Tensor x = a.astype(t), y = b.astype(t);
  Tensor out = Tensor::empty(t, shape);
  StridedWalk walk(shape, {broadcast_strides(cond.shape(), shape), broadcast_strides(x.shape(), shape),
                           broadcast_strides(y.shape(), shape)});
  for (int64_t i = 0; i < out.numel(); ++i, walk.next())
    out.set(i, cond.get(walk.offset(0)).truthy() ? x.get(walk.offset(1)) : y.get(walk.offset(2)));
  return out;
}

}  // namespace zyntax
