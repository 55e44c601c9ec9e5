#include "cir/passes/simplify.hpp"

#include <optional>
#include <vector>

#include "cir/affine.hpp"
#include "cir/equal.hpp"
#include "cir/mutator.hpp"

namespace zyntax::cir {

namespace {

std::optional<Scalar> constant_of(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (const IntImm* imm = e.as<IntImm>()) return Scalar::from_int(imm->value, e->type.dtype);
  if (const FloatImm* imm = e.as<FloatImm>()) return Scalar::of_float(imm->value, e->type.dtype);
  if (const BoolImm* imm = e.as<BoolImm>()) return Scalar::of_bool(imm->value);
  return std::nullopt;
}

Expr constant_expr(const Scalar& s, Span span) {
  if (is_float(s.dtype)) return FloatImm::make(s.f, s.dtype, span);
  if (is_bool(s.dtype)) return BoolImm::make(s.i != 0, span);
  if (is_unsigned_int(s.dtype)) return IntImm::make(static_cast<int64_t>(s.u), s.dtype, span);
  return IntImm::make(s.i, s.dtype, span);
}

bool is_int_scalar(const Expr& e) { return e.defined() && is_int(e->type.dtype) && e->type.is_scalar(); }
bool is_bool_scalar(const Expr& e) { return e.defined() && is_bool(e->type.dtype) && e->type.is_scalar(); }

bool is_int_value(const Expr& e, int64_t v) {
  const IntImm* imm = e.as<IntImm>();
  return imm && imm->value == v;
}

bool is_affine_op(BinaryOp op) { return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul; }

bool compare_holds(BinaryOp op, int64_t diff) {
  switch (op) {
    case BinaryOp::Eq: return diff == 0;
    case BinaryOp::Ne: return diff != 0;
    case BinaryOp::Lt: return diff < 0;
    case BinaryOp::Le: return diff <= 0;
    case BinaryOp::Gt: return diff > 0;
    default: return diff >= 0;
  }
}

// The result of a scalar operation on constants, or nothing when it has no
// value (integer division by zero) or its dtype is not the node's.
template <class Eval>
std::optional<Scalar> folded(DType node_dtype, Eval eval) {
  try {
    Scalar r = eval();
    if (r.dtype == node_dtype) return r;
  } catch (const ScalarError&) {
  }
  return std::nullopt;
}

template <class Eval>
Expr fold(const Type& node_type, Span span, Eval eval) {
  std::optional<Scalar> r = folded(node_type.dtype, eval);
  return r ? constant_expr(*r, span) : Expr{};
}

class Simplifier : public IRMutator {
 public:
  Simplifier() : IRMutator(/*rewrite_node_types=*/true) {}

  using IRMutator::mutate;
  using IRMutator::visit;

  // Splices in the taken branch of an If whose condition became constant.
  Block mutate(const Block& b) override {
    Block out;
    out.reserve(b.size());
    for (const Stmt& s : b) {
      Stmt r = mutate(s);
      if (!r.defined()) continue;
      const If* op = r.as<If>();
      const BoolImm* cond = op ? op->cond.as<BoolImm>() : nullptr;
      if (!cond) {
        out.push_back(std::move(r));
        continue;
      }
      const Block& taken = cond->value ? op->then_body : op->else_body;
      out.insert(out.end(), taken.begin(), taken.end());
    }
    return out;
  }

  Expr visit(const Cast* op) override {
    Expr v = mutate(op->value);
    if (auto c = constant_of(v)) {
      if (Expr r = fold(op->type, op->span, [&] { return cast(*c, op->type.dtype); }); r.defined()) return r;
    }
    if (v.defined() && v->type.dtype == op->type.dtype) return v;
    return rebuilt(op, !v.same_as(op->value), [&] { return Cast::make(op->type.dtype, v, op->span); });
  }

  Expr visit(const Unary* op) override {
    if (op->op == UnaryOp::Neg && is_i64_scalar(op->a)) return canonical(op, linearize(handle_or_self(op)));
    Expr a = mutate(op->a);
    if (auto c = constant_of(a)) {
      if (Expr r = fold(op->type, op->span, [&] { return eval_unary(op->op, *c); }); r.defined()) return r;
    }
    return rebuilt(op, !a.same_as(op->a), [&] { return Unary::make(op->op, a, op->span); });
  }

  Expr visit(const Binary* op) override {
    if (is_affine_op(op->op) && is_i64_scalar(op->a) && is_i64_scalar(op->b))
      return canonical(op, combine(op->op, linearize(op->a), linearize(op->b)));
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    auto ca = constant_of(a), cb = constant_of(b);
    if (ca && cb && ca->dtype == cb->dtype) {
      if (Expr r = fold(op->type, op->span, [&] { return eval_binary(op->op, *ca, *cb); }); r.defined()) return r;
    }
    if (Expr r = identity(op->op, a, b); r.defined()) return r;
    return rebuilt(op, !a.same_as(op->a) || !b.same_as(op->b), [&] { return Binary::make(op->op, a, b, op->span); });
  }

  Expr visit(const Select* op) override {
    Expr c = mutate(op->cond);
    Expr t = mutate(op->t);
    Expr f = mutate(op->f);
    bool changed = !c.same_as(op->cond) || !t.same_as(op->t) || !f.same_as(op->f);
    Expr r = rebuilt(op, changed, [&] { return Select::make(c, t, f, op->span); });
    // The taken branch replaces the select only if broadcasting did not
    // give the select a different shape.
    if (const BoolImm* cond = c.as<BoolImm>()) {
      const Expr& taken = cond->value ? t : f;
      if (equal(taken->type, r->type)) return taken;
    }
    return r;
  }

  Expr visit(const Math* op) override {
    std::vector<Expr> args = mutate_exprs(op->args);
    std::vector<Scalar> values;
    for (const Expr& a : args)
      if (auto c = constant_of(a)) values.push_back(*c);
    if (values.size() == args.size() && !args.empty()) {
      if (Expr r = fold(op->type, op->span, [&] { return eval_math(op->fn, values); }); r.defined()) return r;
    }
    return rebuilt(op, !same_exprs(args, op->args), [&] { return Math::make(op->fn, args, op->span); });
  }

  // Loops that run no iteration are dropped.
  Stmt visit(const For* op) override {
    Stmt r = IRMutator::visit(op);
    const For* f = r.as<For>();
    if (f && is_i64_scalar(f->lo) && is_i64_scalar(f->hi)) {
      auto extent = constant_difference(f->hi, f->lo);
      if (extent && *extent <= 0) return {};
    }
    return r;
  }

 private:
  template <class Rebuild>
  Expr rebuilt(const ExprNode* op, bool changed, Rebuild rebuild) {
    Expr self = handle_of(op);
    return !changed && self.defined() ? self : rebuild();
  }

  // The handle being visited, or an equal node when visit() was called
  // directly.
  Expr handle_or_self(const Unary* op) {
    Expr self = handle_of(op);
    return self.defined() ? self : Unary::make(op->op, op->a, op->span);
  }

  Affine linearize(const Expr& e) {
    return cir::linearize(e, [this](const Expr& t) { return mutate(t); });
  }

  // The canonical form of an i64 linear expression; the original handle if
  // it already was canonical.
  Expr canonical(const ExprNode* op, const Affine& form) {
    Expr r = to_expr(form);
    Expr self = handle_of(op);
    return self.defined() && equal(r, self) ? self : r;
  }

  // Rewrites of a binary operation with (already simplified) operands that
  // keep its value exactly; undefined when none applies.
  Expr identity(BinaryOp op, const Expr& a, const Expr& b) {
    if (is_i64_scalar(a) && is_i64_scalar(b)) {
      if (op == BinaryOp::Min || op == BinaryOp::Max) {
        if (auto d = constant_difference(a, b)) return (op == BinaryOp::Min) == (*d <= 0) ? a : b;
      }
      if (is_comparison(op)) {
        if (auto d = constant_difference(a, b)) return BoolImm::make(compare_holds(op, *d));
      }
    }
    if (is_int_scalar(a) && is_int_scalar(b) && a->type.dtype == b->type.dtype) {
      DType t = a->type.dtype;
      switch (op) {
        case BinaryOp::Add:
          if (is_int_value(b, 0)) return a;
          if (is_int_value(a, 0)) return b;
          break;
        case BinaryOp::Sub:
          if (is_int_value(b, 0)) return a;
          if (equal(a, b)) return IntImm::make(0, t);
          break;
        case BinaryOp::Mul:
          if (is_int_value(b, 1)) return a;
          if (is_int_value(a, 1)) return b;
          if (is_int_value(a, 0) || is_int_value(b, 0)) return IntImm::make(0, t);
          break;
        case BinaryOp::Div:
          if (is_int_value(b, 1)) return a;
          break;
        default: break;
      }
    }
    if (is_bool_scalar(a) && is_bool_scalar(b) && is_logical(op)) {
      // `true and x` is x, `true or x` is true, and the mirrored cases.
      bool absorbing = op == BinaryOp::Or;
      for (auto [c, other] : {std::pair{a, b}, std::pair{b, a}}) {
        if (const BoolImm* imm = c.as<BoolImm>()) return imm->value == absorbing ? c : other;
      }
    }
    return {};
  }
};

}  // namespace

std::optional<Scalar> evaluate_at(const Expr& e, const Substitution& point) {
  auto fold = [&](auto eval) { return folded(e->type.dtype, eval); };
  if (!e->type.is_scalar()) return std::nullopt;
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::BoolImm:
    case ExprKind::FloatImm: return constant_of(e);
    case ExprKind::Var: {
      auto it = point.find(e.as<Var>()->name);
      if (it == point.end()) return std::nullopt;
      std::optional<Scalar> v = constant_of(it->second);
      if (!v || v->dtype != e->type.dtype) return std::nullopt;
      return v;
    }
    case ExprKind::Cast: {
      auto v = evaluate_at(e.as<Cast>()->value, point);
      if (!v) return std::nullopt;
      return fold([&] { return cast(*v, e->type.dtype); });
    }
    case ExprKind::Unary: {
      const Unary* op = e.as<Unary>();
      auto a = evaluate_at(op->a, point);
      if (!a) return std::nullopt;
      return fold([&] { return eval_unary(op->op, *a); });
    }
    case ExprKind::Binary: {
      const Binary* op = e.as<Binary>();
      auto a = evaluate_at(op->a, point), b = a ? evaluate_at(op->b, point) : std::nullopt;
      if (!a || !b || a->dtype != b->dtype) return std::nullopt;
      return fold([&] { return eval_binary(op->op, *a, *b); });
    }
    case ExprKind::Select: {
      const Select* op = e.as<Select>();
      auto c = evaluate_at(op->cond, point);
      if (!c || !is_bool(c->dtype)) return std::nullopt;
      return evaluate_at(c->i != 0 ? op->t : op->f, point);
    }
    case ExprKind::Math: {
      const Math* op = e.as<Math>();
      std::vector<Scalar> args;
      for (const Expr& a : op->args) {
        auto v = evaluate_at(a, point);
        if (!v) return std::nullopt;
        args.push_back(*v);
      }
      if (args.empty()) return std::nullopt;
      return fold([&] { return eval_math(op->fn, args); });
    }
    default: return std::nullopt;
  }
}

Expr simplify(const Expr& e) { return Simplifier().mutate(e); }

Kernel simplify(const Kernel& k) { return Simplifier().mutate(k); }

}  // namespace zyntax::cir
