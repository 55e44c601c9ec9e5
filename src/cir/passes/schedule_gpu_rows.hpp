// One GPU block per row. A kernel whose one parallel loop runs, for each
// iteration (a "row"), inner loops that fold values into vars and inner
// loops that write the output (softmax, layer and RMS norms, their
// gradients, row sums) gets the parallel loop as a GPU block loop and every
// inner loop shared out over the block's threads:
//
//   parallel for r in 0..rows:          gpu_block for r in 0..rows:
//     var s = 0.0                         var s = 0.0
//     for c in 0..cols:                   shared s%part: [T]
//       s = s + x[r, c]           →       gpu_thread for s%t in 0..T:
//     for c in 0..cols:                     var s%p = 0.0
//       out[r, c] = x[r, c] / s             for c in s%t..cols step T:
//                                             s%p = s%p + x[r, c]
//                                           s%part[s%t] = s%p
//                                         let s%all = block_reduce(+, s%part[0:T])
//                                         s = s + s%all
//                                         gpu_thread for c%t in 0..T:
//                                           for c in c%t..cols step T:
//                                             out[r, c] = x[r, c] / s
//
// Thread t takes elements t, t + T, ..., so a warp's loads are coalesced; a
// row is read once per loop, and its folds meet in registers and warp
// shuffles (cir::BlockReduce). Straight-line code between the loops runs in
// every thread alike; where it stores, the block's first thread alone does.
// A row statement may be
//   - straight-line code (lets, scalar vars, assignments, checks, ifs, stores),
//   - a fold loop: it assigns the row's vars only by `v = v op e` (op one of
//     + * min max, the same for each var, at any depth, also under ifs),
//     reads them nowhere else, and stores nothing; vars of its own are free;
//   - an output loop: iterations independent (each store writes `out` at an
//     index that moves with the loop variable, nothing reads `out`, no var
//     from outside is assigned).
// Every inner loop must also walk along rows: an access of an input or the
// output whose index moves with the loop moves along the last axis, one
// element per iteration (so a warp's accesses are coalesced; a matrix
// product's columns, read down a column, are not).
// Anything else and the kernel is left as it is. Folds are reassociated, as
// every parallel reduction is. Barriers keep the order of the output's
// accesses between threads, and end each row that uses shared memory.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

// The scheduled kernel, for blocks of `threads` threads; nothing (and why
// in `why_not`) when the kernel does not have that form.
std::optional<Kernel> schedule_gpu_rows(const Kernel& k, int threads, std::string* why_not = nullptr);

}  // namespace zyntax::cir
