// Linear forms of i64 index arithmetic: sum of coeff * term plus a constant.
//
// The coefficients live in wrapping 64-bit arithmetic, which is exactly the
// semantics of i64 + - *, so rewriting an expression through its linear
// form never changes its value, overflow included. Terms are the maximal
// subexpressions that are not + - * by a constant or unary minus (names,
// accesses, min/max, divisions, products of two non-constants).
//
// Terms are keyed by their printed text, which gives the canonical order
// that to_expr() rebuilds in: `(d*2 + 1) + 1` and `2*d + 2` both come back
// as `d * 2 + 2`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

struct Affine {
  struct Term {
    Expr expr;
    uint64_t coeff;
  };
  std::map<std::string, Term> terms;  // zero coefficients are kept out
  uint64_t constant = 0;

  bool is_constant() const { return terms.empty(); }
};

// Whether `e` is an i64 scalar, the only type linear forms are built for.
bool is_i64_scalar(const Expr& e);

// The linear form of an i64 scalar expression. `atom`, when given, is
// applied to every term before it is added (the simplifier passes itself so
// that terms come out simplified); what it returns is split further.
Affine linearize(const Expr& e, const std::function<Expr(const Expr&)>& atom = {});

// a + b, a - b or a * b (Add, Sub, Mul); a product of two non-constant
// forms becomes a single term.
Affine combine(BinaryOp op, const Affine& a, const Affine& b);

// The canonical expression for a linear form.
Expr to_expr(const Affine& a);

// The value of an integer literal; nothing for anything else.
std::optional<int64_t> constant_value(const Expr& e);

// a - b when it does not depend on any term; both must be i64 scalars.
std::optional<int64_t> constant_difference(const Expr& a, const Expr& b);

}  // namespace zyntax::cir
