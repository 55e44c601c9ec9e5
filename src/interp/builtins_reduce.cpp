// Reductions: sum, mean, prod, min, max, argmin, argmax, any, all. Over all
// elements they give a number, along an axis a tensor.
#include "interp/builtins_args.hpp"
#include "interp/host_convert.hpp"
#include "interp/host_ops.hpp"

namespace zyntax {

namespace {

Args reduction_args(const Invocation& inv) { return Args(inv, {{"x"}, {"axis", kOptional}, {"keepdims", kOptional}}); }

// The host value of a reduction over all elements, or the tensor itself.
Value scalar_or_tensor(const Tensor& t, bool full) { return full ? value_of_scalar(t.get(0)) : Value::of_tensor(t); }

bool is_sequence(const Value& v) { return v.kind == Value::Kind::List || v.kind == Value::Kind::Tuple; }

Value reduce_tensor(ReduceOp op, const Args& a) {
  const Tensor& t = a.tensor(0);
  std::optional<int64_t> axis = a.axis(1);
  bool keepdims = a.boolean_or(2, false);
  return scalar_or_tensor(reduce(op, t, axis, keepdims), !axis && !keepdims);
}

void require_tensor_for_axis(const Args& a) {
  if (a.has(1) || a.has(2)) a.fail_call("axis and keepdims need a tensor, got " + type_name(a[0]));
}

Value sum(const Invocation& inv) {
  Args a = reduction_args(inv);
  if (!is_sequence(a[0])) return reduce_tensor(ReduceOp::Sum, a);
  require_tensor_for_axis(a);
  Value total = Value::of_int(0);
  for (const Value& item : *a[0].items) total = host_binary(ast::BinOp::Add, total, item, a.call_span());
  return total;
}

Value prod(const Invocation& inv) { return reduce_tensor(ReduceOp::Product, reduction_args(inv)); }
Value argmax(const Invocation& inv) { return reduce_tensor(ReduceOp::ArgMax, reduction_args(inv)); }
Value argmin(const Invocation& inv) { return reduce_tensor(ReduceOp::ArgMin, reduction_args(inv)); }

// Summed in f64 and divided once; the result is f64 for f64 input, f32 otherwise.
Value mean(const Invocation& inv) {
  Args a = reduction_args(inv);
  const Tensor& t = a.tensor(0);
  std::optional<int64_t> axis = a.axis(1);
  bool keepdims = a.boolean_or(2, false);
  Tensor total = reduce(ReduceOp::Sum, t.astype(DType::F64), axis, keepdims);
  int64_t count = total.numel() > 0 ? t.numel() / total.numel() : 0;
  Tensor m = binary(BinaryOp::Div, total, Tensor::scalar(Scalar::of_float(static_cast<double>(count), DType::F64)));
  DType result = t.dtype() == DType::F64 ? DType::F64 : DType::F32;
  return scalar_or_tensor(m.astype(result), !axis && !keepdims);
}

Value any_or_all(const Invocation& inv, ReduceOp op) {
  Args a = reduction_args(inv);
  if (!is_sequence(a[0])) return reduce_tensor(op, a);
  require_tensor_for_axis(a);
  bool want = op == ReduceOp::Or;
  for (const Value& item : *a[0].items) {
    std::optional<bool> t = truthy(item);
    if (!t) a.fail(0, "the truth value of " + type_name(item) + " is ambiguous");
    if (*t == want) return Value::of_bool(want);
  }
  return Value::of_bool(!want);
}

Value any(const Invocation& inv) { return any_or_all(inv, ReduceOp::Or); }
Value all(const Invocation& inv) { return any_or_all(inv, ReduceOp::And); }

// max(a, b) is element-wise; max(t), t.max() and t.max(axis) reduce a
// tensor; max(list) picks the largest item (the first of equals).
Value extreme(const Invocation& inv, bool largest) {
  bool method = inv.receivers > 0;
  if (!method && inv.args.positional.size() >= 2)
    return apply_math(largest ? MathFn::Max : MathFn::Min, Args(inv, {{"x"}, {"y"}}), 2);
  Args a = reduction_args(inv);
  if (a[0].kind == Value::Kind::Tensor) return reduce_tensor(largest ? ReduceOp::Max : ReduceOp::Min, a);
  if (!is_sequence(a[0])) a.wrong_type(0, "a tensor or a list");
  require_tensor_for_axis(a);
  const std::vector<Value>& items = *a[0].items;
  if (items.empty()) a.fail(0, "the list is empty");
  Value best = items[0];
  for (size_t k = 1; k < items.size(); ++k) {
    Value better = host_binary(largest ? ast::BinOp::Gt : ast::BinOp::Lt, items[k], best, a.span(0));
    std::optional<bool> t = truthy(better);
    if (!t) a.fail(0, "items " + type_name(items[k]) + " and " + type_name(best) + " have no single order");
    if (*t) best = items[k];
  }
  return best;
}

Value max(const Invocation& inv) { return extreme(inv, true); }
Value min(const Invocation& inv) { return extreme(inv, false); }

const BuiltinEntry kEntries[] = {
    {"sum", sum},       {"mean", mean}, {"prod", prod}, {"argmax", argmax}, {"argmin", argmin},
    {"any", any},       {"all", all},   {"max", max},   {"min", min},
};

}  // namespace

std::span<const BuiltinEntry> reduction_builtins() { return kEntries; }

}  // namespace zyntax
