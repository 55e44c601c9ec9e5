#include "cir/affine.hpp"

#include <vector>

#include "cir/printer.hpp"

namespace zyntax::cir {

namespace {

void add_term(Affine& a, const Expr& e, uint64_t coeff) {
  if (coeff == 0) return;
  std::string key = print(e);
  auto it = a.terms.find(key);
  if (it == a.terms.end()) {
    a.terms.emplace(std::move(key), Affine::Term{e, coeff});
  } else if ((it->second.coeff += coeff) == 0) {
    a.terms.erase(it);
  }
}

Affine term(const Expr& e, uint64_t coeff = 1) {
  Affine a;
  add_term(a, e, coeff);
  return a;
}

Affine scaled(const Affine& a, uint64_t k) {
  Affine r;
  r.constant = a.constant * k;
  for (const auto& [key, t] : a.terms) add_term(r, t.expr, t.coeff * k);
  return r;
}

Affine sum(const Affine& a, const Affine& b, uint64_t sign) {
  Affine r = a;
  r.constant += sign * b.constant;
  for (const auto& [key, t] : b.terms) add_term(r, t.expr, sign * t.coeff);
  return r;
}

// A single term with no constant: its coefficient is pulled out of products
// so that `(x*2) * y` and `x * (y*2)` give the same term.
bool is_monomial(const Affine& a) { return a.constant == 0 && a.terms.size() == 1; }

Affine product(const Affine& a, const Affine& b) {
  uint64_t k = 1;
  auto factor = [&k](const Affine& f) {
    if (!is_monomial(f)) return to_expr(f);
    k *= f.terms.begin()->second.coeff;
    return f.terms.begin()->second.expr;
  };
  Expr x = factor(a), y = factor(b);
  // Commutative: order the factors by their text for a canonical product.
  if (print(y) < print(x)) std::swap(x, y);
  return term(x * y, k);
}

Expr coeff_times(const Expr& t, uint64_t k) { return k == 1 ? t : t * i64(static_cast<int64_t>(k)); }

}  // namespace

bool is_i64_scalar(const Expr& e) { return e.defined() && e->type.dtype == DType::I64 && e->type.is_scalar(); }

Affine combine(BinaryOp op, const Affine& a, const Affine& b) {
  switch (op) {
    case BinaryOp::Add: return sum(a, b, 1);
    case BinaryOp::Sub: return sum(a, b, ~uint64_t{0});
    default:
      if (b.is_constant()) return scaled(a, b.constant);
      if (a.is_constant()) return scaled(b, a.constant);
      return product(a, b);
  }
}

Affine linearize(const Expr& e, const std::function<Expr(const Expr&)>& atom) {
  if (const IntImm* imm = e.as<IntImm>(); imm && is_i64_scalar(e)) {
    Affine a;
    a.constant = static_cast<uint64_t>(imm->value);
    return a;
  }
  if (is_i64_scalar(e)) {
    if (const Unary* u = e.as<Unary>(); u && u->op == UnaryOp::Neg && is_i64_scalar(u->a))
      return scaled(linearize(u->a, atom), ~uint64_t{0});
    const Binary* b = e.as<Binary>();
    if (b && (b->op == BinaryOp::Add || b->op == BinaryOp::Sub || b->op == BinaryOp::Mul) && is_i64_scalar(b->a) &&
        is_i64_scalar(b->b))
      return combine(b->op, linearize(b->a, atom), linearize(b->b, atom));
  }
  if (atom) return linearize(atom(e));
  return term(e);
}

Expr to_expr(const Affine& a) {
  std::vector<const Affine::Term*> positive, negative;
  for (const auto& [key, t] : a.terms) (static_cast<int64_t>(t.coeff) > 0 ? positive : negative).push_back(&t);

  Expr r;
  for (const Affine::Term* t : positive) {
    Expr piece = coeff_times(t->expr, t->coeff);
    r = r.defined() ? r + piece : piece;
  }
  int64_t c = static_cast<int64_t>(a.constant);
  // `64 - a` reads better than `-a + 64`.
  if (!r.defined() && c > 0 && !negative.empty()) {
    r = i64(c);
    c = 0;
  }
  for (const Affine::Term* t : negative) {
    uint64_t k = 0 - t->coeff;
    if (r.defined()) {
      r = r - coeff_times(t->expr, k);
    } else {
      r = k == 1 ? Unary::make(UnaryOp::Neg, t->expr) : coeff_times(t->expr, t->coeff);
    }
  }
  if (c == 0) return r.defined() ? r : i64(0);
  if (!r.defined()) return i64(c);
  // The most negative constant has no positive counterpart to subtract.
  if (c > 0 || c == INT64_MIN) return r + i64(c);
  return r - i64(-c);
}

std::optional<int64_t> constant_value(const Expr& e) {
  if (auto c = e.as<IntImm>()) return c->value;
  return std::nullopt;
}

std::optional<int64_t> constant_difference(const Expr& a, const Expr& b) {
  Affine d = combine(BinaryOp::Sub, linearize(a), linearize(b));
  if (!d.is_constant()) return std::nullopt;
  return static_cast<int64_t>(d.constant);
}

}  // namespace zyntax::cir
