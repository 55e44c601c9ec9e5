#include "runtime/tensor_ops.hpp"

#include <cmath>
#include <string>

#include "runtime/tensor_op_helpers.hpp"

namespace zyntax {

namespace {

std::string quoted(const char* symbol) { return std::string("'") + symbol + "'"; }

bool needs_nonempty(ReduceOp op) {
  return op == ReduceOp::Min || op == ReduceOp::Max || is_arg_reduce(op);
}

DType reduce_result_dtype(ReduceOp op, DType in) {
  if (is_arg_reduce(op)) return DType::I64;
  if (op == ReduceOp::And || op == ReduceOp::Or) return DType::Bool;
  return in;
}

// Reduces the `n` elements of `a` at base, base + stride, ... into one value.
Scalar reduce_line(ReduceOp op, const Tensor& a, int64_t base, int64_t n, int64_t stride) {
  DType t = a.dtype();
  if (is_arg_reduce(op)) {
    Scalar best = a.get(base);
    int64_t best_index = 0;
    for (int64_t k = 1; k < n; ++k) {
      Scalar v = a.get(base + k * stride);
      if (arg_better(op, best, v)) best = v, best_index = k;
    }
    return Scalar::of_int(best_index, DType::I64);
  }
  if (op == ReduceOp::Min || op == ReduceOp::Max) {
    Scalar acc = a.get(base);
    for (int64_t k = 1; k < n; ++k) acc = reduce_combine(op, acc, a.get(base + k * stride));
    return acc;
  }
  // Float sums and products keep f64 precision until the single final rounding.
  DType acc_type = reduce_accumulator_dtype(op, t);
  Scalar acc = reduce_identity(op, acc_type);
  for (int64_t k = 0; k < n; ++k) acc = reduce_combine(op, acc, cast(a.get(base + k * stride), acc_type));
  return cast(acc, reduce_result_dtype(op, t));
}

}  // namespace

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  std::optional<Shape> out = try_broadcast(a, b);
  if (!out)
    throw DataError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
  return *out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  std::string name = quoted(binary_op_symbol(op));
  require_valid(name, a);
  require_valid(name, b);
  Shape shape = broadcast_shapes(name.c_str(), a.shape(), b.shape());
  DType t = promote(a.dtype(), b.dtype());
  Tensor x = converted(a, t), y = converted(b, t);
  Tensor out = Tensor::empty(is_comparison(op) || is_logical(op) ? DType::Bool : t, shape);
  StridedWalk walk(shape, {broadcast_strides(a.shape(), shape), broadcast_strides(b.shape(), shape)});
  int64_t n = out.numel();
  try {
    for (int64_t i = 0; i < n; ++i, walk.next())
      out.set(i, eval_binary(op, x.get(walk.offset(0)), y.get(walk.offset(1))));
  } catch (const ScalarError& e) {
    throw DataError(name + ": " + e.message);
  }
  return out;
}

Tensor unary(UnaryOp op, const Tensor& a) {
  require_valid(quoted(unary_op_symbol(op)), a);
  Tensor out = Tensor::empty(op == UnaryOp::Not ? DType::Bool : a.dtype(), a.shape());
  int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) out.set(i, eval_unary(op, a.get(i)));
  return out;
}

Tensor math(MathFn fn, const std::vector<Tensor>& args) {
  std::string name = math_fn_name(fn);
  if (static_cast<int>(args.size()) != math_fn_arity(fn))
    throw DataError(name + ": expected " + std::to_string(math_fn_arity(fn)) + " argument(s), got " +
                    std::to_string(args.size()));
  Shape shape = args[0].shape();
  DType t = args[0].dtype();
  for (const Tensor& arg : args) {
    require_valid(name, arg);
    shape = broadcast_shapes(name.c_str(), shape, arg.shape());
    t = promote(t, arg.dtype());
  }
  // The kernel language's rule: integer inputs to float functions compute in
  // f32 (not eval_math's f64), and bool inputs to the others in i64.
  if (!is_float(t) && !math_fn_keeps_int(fn)) t = DType::F32;
  if (t == DType::Bool) t = DType::I64;
  std::vector<Tensor> inputs;
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor& arg : args) {
    inputs.push_back(converted(arg, t));
    strides.push_back(broadcast_strides(arg.shape(), shape));
  }
  Tensor out = Tensor::empty(t, shape);
  StridedWalk walk(shape, std::move(strides));
  std::vector<Scalar> values(args.size());
  int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i, walk.next()) {
    for (size_t k = 0; k < inputs.size(); ++k) values[k] = inputs[k].get(walk.offset(k));
    out.set(i, eval_math(fn, values));
  }
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  require_valid("matmul", a);
  require_valid("matmul", b);
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  std::string shapes = shape_str(sa) + " @ " + shape_str(sb);
  if (sa.empty() || sb.empty()) throw DataError("matmul: operands must have at least one dimension: " + shapes);
  // A 1-D operand acts as a row (left) or column (right) whose axis is dropped afterwards.
  Shape ma = sa.size() == 1 ? Shape{1, sa[0]} : sa;
  Shape mb = sb.size() == 1 ? Shape{sb[0], 1} : sb;
  int64_t m = ma[ma.size() - 2], k = ma.back(), n = mb.back();
  if (k != mb[mb.size() - 2]) throw DataError("matmul: inner dimensions do not match: " + shapes);
  Shape batch_a(ma.begin(), ma.end() - 2), batch_b(mb.begin(), mb.end() - 2);
  std::optional<Shape> batch = try_broadcast(batch_a, batch_b);
  if (!batch) throw DataError("matmul: batch dimensions do not broadcast: " + shapes);

  Shape out_shape = *batch;
  if (sa.size() > 1) out_shape.push_back(m);
  if (sb.size() > 1) out_shape.push_back(n);
  DType t = promote(a.dtype(), b.dtype());
  Tensor x = converted(a, t), y = converted(b, t);
  Tensor out = Tensor::empty(t, out_shape);

  // The walk's offsets count whole matrices.
  StridedWalk walk(*batch, {broadcast_strides(batch_a, *batch), broadcast_strides(batch_b, *batch)});
  int64_t batches = shape_numel(*batch);
  Scalar zero = Scalar::from_int(0, t);
  int64_t out_flat = 0;
  for (int64_t bi = 0; bi < batches; ++bi, walk.next()) {
    int64_t a_base = walk.offset(0) * m * k, b_base = walk.offset(1) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        Scalar acc = zero;
        for (int64_t p = 0; p < k; ++p) {
          Scalar prod = eval_binary(BinaryOp::Mul, x.get(a_base + i * k + p), y.get(b_base + p * n + j));
          acc = eval_binary(BinaryOp::Add, acc, prod);
        }
        out.set(out_flat++, acc);
      }
  }
  return out;
}

Tensor reduce(ReduceOp op, const Tensor& a, std::optional<int64_t> axis, bool keepdims) {
  std::string name = std::string("reduce ") + reduce_op_name(op);
  require_valid(name, a);
  const Shape& s = a.shape();
  int64_t outer = 1, n = a.numel(), inner = 1;
  Shape out_shape = keepdims ? Shape(s.size(), 1) : Shape{};
  if (axis) {
    int64_t ax = normalize_axis(name, *axis, s);
    for (int64_t d = 0; d < ax; ++d) outer *= s[d];
    n = s[ax];
    for (size_t d = ax + 1; d < s.size(); ++d) inner *= s[d];
    out_shape = s;
    if (keepdims)
      out_shape[ax] = 1;
    else
      out_shape.erase(out_shape.begin() + ax);
  }
  if (n == 0 && needs_nonempty(op))
    throw DataError(name + ": cannot reduce an empty axis (shape " + shape_str(s) + ")");
  Tensor out = Tensor::empty(reduce_result_dtype(op, a.dtype()), out_shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) out.set(o * inner + i, reduce_line(op, a, o * n * inner + i, n, inner));
  return out;
}

Scalar dot(const Tensor& a, const Tensor& b) {
  require_valid("dot", a);
  require_valid("dot", b);
  if (a.rank() != 1 || b.rank() != 1 || a.dim(0) != b.dim(0))
    throw DataError("dot: expected two 1-D tensors of the same length, got " + shape_str(a.shape()) + " and " +
                    shape_str(b.shape()));
  DType t = promote(a.dtype(), b.dtype());
  Scalar acc = Scalar::from_int(0, t);
  for (int64_t i = 0; i < a.dim(0); ++i)
    acc = eval_binary(BinaryOp::Add, acc, eval_binary(BinaryOp::Mul, cast(a.get(i), t), cast(b.get(i), t)));
  return acc;
}

Tensor arange(DType dtype, double start, double stop, double step) {
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw DataError("arange: start, stop and step must be finite");
  if (step == 0) throw DataError("arange: step must not be zero");
  double count = std::ceil((stop - start) / step);
  // Beyond 2^53 the count is not even exact; no tensor that large can be allocated anyway.
  if (!(count <= 9007199254740992.0)) throw DataError("arange: too many elements");
  Tensor out = Tensor::empty(dtype, {count > 0 ? static_cast<int64_t>(count) : 0});
  for (int64_t i = 0; i < out.numel(); ++i)
    out.set(i, Scalar::from_double(start + static_cast<double>(i) * step, dtype));
  return out;
}

}  // namespace zyntax
