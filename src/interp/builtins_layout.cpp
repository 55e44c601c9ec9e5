// Builtins that rearrange tensors without computing on their elements:
// shape, reshape, transpose, split, concat, astype.
#include "interp/builtins_args.hpp"
#include "interp/host_convert.hpp"

namespace zyntax {

namespace {

Value shape(const Invocation& inv) {
  Args a(inv, {{"tensor"}});
  std::vector<Value> dims;
  for (int64_t d : a.tensor(0).shape()) dims.push_back(Value::of_int(d));
  return Value::of_list(std::move(dims));
}

// The result shares the data, as NumPy's reshape gives a view.
Value reshape_tensor(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"shape"}});
  return Value::of_tensor(reshape(a.tensor(0), a.int_list(1)));
}

Value transpose_tensor(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"perm", kOptional}});
  const Tensor& t = a.tensor(0);
  return Value::of_tensor(transpose(t, a.has(1) ? a.int_list(1) : std::vector<int64_t>{}));
}

Value split_tensor(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"parts"}, {"axis", kOptional}});
  const Tensor& t = a.tensor(0);
  std::vector<Value> pieces;
  for (Tensor& piece : split(t, a.integer(1), a.integer_or(2, 0))) pieces.push_back(Value::of_tensor(std::move(piece)));
  return Value::of_tuple(std::move(pieces));
}

Value concat_tensors(const Invocation& inv) {
  Args a(inv, {{"tensors"}, {"axis", kOptional}});
  const Value& list = a[0];
  if (list.kind != Value::Kind::List && list.kind != Value::Kind::Tuple) a.wrong_type(0, "a list of tensors");
  std::vector<Tensor> parts;
  for (size_t k = 0; k < list.items->size(); ++k) {
    const Value& item = (*list.items)[k];
    if (item.kind != Value::Kind::Tensor || !item.tensor.valid())
      a.fail(0, "tensors must be a list of tensors, but item " + std::to_string(k) + " is " + type_name(item));
    parts.push_back(item.tensor);
  }
  return Value::of_tensor(concat(parts, a.integer_or(1, 0)));
}

Value astype(const Invocation& inv) {
  Args a(inv, {{"tensor"}, {"dtype"}});
  const Tensor& t = a.tensor(0);
  DType to = a.dtype(1);
  if (shape_too_large(t.shape(), to)) a.fail_call("shape " + shape_str(t.shape()) + " is too large");
  return Value::of_tensor(t.astype(to));
}

const BuiltinEntry kEntries[] = {
    {"shape", shape},   {"reshape", reshape_tensor}, {"transpose", transpose_tensor},
    {"split", split_tensor}, {"concat", concat_tensors}, {"astype", astype},
};

}  // namespace

std::span<const BuiltinEntry> layout_builtins() { return kEntries; }

}  // namespace zyntax
