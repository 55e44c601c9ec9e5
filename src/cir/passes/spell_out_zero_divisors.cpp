#include "cir/passes/spell_out_zero_divisors.hpp"

#include <cmath>
#include <limits>

#include "cir/mutator.hpp"

namespace zyntax::cir {

namespace {

class ZeroDivisors : public IRMutator {
 public:
  using IRMutator::visit;

  Expr visit(const Binary* op) override {
    Expr e = IRMutator::visit(op);
    const Binary* b = e.as<Binary>();
    if (!b || (b->op != BinaryOp::Div && b->op != BinaryOp::Mod) || !is_float(b->type.dtype) || b->type.rank() != 0) return e;
    const FloatImm* zero = b->b.as<FloatImm>();
    if (!zero || zero->value != 0.0) return e;
    DType t = b->type.dtype;
    Span s = b->span;
    const Expr& a = b->a;
    Expr nan = FloatImm::make(std::numeric_limits<double>::quiet_NaN(), t, s);
    Expr is_nan = Binary::make(BinaryOp::Ne, a, a, s);
    if (b->op == BinaryOp::Mod) return Select::make(is_nan, a, nan, s);  // NaN either way; `a` still evaluated
    double inf = std::numeric_limits<double>::infinity(), sign = std::signbit(zero->value) ? -1.0 : 1.0;
    Expr nan_or_zero = Binary::make(BinaryOp::Or, is_nan, Binary::make(BinaryOp::Eq, a, FloatImm::make(0.0, t, s), s), s);
    Expr below = Binary::make(BinaryOp::Lt, a, FloatImm::make(0.0, t, s), s);
    Expr signed_inf = Select::make(below, FloatImm::make(-sign * inf, t, s), FloatImm::make(sign * inf, t, s), s);
    return Select::make(nan_or_zero, nan, signed_inf, s);
  }
};

}  // namespace

Kernel spell_out_zero_divisors(const Kernel& k) { return ZeroDivisors().mutate(k); }

}  // namespace zyntax::cir
