// Whole-tensor operations with NumPy semantics, computed element by element
// through support/scalar.hpp. They back the host language's tensor builtins
// and the reference executor's tile operations. Every failure is a DataError
// naming the operation, the argument and the shapes.
#pragma once

#include <optional>
#include <vector>

#include "runtime/tensor.hpp"
#include "support/scalar.hpp"

namespace zyntax {

// Broadcast shape of two operands, or DataError("<op>: shapes [..] and [..] do not broadcast").
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

// a op b with broadcasting. Both operands are converted to promote(a, b)
// first; comparisons give bool tensors.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor unary(UnaryOp op, const Tensor& a);
// Element-wise math; all arguments broadcast together. Integer arguments to
// functions that do not keep ints (exp, sqrt, ...) are computed in f32.
Tensor math(MathFn fn, const std::vector<Tensor>& args);

// where(cond, a, b): a's element where cond is true, else b's; all three
// broadcast together; a and b are converted to promote(a, b).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// NumPy matmul: 1-D and 2-D operands and broadcast batch dimensions.
Tensor matmul(const Tensor& a, const Tensor& b);
// Reverses the axes, or permutes them by `perm` (negative axes allowed).
Tensor transpose(const Tensor& a, const std::vector<int64_t>& perm = {});
// Reduction over one axis (negative allowed) or over all axes. ArgMin/ArgMax give i64.
// Float sums and products accumulate in f64 and round once.
Tensor reduce(ReduceOp op, const Tensor& a, std::optional<int64_t> axis, bool keepdims);
// Sum of a[i] * b[i] over two 1-D tensors of the same length, accumulated in the
// promoted dtype in order (the same arithmetic as a scalar loop).
Scalar dot(const Tensor& a, const Tensor& b);

// Shape with at most one -1 (inferred). The data is shared.
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor concat(const std::vector<Tensor>& parts, int64_t axis);
// `parts` equal pieces along axis; DataError if the axis does not divide.
std::vector<Tensor> split(const Tensor& a, int64_t parts, int64_t axis);

// One entry per leading axis: an index (negative counts from the end, as in
// NumPy; out of range is a DataError) or a slice [begin, end) with step,
// clamped to the axis like NumPy. Axes not mentioned are kept whole.
struct AxisSelect {
  enum Kind { Index, Slice } kind = Index;
  int64_t index = 0;
  std::optional<int64_t> begin, end;
  int64_t step = 1;
};
Tensor select(const Tensor& a, const std::vector<AxisSelect>& sel);
// Writes `value` (broadcast to the selected region's shape) into the region.
void assign(Tensor& a, const std::vector<AxisSelect>& sel, const Tensor& value);

// Deterministic random numbers: the same seed gives the same tensor on every machine.
class Random {
 public:
  explicit Random(uint64_t seed);
  double uniform();  // [0, 1)
  double normal();   // mean 0, deviation 1
  uint64_t next_u64();

 private:
  uint64_t state_[4];
  bool have_spare_ = false;
  double spare_ = 0;
};
Tensor rand_uniform(Random& rng, DType dtype, const Shape& shape, double lo = 0.0, double hi = 1.0);
Tensor rand_normal(Random& rng, DType dtype, const Shape& shape, double mean = 0.0, double stddev = 1.0);
// [start, stop) by step.
Tensor arange(DType dtype, double start, double stop, double step);

// Human-readable text, NumPy-like, eliding the middle of large tensors.
std::string format_tensor(const Tensor& t, int64_t edge_items = 3);

}  // namespace zyntax
