// Structural equality of CIR expressions: same node kinds, values, dtypes,
// names and children, recursively. Spans are ignored. Two undefined handles
// are equal.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

bool equal(const Expr& a, const Expr& b);
// Same dtype and structurally equal extents.
bool equal(const Type& a, const Type& b);

}  // namespace zyntax::cir
