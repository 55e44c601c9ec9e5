#include "cir/passes/spell_out_special_literals.hpp"

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// Whether a shader compiler could know a float expression's value: nothing in
// it comes from memory or from a float variable, so after unrolling a loop
// or folding an index of a one-element axis the driver may compute it (an
// integer loop variable converted to float, say). Integer variables count as
// known: a compare and a select are cheaper than being wrong. Float lets
// count where their values do (`known_lets`); float vars do not (guarding
// every accumulation would cost hot loops a compare and a division each).
class MayBeConstantToTheDriver : public IRVisitor {
 public:
  using IRVisitor::visit;
  static bool of(const Expr& e, const std::set<std::string>& known_lets) {
    if (e.as<FloatImm>()) return false;  // literals are spelled out themselves
    MayBeConstantToTheDriver v(known_lets);
    v.include(e);
    return v.known_;
  }
  explicit MayBeConstantToTheDriver(const std::set<std::string>& known_lets) : known_lets_(known_lets) {}
  void visit(const Var* op) override {
    if (is_float(op->type.dtype) && !known_lets_.count(op->name)) known_ = false;
  }
  // A number made from a condition takes two values, which a driver may use
  // however little it knows of where the condition came from (lavapipe
  // turns f64(c) * x into c ? x : 0, wrong for an infinite x). Other
  // conversions are known where what they convert is: an integer read from
  // memory is not (guarding every such number would nest guards in guards).
  void visit(const Cast* op) override {
    if (op->value->type.dtype != DType::Bool) IRVisitor::visit(op);
  }
  void visit(const Access*) override { known_ = false; }
  void visit(const Dot*) override { known_ = false; }
  void visit(const Reduce*) override { known_ = false; }
  void visit(const MatMul*) override { known_ = false; }
  void visit(const Transpose*) override { known_ = false; }

 private:
  const std::set<std::string>& known_lets_;
  bool known_ = true;
};

class SpecialLiterals : public IRMutator {
 public:
  using IRMutator::visit;

  Expr visit(const Binary* op) override { return spell(IRMutator::visit(op)); }

  // `e`, a binary operation whose operands are spelled out already, spelled out.
  Expr spell(const Expr& e) {
    const Binary* b = e.as<Binary>();
    if (!b || !is_float(b->type.dtype) || b->type.rank() != 0) return e;
    DType t = b->type.dtype;
    Span s = b->span;
    // A literal NaN operand makes every arithmetic result NaN (min and max
    // propagate it too): said here, not left to a driver that assumes none.
    bool arithmetic = b->op == BinaryOp::Add || b->op == BinaryOp::Sub || b->op == BinaryOp::Mul || b->op == BinaryOp::Div ||
                      b->op == BinaryOp::Mod || b->op == BinaryOp::Min || b->op == BinaryOp::Max;
    for (const Expr& operand : {b->a, b->b})
      if (auto n = operand.as<FloatImm>(); n && std::isnan(n->value) && arithmetic) return FloatImm::make(kNaN, t, s);
    // One value less itself (or plus its negation) is 0, or NaN where the
    // value is infinite or NaN; drivers that may assume neither (OpenGL ES
    // has no `precise` for WGSL to ask) fold it to 0 once they see one value.
    if (Expr value = cancelling(*b); value.defined()) {
      Expr finite = Binary::make(BinaryOp::Lt, Math::make(MathFn::Abs, {value}, s), FloatImm::make(kInf, t, s), s);
      return Select::make(finite, FloatImm::make(0.0, t, s), FloatImm::make(kNaN, t, s), s);
    }
    if (const FloatImm* numerator = literal_zero(b->a); numerator && b->op == BinaryOp::Div && !literal_zero(b->b))
      return with_zero(b->op, b->b, std::signbit(numerator->value), /*zero_first=*/true, t, s);
    if (const FloatImm* first = literal_zero(b->a); first && b->op == BinaryOp::Sub && !literal_zero(b->b)) {
      Expr spelled = with_zero(b->op, b->b, std::signbit(first->value), /*zero_first=*/true, t, s);
      return spelled.defined() ? spelled : e;
    }
    bool commutes = b->op == BinaryOp::Mul || b->op == BinaryOp::Add;
    if (const FloatImm* zero = literal_zero(b->b)) {
      Expr spelled = with_zero(b->op, b->a, std::signbit(zero->value), false, t, s);
      return spelled.defined() ? spelled : e;
    }
    if (const FloatImm* zero = literal_zero(b->a); zero && commutes) {
      Expr spelled = with_zero(b->op, b->b, std::signbit(zero->value), false, t, s);
      return spelled.defined() ? spelled : e;
    }
    // An operand zero only to the driver's own constant propagation: the
    // same forms, chosen at run time (or by the driver, once it knows).
    // Both operands may be known: each guard falls back on the other's.
    Expr spelled = e;
    // A divisor the driver knows to be zero is never divided by, not even
    // in the branch not taken (a driver may fold that into garbage).
    if (known(b->b) && (b->op == BinaryOp::Div || b->op == BinaryOp::Mod))
      spelled = Binary::make(b->op, b->a, Select::make(Binary::make(BinaryOp::Eq, b->b, FloatImm::make(0.0, t, s), s), FloatImm::make(1.0, t, s), b->b, s), s);
    bool zero_first = b->op == BinaryOp::Div || b->op == BinaryOp::Sub;
    if (known(b->a) && (zero_first || commutes))
      if (Expr z = when_zero(b->a, b->op, b->b, zero_first, spelled, t, s); z.defined()) spelled = z;
    if (known(b->b))
      if (Expr z = when_zero(b->b, b->op, b->a, false, spelled, t, s); z.defined()) spelled = z;
    return spelled;
  }

  // x for x - x, x + -x and -x + x; nothing otherwise. A float widened
  // and narrowed back (f32(f64(x))) is x itself, exactly, and drivers see
  // through it: it counts as the same value.
  static Expr cancelling(const Binary& b) {
    auto same = [](const Expr& x, const Expr& y) { return equal(without_round_trips(x), without_round_trips(y)); };
    if (b.op == BinaryOp::Sub && same(b.a, b.b)) return b.a;
    if (b.op != BinaryOp::Add) return {};
    for (auto [x, y] : {std::pair{b.a, b.b}, std::pair{b.b, b.a}})
      if (const Unary* neg = y.as<Unary>(); neg && neg->op == UnaryOp::Neg && same(neg->a, x)) return x;
    return {};
  }

  static Expr without_round_trips(Expr e) {
    for (;;) {
      const Cast* outer = e.as<Cast>();
      const Cast* inner = outer ? outer->value.as<Cast>() : nullptr;
      if (!inner || !is_float(outer->type.dtype) || !is_float(inner->type.dtype) || inner->value->type.dtype != outer->type.dtype ||
          !(inner->type.dtype == outer->type.dtype || dtype_size(inner->type.dtype) > dtype_size(outer->type.dtype)))
        return e;
      e = inner->value;
    }
  }

  Expr visit(const Math* op) override {
    Expr e = IRMutator::visit(op);
    const Math* m = e.as<Math>();
    if (!m || m->fn != MathFn::Fma || !is_float(m->type.dtype) || m->type.rank() != 0) return e;
    DType t = m->type.dtype;
    Span s = m->span;
    // fma(a, b, ±0) is a * b (exact or rounded once either way) + ±0, whose
    // zero sign a compiler folding `+ 0` would lose.
    if (const FloatImm* zero = literal_zero(m->args[2])) {
      Expr product = spell(Binary::make(BinaryOp::Mul, m->args[0], m->args[1], s));
      Expr spelled = with_zero(BinaryOp::Add, product, std::signbit(zero->value), false, t, s);
      return spelled.defined() ? spelled : product;
    }
    // fma(a, ±0, c) is (a * ±0) + c exactly: the product spelled out. A
    // literal zero first, whichever factor it is: a guard on the other
    // factor alone would leave the literal to the fma, which a driver
    // inlines and folds (a * -0 + c as c, wrong for an infinite a).
    auto plus_addend = [&](int i, bool negative_zero) {
      return Binary::make(BinaryOp::Add, with_zero(BinaryOp::Mul, m->args[1 - i], negative_zero, false, t, s), m->args[2], s);
    };
    for (int i : {0, 1})
      if (const FloatImm* zero = literal_zero(m->args[i])) return plus_addend(i, std::signbit(zero->value));
    // Factors the driver may know: each zero spelled out, the fma kept for
    // the rest.
    Expr spelled = e;
    for (int i : {1, 0})
      if (known(m->args[i])) spelled = if_zero(m->args[i], plus_addend(i, true), plus_addend(i, false), spelled, t, s);
    return spelled;
  }

  Stmt visit(const Let* op) override {
    Stmt st = IRMutator::visit(op);
    if (const Let* let = st.as<Let>(); let && is_float(let->value->type.dtype) && known(let->value)) known_lets_.insert(let->name);
    return st;
  }

 private:
  // Names are unique within a kernel, so a let's name means that let everywhere.
  std::set<std::string> known_lets_;

  bool known(const Expr& e) const { return MayBeConstantToTheDriver::of(e, known_lets_); }

  static constexpr double kInf = std::numeric_limits<double>::infinity();
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  static const FloatImm* literal_zero(const Expr& e) {
    const FloatImm* z = e.as<FloatImm>();
    return z && z->value == 0.0 ? z : nullptr;
  }

  // `z op a` (zero_first) or `a op z` for `z`, maybe zero at run time:
  // where z is ±0 the forms of with_zero, else `otherwise`. Undefined where
  // the operator needs no form.
  static Expr when_zero(const Expr& z, BinaryOp op, const Expr& a, bool zero_first, const Expr& otherwise, DType t, Span s) {
    Expr plus = with_zero(op, a, false, zero_first, t, s), minus = with_zero(op, a, true, zero_first, t, s);
    if (!plus.defined() && !minus.defined()) return {};
    return if_zero(z, minus.defined() ? minus : otherwise, plus.defined() ? plus : otherwise, otherwise, t, s);
  }

  // `minus` where z is -0, `plus` where it is +0, else `otherwise`.
  static Expr if_zero(const Expr& z, const Expr& minus, const Expr& plus, const Expr& otherwise, DType t, Span s) {
    auto f = [&](double v) { return FloatImm::make(v, t, s); };
    Expr z_negative = Binary::make(BinaryOp::Lt, Binary::make(BinaryOp::Div, f(1.0), z, s), f(0.0), s);
    return Select::make(Binary::make(BinaryOp::Eq, z, f(0.0), s), Select::make(z_negative, minus, plus, s), otherwise, s);
  }

  // The IEEE result of `a op ±0` (or `±0 / a` when zero_first) in compares
  // and selects; undefined where the operation needs none.
  static Expr with_zero(BinaryOp op, const Expr& a, bool negative_zero, bool zero_first, DType t, Span s) {
    auto f = [&](double v) { return FloatImm::make(v, t, s); };
    auto bin = [&](BinaryOp o, Expr x, Expr y) { return Binary::make(o, std::move(x), std::move(y), s); };
    Expr is_nan = bin(BinaryOp::Ne, a, a);
    if (zero_first && op == BinaryOp::Sub) {
      // -0 - a is -a for every a; +0 - a is -a but where a is a zero (+0 -
      // +0 is +0), which a driver rewriting 0 - a as -a gets wrong.
      if (negative_zero) return {};
      return Select::make(bin(BinaryOp::Eq, a, f(0.0)), f(0.0), Unary::make(UnaryOp::Neg, a, s), s);
    }
    if (zero_first) {
      if (op != BinaryOp::Div) return {};
      // ±0 / a: NaN where a is NaN or 0, else a zero signed by the signs.
      Expr nan_or_zero = bin(BinaryOp::Or, is_nan, bin(BinaryOp::Eq, a, f(0.0)));
      Expr a_negative = bin(BinaryOp::Lt, a, f(0.0));
      return Select::make(nan_or_zero, f(kNaN),
                          Select::make(a_negative, f(negative_zero ? 0.0 : -0.0), f(negative_zero ? -0.0 : 0.0), s), s);
    }
    // a's sign, -0 included (1 / -0 is -inf, a run-time division, which
    // compilers leave alone); other values by a compare, which holds on
    // devices that flush 1 / huge to 0.
    Expr a_negative = bin(BinaryOp::Or, bin(BinaryOp::Lt, a, f(0.0)),
                          bin(BinaryOp::And, bin(BinaryOp::Eq, a, f(0.0)), bin(BinaryOp::Lt, bin(BinaryOp::Div, f(1.0), a), f(0.0))));
    switch (op) {
      case BinaryOp::Mod: return Select::make(is_nan, a, f(kNaN), s);  // NaN either way; `a` still evaluated
      case BinaryOp::Div: {
        Expr nan_or_zero = bin(BinaryOp::Or, is_nan, bin(BinaryOp::Eq, a, f(0.0)));
        double sign = negative_zero ? -1.0 : 1.0;
        Expr signed_inf = Select::make(bin(BinaryOp::Lt, a, f(0.0)), f(-sign * kInf), f(sign * kInf), s);
        return Select::make(nan_or_zero, f(kNaN), signed_inf, s);
      }
      case BinaryOp::Mul: {
        Expr not_finite = bin(BinaryOp::Or, is_nan, bin(BinaryOp::Eq, Math::make(MathFn::Abs, {a}, s), f(kInf)));
        Expr signed_zero = Select::make(a_negative, f(negative_zero ? 0.0 : -0.0), f(negative_zero ? -0.0 : 0.0), s);
        return Select::make(not_finite, f(kNaN), signed_zero, s);
      }
      case BinaryOp::Add:
      case BinaryOp::Sub:
        // a + 0.0 and a - -0.0 are +0 for a = -0; a + -0.0 and a - 0.0 are a.
        if ((op == BinaryOp::Add) == negative_zero) return {};
        return Select::make(bin(BinaryOp::Eq, a, f(0.0)), f(0.0), a, s);
      default: return {};
    }
  }
};

}  // namespace

Kernel spell_out_special_literals(const Kernel& k) { return SpecialLiterals().mutate(k); }

}  // namespace zyntax::cir
