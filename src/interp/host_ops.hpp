// Operators of the host language on values: arithmetic and comparisons on
// numbers (int / int truncates toward zero, as in kernels), element-wise on
// tensors with NumPy broadcasting (a number meeting a tensor takes the
// tensor's dtype), `@` as matrix product, `+` joining strings and lists;
// indexing and slicing of lists, tuples, strings and tensors.
#pragma once

#include <optional>
#include <vector>

#include "interp/value.hpp"
#include "syntax/ast.hpp"

namespace zyntax {

// Errors are zyntax::Error at `span` naming the operator and both operand types/shapes.
Value host_binary(ast::BinOp op, const Value& a, const Value& b, Span span);
Value host_unary(ast::UnOp op, const Value& a, Span span);

// One evaluated position of `v[...]`.
struct HostIndex {
  bool is_slice = false;
  int64_t index = 0;
  std::optional<int64_t> lo, hi;
  Span span;
};

// v[...]: lists/tuples/strings take one index (negative counts from the end)
// or one slice; tensors take NumPy basic indexing and give a number when every
// axis is indexed, a tensor otherwise.
Value host_index(const Value& v, const std::vector<HostIndex>& idx, Span span);
// v[...] = x for lists (one index) and tensors (in place, x broadcast).
void host_index_assign(Value& v, const std::vector<HostIndex>& idx, const Value& x, Span span);

}  // namespace zyntax
