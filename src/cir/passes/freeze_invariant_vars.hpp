// Mutable integer locals that never change value become lets.
// scalarize_tiles gives every `var` tile variable shape variables that the
// loop body reassigns with the shape of the new value (`o%n0 =
// onew%n0`), written with broadcasts over the shapes of the operands. In
// flash attention those are the same extents every time (the block's rows,
// the head size), but while they are mutable nothing downstream can
// compare extents through them, and fuse_product_epilogues leaves `o = a *
// o + P V` unfused.
//
// A `var n: i64 = init` whose init names only loop variables and lets is
// frozen when every assignment `n = e` stores a value equal to init at
// every iteration of the loops around it (equal_everywhere), given that the
// other frozen variables hold their inits: by induction over the program's
// steps each then always holds its init. The variables are frozen together
// (the greatest set for which this holds); the Decl becomes `let n = init`
// and its assignments go.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel freeze_invariant_vars(const Kernel& k);

}  // namespace zyntax::cir
