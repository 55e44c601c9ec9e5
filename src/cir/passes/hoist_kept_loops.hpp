// Puts a reduce kernel's kept loops outside its reduced ones, as parallel
// loops. A reduction over an axis other than the last is lowered in the
// order its loops are written, the reduced loop outermost:
//
//   for i in 0..r:                     parallel for j in 0..c:
//     for j in 0..c:           →         for i in 0..r:
//       yield[j] m[i, j]                   yield[j] m[i, j]
//
// where nothing can run in parallel; inside out, each output element is a
// parallel iteration (on a GPU a thread, and consecutive threads read
// consecutive elements of a row). Each element still receives its values
// in the same order, so the result is the same bit for bit. Applies to a
// perfect nest of loops with bounds that do not depend on one another,
// whose yields all go to output indices that are exactly the kept loops'
// variables; leaves other kernels as they are.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel hoist_kept_loops(const Kernel& k);

}  // namespace zyntax::cir
