// Element-wise builtins: every math function of support/scalar.hpp on
// numbers and tensors, plus matmul, where, allclose and assert_close.
#include <cmath>
#include <cstdio>
#include <vector>

#include "interp/builtins_args.hpp"
#include "interp/host_convert.hpp"

namespace zyntax {

namespace {

bool is_int_like(const Value& v) { return v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool; }

Value numbers_math(MathFn fn, const Args& a, size_t count) {
  bool ints = math_fn_keeps_int(fn);
  for (size_t k = 0; k < count; ++k) ints = ints && is_int_like(a[k]);
  DType t = ints ? DType::I64 : DType::F64;
  std::vector<Scalar> values;
  for (size_t k = 0; k < count; ++k) values.push_back(cast(a[k].as_scalar(), t));
  return value_of_scalar(eval_math(fn, values));
}

// The math function the builtin is named after. min and max live with the
// reductions, since with one argument they reduce.
Value elementwise(const Invocation& inv) {
  MathFn fn = *parse_math_fn(inv.name);
  switch (math_fn_arity(fn)) {
    case 1: return apply_math(fn, Args(inv, {{"x"}}), 1);
    case 2: return apply_math(fn, Args(inv, {{"x"}, {"y"}}), 2);
    default: return apply_math(fn, Args(inv, {{"x"}, {"lo"}, {"hi"}}), 3);
  }
}

Value matmul_tensors(const Invocation& inv) {
  Args a(inv, {{"a"}, {"b"}});
  return Value::of_tensor(matmul(a.tensor(0), a.tensor(1)));
}

// where(cond, a, b): numbers meet the other branch like operands of an
// operator; two numbers take their own default dtypes.
Value where_tensor(const Invocation& inv) {
  Args a(inv, {{"cond"}, {"a"}, {"b"}});
  const Tensor& cond = a.tensor(0);
  for (size_t k = 1; k <= 2; ++k)
    if (a[k].kind != Value::Kind::Tensor && !a[k].is_number()) a.wrong_type(k, "a number or a tensor");
  DType partner;
  if (a[1].kind == Value::Kind::Tensor)
    partner = a[1].tensor.dtype();
  else if (a[2].kind == Value::Kind::Tensor)
    partner = a[2].tensor.dtype();
  else if (a[1].kind == Value::Kind::Float || a[2].kind == Value::Kind::Float)
    partner = DType::F32;
  else
    partner = a[1].kind == Value::Kind::Bool && a[2].kind == Value::Kind::Bool ? DType::Bool : DType::I64;
  return Value::of_tensor(where(cond, tensor_operand(a[1], partner), tensor_operand(a[2], partner)));
}

// NumPy's allclose: |a - b| <= atol + rtol * |b| element-wise (equal
// infinities count as close, NaNs never do), with broadcasting.
Value allclose(const Invocation& inv) {
  Args a(inv, {{"a"}, {"b"}, {"rtol", kOptional}, {"atol", kOptional}});
  for (size_t k = 0; k < 2; ++k)
    if (a[k].kind != Value::Kind::Tensor && !a[k].is_number()) a.wrong_type(k, "a number or a tensor");
  double rtol = a.number_or(2, 1e-5), atol = a.number_or(3, 1e-8);
  Tensor x = tensor_of(a[0]).astype(DType::F64), y = tensor_of(a[1]).astype(DType::F64);
  broadcast_shapes("allclose", x.shape(), y.shape());
  Tensor diff = math(MathFn::Abs, {binary(BinaryOp::Sub, x, y)});
  Tensor scaled = binary(BinaryOp::Mul, Tensor::scalar(Scalar::of_float(rtol, DType::F64)), math(MathFn::Abs, {y}));
  Tensor tolerance = binary(BinaryOp::Add, Tensor::scalar(Scalar::of_float(atol, DType::F64)), scaled);
  Tensor close = binary(BinaryOp::Or, binary(BinaryOp::Eq, x, y), binary(BinaryOp::Le, diff, tolerance));
  return Value::of_bool(reduce(ReduceOp::And, close, std::nullopt, false).get(0).truthy());
}

// allclose as a check for tests: on failure an error at the call that says
// how many elements differ and shows the worst one (its index, both values,
// the difference and the tolerance there).
Value assert_close(const Invocation& inv) {
  Args a(inv, {{"actual"}, {"expected"}, {"rtol", kOptional}, {"atol", kOptional}});
  for (size_t k = 0; k < 2; ++k)
    if (a[k].kind != Value::Kind::Tensor && !a[k].is_number()) a.wrong_type(k, "a number or a tensor");
  double rtol = a.number_or(2, 1e-5), atol = a.number_or(3, 1e-8);
  Tensor x = tensor_of(a[0]).astype(DType::F64), y = tensor_of(a[1]).astype(DType::F64);
  Shape shape = broadcast_shapes("assert_close", x.shape(), y.shape());
  Tensor zero = Tensor::zeros(DType::F64, shape);  // adding it broadcasts
  x = binary(BinaryOp::Add, x, zero);
  y = binary(BinaryOp::Add, y, zero);
  int64_t n = x.numel(), bad = 0, worst = -1;
  double worst_excess = -1;
  for (int64_t i = 0; i < n; ++i) {
    double u = x.get_f64(i), v = y.get_f64(i);
    if (u == v) continue;
    double diff = std::fabs(u - v), tol = atol + rtol * std::fabs(v);
    bool nan = std::isnan(u) || std::isnan(v);
    if (!nan && diff <= tol) continue;
    ++bad;
    double excess = nan || std::isinf(diff) ? INFINITY : diff / (tol > 0 ? tol : 1e-300);
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  if (bad == 0) return Value::none();
  std::string at = "[";
  int64_t rest = worst;
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? rest % shape[d] : 0;
    rest = shape[d] ? rest / shape[d] : 0;
  }
  for (size_t d = 0; d < index.size(); ++d) at += (d ? ", " : "") + std::to_string(index[d]);
  at += "]";
  double u = x.get_f64(worst), v = y.get_f64(worst);
  char detail[320];
  std::snprintf(detail, sizeof detail, "worst at %s: %.9g, expected %.9g (difference %.3g, tolerance %.3g = atol %g + rtol %g * |expected|)",
                at.c_str(), u, v, std::fabs(u - v), atol + rtol * std::fabs(v), atol, rtol);
  a.fail_call(std::to_string(bad) + " of " + std::to_string(n) + " elements differ; " + detail);
}

std::vector<BuiltinEntry> entries() {
  std::vector<BuiltinEntry> out;
  for (int k = 0; k <= static_cast<int>(kLastMathFn); ++k) {
    MathFn fn = static_cast<MathFn>(k);
    if (fn != MathFn::Min && fn != MathFn::Max) out.push_back({math_fn_name(fn), elementwise});
  }
  out.push_back({"matmul", matmul_tensors});
  out.push_back({"where", where_tensor});
  out.push_back({"allclose", allclose});
  out.push_back({"assert_close", assert_close});
  return out;
}

}  // namespace

Value apply_math(MathFn fn, const Args& a, size_t count) {
  bool any_tensor = false;
  DType partner = DType::Bool;
  for (size_t k = 0; k < count; ++k) {
    if (a[k].kind == Value::Kind::Tensor) {
      a.tensor(k);
      partner = any_tensor ? promote(partner, a[k].tensor.dtype()) : a[k].tensor.dtype();
      any_tensor = true;
    } else if (!a[k].is_number()) {
      a.wrong_type(k, "a number or a tensor");
    }
  }
  if (!any_tensor) return numbers_math(fn, a, count);
  std::vector<Tensor> operands;
  Shape shape;
  for (size_t k = 0; k < count; ++k) {
    operands.push_back(tensor_operand(a[k], partner));
    shape = broadcast_shapes(math_fn_name(fn), shape, operands.back().shape());
  }
  if (shape_too_large(shape, partner)) a.fail_call("the result would have shape " + shape_str(shape) + ", which is too large");
  return Value::of_tensor(math(fn, operands));
}

std::span<const BuiltinEntry> math_builtins() {
  static const std::vector<BuiltinEntry> table = entries();
  return table;
}

}  // namespace zyntax
