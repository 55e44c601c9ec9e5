// Broadcasts between extents that are always equal, written out.
// scalarize_tiles broadcasts tile operands as NumPy does, and where it
// cannot tell two extents apart (a query block's `min(q + 32, n) - q`
// against the rows of the scores, `max(min(q + 32, n) - min(q, n), 0)`)
// it keeps the choice for run time: the result's extent is a select over
// both, and each operand is read at `select(X == 1, 0, i)`. On the GPU an
// index written so hides that a nest reads and writes one element per
// iteration, and the nest runs in one thread (schedule_gpu_tiles).
//
//   let p%n0 = select(S%n0 == 1, m%n0, select(m%n0 == 1, S%n0, max(S%n0, m%n0)))
//   for i in 0..p%n0: S[i] = exp(S[select(S%n0 == 1, 0, i)] - m[select(m%n0 == 1, 0, i)])
//     →  let p%n0 = S%n0
//        for i in 0..p%n0: S[i] = exp(S[i] - m[i])
//
// Of a specialised kernel, whose extents name only loop variables with
// constant bounds and lets, the pass decides by enumeration
// (equal_everywhere): an integer let that is a select takes the branch it
// equals at every iteration of the loops around; `select(X == 1, 0, i)`,
// with i the variable of an enclosing loop over 0..E and X equal to E
// everywhere, is i (when X is 1, i can only be 0); a select whose
// condition holds everywhere (or nowhere) is its branch; an integer let
// with one value everywhere (a key block's `max(min(k + 64, n) - min(k, n),
// 0)` where 64 divides n) is that constant. Kernels whose extents are
// run-time values are left as they are.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel fold_broadcast_extents(const Kernel& k);

}  // namespace zyntax::cir
