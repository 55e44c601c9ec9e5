// Moves a guard that is a range of the loop into the loop's bounds:
//
//   for j in lo..hi:                      if uniform:
//     if uniform and j + a >= 0             for j in max(lo, -a)..min(hi, w - a):
//        and j + a < w:             →         body
//       body
//
// (guard_range says which guards are such ranges.) The iterations dropped are
// exactly those where the guard fails and nothing ran, so the result is the
// same; what changes is that the loop body has no test and every index in it
// is in bounds, so it vectorises. Zero padding in a depthwise convolution,
// once its reduction is interchanged, is the case this is for.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

// Rewrites every loop of step 1 whose body is one such `if` (no else).
Kernel partition_guarded_loops(const Kernel& k);

}  // namespace zyntax::cir
