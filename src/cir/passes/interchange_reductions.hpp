// Turns a reduction inside a parallel loop inside out, so the parallel loop
// becomes the innermost one and vectorises:
//
//   for j in 0..N:                      local acc[N]
//     var s = init                      for j in 0..N: acc[j] = init
//     for k in 0..K:            →       for k in 0..K:
//       s = s + A[i, k] * B[k, j]         for j in 0..N: acc[j] = acc[j] + A[i, k] * B[k, j]
//     out[i, j] = f(s)                  for j in 0..N: out[i, j] = f(acc[j])
//
// Each acc[j] still adds its terms in k order from the same start, so the
// result is the same bit for bit; what changes is that the j loop is now
// innermost over contiguous memory (the classic i-k-j matmul order).
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

// Rewrites every loop of this shape in a specialised kernel; leaves the rest.
// jam > 1: where j ends innermost under a step-1 loop k with no guard, k is
// unrolled by `jam` into the j loop, each acc[j] still summed in k order
// (one load and store of acc[j] per `jam` terms). Only where the terms read
// j in their last axis alone, with a step of at most 4. A body that is a
// sequence of values, reductions and stores (a softmax down each column)
// turns statement by statement. A parallel j
// loop (the tasks' own) splits into `tasks` blocks of columns first, each
// turned inside out on its own, so that the work stays on every thread.
Kernel interchange_reductions(const Kernel& k, int jam = 1, int64_t tasks = 1);

}  // namespace zyntax::cir
