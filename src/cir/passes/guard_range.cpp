#include "cir/passes/guard_range.hpp"

#include "cir/affine.hpp"
#include "cir/reads.hpp"

namespace zyntax::cir {

namespace {

// Integer or boolean arithmetic that cannot fault: no memory, no division by
// a variable or by zero.
bool pure(const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::BoolImm: return true;
    case ExprKind::Var: return is_int(e->type.dtype) || e->type.dtype == DType::Bool;
    case ExprKind::Unary: return pure(e.as<Unary>()->a);
    case ExprKind::Binary: {
      auto b = e.as<Binary>();
      if (!is_int(b->a->type.dtype) && b->a->type.dtype != DType::Bool) return false;
      if (b->op == BinaryOp::Div || b->op == BinaryOp::Mod) {
        auto c = b->b.as<IntImm>();
        return c && c->value > 0 && pure(b->a);
      }
      return b->op != BinaryOp::Pow && pure(b->a) && pure(b->b);
    }
    default: return false;
  }
}

Expr conjoin(const Expr& a, const Expr& b) { return a.defined() ? Binary::make(BinaryOp::And, a, b) : b; }

}  // namespace

GuardSplit split_uniform(const Expr& guard, const std::string& var) {
  std::vector<Expr> parts = chain_operands(guard, BinaryOp::And);
  GuardSplit s;
  for (const Expr& c : parts) {
    if (!reads_any(c, {var}) && pure(c))
      s.uniform = conjoin(s.uniform, c);
    else
      s.rest = conjoin(s.rest, c);
  }
  if (!s.uniform.defined()) s.uniform = BoolImm::make(true);
  if (!s.rest.defined()) s.rest = BoolImm::make(true);
  return s;
}

std::optional<GuardRange> guard_range(const Expr& guard, const std::string& var) {
  if (!pure(guard)) return std::nullopt;
  std::vector<Expr> parts = chain_operands(guard, BinaryOp::And);
  GuardRange r;
  for (const Expr& c : parts) {
    if (!reads_any(c, {var})) {
      r.uniform = conjoin(r.uniform, c);
      continue;
    }
    auto cmp = c.as<Binary>();
    if (!cmp || !is_i64_scalar(cmp->a) || !is_i64_scalar(cmp->b)) return std::nullopt;
    // d = a - b = coeff * var + rest
    Affine d = combine(BinaryOp::Sub, linearize(cmp->a), linearize(cmp->b));
    uint64_t coeff = 0;
    Affine rest = d;
    for (const auto& [key, term] : d.terms) {
      auto v = term.expr.as<Var>();
      if (v && v->name == var) {
        coeff = term.coeff;
        rest.terms.erase(key);
      } else if (reads_any(term.expr, {var})) {
        return std::nullopt;
      }
    }
    Expr R = to_expr(rest);
    Expr one = i64(1);
    if (coeff == 1) {  // var + R (op) 0
      switch (cmp->op) {
        case BinaryOp::Ge: r.lower.push_back(i64(0) - R); break;          // var >= -R
        case BinaryOp::Gt: r.lower.push_back(one - R); break;             // var >= 1 - R
        case BinaryOp::Lt: r.upper.push_back(i64(0) - R); break;          // var < -R
        case BinaryOp::Le: r.upper.push_back(one - R); break;             // var < 1 - R
        default: return std::nullopt;
      }
    } else if (coeff == ~uint64_t{0}) {  // R - var (op) 0
      switch (cmp->op) {
        case BinaryOp::Ge: r.upper.push_back(R + one); break;             // var <= R
        case BinaryOp::Gt: r.upper.push_back(R); break;                   // var < R
        case BinaryOp::Lt: r.lower.push_back(R + one); break;             // var > R
        case BinaryOp::Le: r.lower.push_back(R); break;                   // var >= R
        default: return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
  }
  if (!r.uniform.defined()) r.uniform = BoolImm::make(true);
  return r;
}

}  // namespace zyntax::cir
