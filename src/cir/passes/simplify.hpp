// Expression simplification: constant folding, integer identities and a
// canonical form for i64 index arithmetic, plus the statement clean-ups that
// constants enable (dead branches, empty loops).
//
// Only rewrites that keep the exact value are made: integers wrap like the
// target does, division is left alone (it truncates toward zero, so
// `(x*2)/2` is not `x` when x may be negative), and floating-point
// expressions are folded only when every operand is a constant.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Expr simplify(const Expr& e);
// Also simplifies the param, Decl and Allocate types, node types, and the
// shared-memory hint.
Kernel simplify(const Kernel& k);

}  // namespace zyntax::cir
