// Collapses a nest of parallel loops into one parallel loop over all their
// iterations, so that a GPU's threads share every independent iteration of
// a kernel instead of only its outermost loop's:
//
//   parallel for i in 0..m:            parallel for t in 0..m*n:
//     parallel for j in 0..n:     →      let i = t / n
//       body                             let j = t % n
//                                        body
//
// Consecutive threads then take consecutive j, so their loads and stores of
// row-major tensors are coalesced. A loop is merged with the parallel loop
// that is its whole body when the inner loop's bounds do not depend on the
// outer variable and both steps are positive constants. Iterations of
// parallel loops are independent, so any order computes the same result.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel collapse_parallel_loops(const Kernel& k);

// The nest of loops of kind `kind` that `s` heads, merged so (any kind: a
// serial nest keeps its order of iterations); `s` itself when it heads none.
Stmt merge_loop_nest(const Stmt& s, LoopKind kind);

}  // namespace zyntax::cir
