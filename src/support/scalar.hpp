// Scalar values and the meaning of every operator and math function on them.
// This file is the semantic ground truth: the reference executor, the host
// interpreter and the host tensor library all compute through it, and every
// backend is tested against what it says.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "support/dtype.hpp"

namespace zyntax {

enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, Mod, Pow,
  Min, Max,
  Eq, Ne, Lt, Le, Gt, Ge,
  And, Or,
};

enum class UnaryOp : uint8_t { Neg, Not };

// Math functions: the seed's MathFn set plus the activations kernels use.
enum class MathFn : uint8_t {
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh,
  Exp, Exp2, Log, Log2, Log10, Sqrt, Rsqrt, Abs, Floor, Ceil, Round, Trunc, Sign, Erf,
  Relu, Gelu, GeluTanh, Sigmoid, Silu,
  Pow, Atan2, Min, Max, Clamp, Fma,
};
inline constexpr MathFn kLastMathFn = MathFn::Fma;

enum class ReduceOp : uint8_t { Sum, Product, Min, Max, And, Or, ArgMin, ArgMax };
inline bool is_arg_reduce(ReduceOp op) { return op == ReduceOp::ArgMin || op == ReduceOp::ArgMax; }

const char* binary_op_symbol(BinaryOp op);  // "+", "==", "and", "min", ...
const char* unary_op_symbol(UnaryOp op);
const char* math_fn_name(MathFn fn);
std::optional<MathFn> parse_math_fn(std::string_view name);
int math_fn_arity(MathFn fn);
// True for functions that keep an integer argument's type (abs, min, max, clamp, sign).
bool math_fn_keeps_int(MathFn fn);
const char* reduce_op_name(ReduceOp op);  // "+", "*", "min", "max", "and", "or", "argmin", "argmax"
std::optional<ReduceOp> parse_reduce_op(std::string_view name);

inline bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq && op <= BinaryOp::Ge; }
inline bool is_logical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }

// One value of a DType. Floats are held as double but always hold a value
// exactly representable in their dtype; integers hold their wrapped value.
struct Scalar {
  DType dtype = DType::F32;
  double f = 0;    // float types
  int64_t i = 0;   // signed ints and bool (0/1)
  uint64_t u = 0;  // unsigned ints

  static Scalar of_float(double v, DType t = DType::F32);
  static Scalar of_int(int64_t v, DType t = DType::I64);
  static Scalar of_uint(uint64_t v, DType t = DType::U64);
  static Scalar of_bool(bool v);
  // Converts any double/int64 into dtype `t` (float->int truncates toward zero and saturates; NaN gives 0).
  static Scalar from_double(double v, DType t);
  static Scalar from_int(int64_t v, DType t);

  double as_double() const;
  int64_t as_int64() const;  // floats truncate toward zero, saturating
  bool truthy() const;
  std::string str() const;  // shortest text that round-trips ("1.5", "3", "true", "nan")
};

Scalar cast(const Scalar& s, DType to);

// Integer division by zero has no value; the caller reports it with a source location.
struct ScalarError {
  const char* message;
};

// Both operands must already have the same dtype (callers promote first).
// Comparisons give Bool; everything else gives the operands' dtype.
// Throws ScalarError for integer division or remainder by zero.
Scalar eval_binary(BinaryOp op, const Scalar& a, const Scalar& b);
Scalar eval_unary(UnaryOp op, const Scalar& a);
// All arguments must have the same dtype; the result has it too. Float
// functions are computed in double and rounded once to the dtype.
Scalar eval_math(MathFn fn, std::span<const Scalar> args);

// The value a reduction starts from and how it absorbs one more element.
// For ArgMin/ArgMax the caller tracks the index; `better` says whether `v`
// replaces the current best `cur` (first occurrence wins, NaN counts as extreme).
Scalar reduce_identity(ReduceOp op, DType t);
// What a reduction of `t` values accumulates in: float sums and products in
// f64 (rounded once at the end), everything else in `t`.
DType reduce_accumulator_dtype(ReduceOp op, DType t);
Scalar reduce_combine(ReduceOp op, const Scalar& acc, const Scalar& v);
// The binary operator a sum, product, min or max reduction folds with;
// nothing for the logical and arg reductions.
std::optional<BinaryOp> reduce_binary_op(ReduceOp op);
bool arg_better(ReduceOp op, const Scalar& cur, const Scalar& v);

}  // namespace zyntax
