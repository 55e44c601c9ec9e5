// Whether two integer expressions agree wherever they are evaluated: at
// every iteration of the loops around them, enumerated. Shape expressions
// of a specialised kernel depend only on loop variables with constant
// bounds (a query block's `min(64, seq - q)`), and whether two of them are
// equal at every iteration is often beyond algebra (`min(q + 64, n) - q`
// against `min(64, n - q)`, broadcasts of equal extents) yet cheap to
// check exhaustively.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cir/ir.hpp"
#include "cir/substitute.hpp"

namespace zyntax::cir {

// `loops`: the loops around the expressions, outermost first; `lets`: the
// values of the lets they may name, already resolved. Expressions equal as
// written are equal whatever they name (the caller knows those names hold
// one value where both are evaluated); otherwise false where a name is
// neither a loop variable nor a let (a mutable local, an array), a bound
// does not fold to a constant, or the loops that matter have more than
// `max_points` iterations together.
bool equal_everywhere(const Expr& a, const Expr& b, const std::vector<const For*>& loops, const Substitution& lets,
                      int64_t max_points = 1 << 14);

// The largest value `e` takes at any iteration of the loops around it,
// enumerated as equal_everywhere does; nothing where that cannot be told.
std::optional<int64_t> largest_everywhere(const Expr& e, const std::vector<const For*>& loops, const Substitution& lets,
                                          int64_t max_points = 1 << 14);

// The lets of a kernel whose names are bound once, by their values with
// earlier such lets substituted (a let's value names only what is in scope
// where it stands, so its resolved value holds wherever the let is seen).
Substitution resolved_lets(const Kernel& k);

}  // namespace zyntax::cir
