// Conversions between host values and the tensor library's types, shared by
// the host operators and the builtins so that both treat numbers alike.
#pragma once

#include "interp/value.hpp"

namespace zyntax {

// The host value of one tensor element: Float for float dtypes, Int for
// integers, Bool for bool.
Value value_of_scalar(const Scalar& s);

// A number meeting a tensor of dtype `partner` becomes a 0-d tensor the way
// kernel literals do: it takes the partner's dtype, except that a float
// meeting an integer or bool tensor is f32 and an int meeting a bool tensor
// is i64. A tensor is returned as it is.
Tensor tensor_operand(const Value& v, DType partner);

// A number as a 0-d tensor of its own type (i64, f64 or bool), or the tensor itself.
Tensor tensor_of(const Value& v);

// True for shapes whose tensor of `element` overflows, exceeds the tensor
// library's limit or the machine's memory: allocating it would fail or end
// the process instead of giving an error the program can report.
bool shape_too_large(const Shape& shape, DType element);

}  // namespace zyntax
