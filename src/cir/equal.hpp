// Structural equality of CIR expressions: same node kinds, values, dtypes,
// names and children, recursively. Spans are ignored. Two undefined handles
// are equal.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

bool equal(const Expr& a, const Expr& b);
// The same positions: indices, or slices with equal bounds, axis by axis.
bool equal(const std::vector<AxisSel>& a, const std::vector<AxisSel>& b);
// Same dtype and structurally equal extents.
bool equal(const Type& a, const Type& b);

}  // namespace zyntax::cir
