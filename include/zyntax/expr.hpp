// Expressions traced by ComputeDevice::elementwise: the function given to it
// receives one ExprId per input (its element at the current index) and
// returns the output's element as an expression built with the operators
// and functions below. The expression graph is recorded (identical
// subexpressions merged), lowered to one fused kernel and compiled once per
// device.
#pragma once

#include <cstdint>

#include "zyntax/export.hpp"

namespace zyntax {

class Trace;

// A node of the expression graph being traced; cheap to copy. Numbers mix
// with it as f32 constants: `x * 0.5f + 1.0f`.
class ZYNTAX_API ExprId {
 public:
  ExprId(float constant);  // NOLINT: implicit, so constants read naturally
  ExprId(double constant);  // NOLINT
  ExprId(int constant);  // NOLINT

  uint32_t index() const { return index_; }
  Trace* trace() const { return trace_; }

  ExprId(Trace* trace, uint32_t index) : trace_(trace), index_(index) {}

 private:
  Trace* trace_ = nullptr;  // null for a constant not yet in a graph
  uint32_t index_ = 0;
  float constant_ = 0;
  friend class Trace;
};

ZYNTAX_API ExprId operator+(ExprId a, ExprId b);
ZYNTAX_API ExprId operator-(ExprId a, ExprId b);
ZYNTAX_API ExprId operator*(ExprId a, ExprId b);
ZYNTAX_API ExprId operator/(ExprId a, ExprId b);
ZYNTAX_API ExprId operator-(ExprId a);
// Comparisons give 1 or 0, for where() and masks.
ZYNTAX_API ExprId operator<(ExprId a, ExprId b);
ZYNTAX_API ExprId operator>(ExprId a, ExprId b);
ZYNTAX_API ExprId operator<=(ExprId a, ExprId b);
ZYNTAX_API ExprId operator>=(ExprId a, ExprId b);

ZYNTAX_API ExprId exp(ExprId x);
ZYNTAX_API ExprId log(ExprId x);
ZYNTAX_API ExprId sqrt(ExprId x);
ZYNTAX_API ExprId rsqrt(ExprId x);
ZYNTAX_API ExprId tanh(ExprId x);
ZYNTAX_API ExprId sin(ExprId x);
ZYNTAX_API ExprId cos(ExprId x);
ZYNTAX_API ExprId abs(ExprId x);
ZYNTAX_API ExprId sigmoid(ExprId x);
ZYNTAX_API ExprId silu(ExprId x);
ZYNTAX_API ExprId gelu(ExprId x);
ZYNTAX_API ExprId relu(ExprId x);
ZYNTAX_API ExprId pow(ExprId x, ExprId y);
ZYNTAX_API ExprId min(ExprId a, ExprId b);
ZYNTAX_API ExprId max(ExprId a, ExprId b);
// cond != 0 ? a : b
ZYNTAX_API ExprId where(ExprId cond, ExprId a, ExprId b);

}  // namespace zyntax
