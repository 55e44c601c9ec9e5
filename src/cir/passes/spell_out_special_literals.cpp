#include "cir/passes/spell_out_special_literals.hpp"

#include <cmath>
#include <limits>

#include "cir/mutator.hpp"

namespace zyntax::cir {

namespace {

class SpecialLiterals : public IRMutator {
 public:
  using IRMutator::visit;

  Expr visit(const Binary* op) override {
    Expr e = IRMutator::visit(op);
    const Binary* b = e.as<Binary>();
    if (!b || !is_float(b->type.dtype) || b->type.rank() != 0) return e;
    DType t = b->type.dtype;
    Span s = b->span;
    auto f = [&](double v) { return FloatImm::make(v, t, s); };
    auto bin = [&](BinaryOp o, Expr x, Expr y) { return Binary::make(o, std::move(x), std::move(y), s); };
    double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    // A literal NaN operand makes every arithmetic result NaN (min and max
    // propagate it too): said here, not left to a driver that assumes none.
    bool arithmetic = b->op == BinaryOp::Add || b->op == BinaryOp::Sub || b->op == BinaryOp::Mul || b->op == BinaryOp::Div ||
                      b->op == BinaryOp::Mod || b->op == BinaryOp::Min || b->op == BinaryOp::Max;
    for (const Expr& operand : {b->a, b->b})
      if (auto n = operand.as<FloatImm>(); n && std::isnan(n->value) && arithmetic) return f(nan);
    // 0.0 / a: NaN where a is NaN or 0, else a zero signed by the signs.
    if (const FloatImm* numerator = literal_zero(b->a); numerator && b->op == BinaryOp::Div && !literal_zero(b->b)) {
      const Expr& a = b->b;
      Expr nan_or_zero = bin(BinaryOp::Or, bin(BinaryOp::Ne, a, a), bin(BinaryOp::Eq, a, f(0.0)));
      bool negative = std::signbit(numerator->value);
      Expr a_negative = bin(BinaryOp::Lt, a, f(0.0));
      return Select::make(nan_or_zero, f(nan), Select::make(a_negative, f(negative ? 0.0 : -0.0), f(negative ? -0.0 : 0.0), s), s);
    }
    const FloatImm* zero = literal_zero(b->b);
    Expr a = b->a;
    if (!zero && (b->op == BinaryOp::Mul || b->op == BinaryOp::Add) && (zero = literal_zero(b->a))) a = b->b;  // commutes
    if (!zero) return e;
    bool negative_zero = std::signbit(zero->value);
    Expr is_nan = bin(BinaryOp::Ne, a, a);
    // a's sign, -0 included (1 / -0 is -inf, a run-time division, which
    // compilers leave alone); other values by a compare, which holds on
    // devices that flush 1 / huge to 0.
    Expr a_negative = bin(BinaryOp::Or, bin(BinaryOp::Lt, a, f(0.0)),
                          bin(BinaryOp::And, bin(BinaryOp::Eq, a, f(0.0)), bin(BinaryOp::Lt, bin(BinaryOp::Div, f(1.0), a), f(0.0))));
    switch (b->op) {
      case BinaryOp::Mod: return Select::make(is_nan, a, f(nan), s);  // NaN either way; `a` still evaluated
      case BinaryOp::Div: {
        Expr nan_or_zero = bin(BinaryOp::Or, is_nan, bin(BinaryOp::Eq, a, f(0.0)));
        double sign = negative_zero ? -1.0 : 1.0;
        Expr signed_inf = Select::make(bin(BinaryOp::Lt, a, f(0.0)), f(-sign * inf), f(sign * inf), s);
        return Select::make(nan_or_zero, f(nan), signed_inf, s);
      }
      case BinaryOp::Mul: {
        Expr not_finite = bin(BinaryOp::Or, is_nan, bin(BinaryOp::Eq, Math::make(MathFn::Abs, {a}, s), f(inf)));
        Expr signed_zero = Select::make(a_negative, f(negative_zero ? 0.0 : -0.0), f(negative_zero ? -0.0 : 0.0), s);
        return Select::make(not_finite, f(nan), signed_zero, s);
      }
      case BinaryOp::Add:
      case BinaryOp::Sub:
        // a + 0.0 and a - -0.0 are +0 for a = -0; a + -0.0 and a - 0.0 are a.
        if ((b->op == BinaryOp::Add) == negative_zero) return e;
        return Select::make(bin(BinaryOp::Eq, a, f(0.0)), f(0.0), a, s);
      default: return e;
    }
  }

  static const FloatImm* literal_zero(const Expr& e) {
    const FloatImm* z = e.as<FloatImm>();
    return z && z->value == 0.0 ? z : nullptr;
  }
};

}  // namespace

Kernel spell_out_special_literals(const Kernel& k) { return SpecialLiterals().mutate(k); }

}  // namespace zyntax::cir
