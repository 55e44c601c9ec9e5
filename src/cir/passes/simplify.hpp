// Expression simplification: constant folding, integer identities and a
// canonical form for i64 index arithmetic, plus the statement clean-ups that
// constants enable (dead branches, empty loops).
//
// Only rewrites that keep the exact value are made: integers wrap like the
// target does, division is left alone (it truncates toward zero, so
// `(x*2)/2` is not `x` when x may be negative), and floating-point
// expressions are folded only when every operand is a constant.
#pragma once

#include <optional>

#include "cir/ir.hpp"
#include "cir/substitute.hpp"
#include "support/scalar.hpp"

namespace zyntax::cir {

Expr simplify(const Expr& e);
// Also simplifies the param, Decl and Allocate types, node types, and the
// shared-memory hint.
Kernel simplify(const Kernel& k);

// The constant simplify(substitute(e, point)) folds a scalar expression to,
// where `point` binds its names to constants, computed without building a
// tree (equal_everywhere evaluates at thousands of points); nothing where a
// node is not a scalar operation (an access, a tile) or has no value
// (integer division by zero), which the simplifier may still fold as a whole
// (`x / 0 * 0`).
std::optional<Scalar> evaluate_at(const Expr& e, const Substitution& point);

}  // namespace zyntax::cir
