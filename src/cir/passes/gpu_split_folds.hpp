// A nest of folds with fewer outputs than a GPU block has threads (a tile
// program's row statistics: attention's row_max and row_sum over a 64 x 64
// tile, 64 outputs for 256 threads), for schedule_gpu_tiles. Shared out an
// output per thread, most threads would idle while each output's terms are
// folded one after another; instead each output's terms are split over
// `parts` threads, which fold them into a shared array of partials, and
// after a barrier one thread per output folds its partials:
//
//   for i in 0..rows:                  shared part: [R * C * parts]
//     for j in 0..cols:                gpu_thread for t in 0..threads:
//       var s = init                     let o = t / parts, q = t % parts
//       for k in lo..hi:         →       for i in o..rows step threads / parts:
//         s = s op e(i, j, k)              for j in 0..cols:
//       out[i, j] = g(s)                     var s = identity(op)
//                                            for k in lo + q..hi step parts: s = s op e(i, j, k)
//                                            part[(i * C + j) * parts + q] = s
//                                      barrier
//                                      for i in 0..rows: for j in 0..cols:     (shared out)
//                                        var s = init
//                                        for q in 0..parts: s = s op part[(i * C + j) * parts + q]
//                                        out[i, j] = g(s)
//
// for op + * min max (R and C the most rows and columns). The terms are
// combined in another order: min and max give the same result; sums and
// products differ by rounding, as any GPU reduction's.
#pragma once

#include <optional>

#include "cir/ir.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/gpu_register_blocks.hpp"

namespace zyntax::cir {

struct SplitFold {
  Stmt partials;  // the allocation of the partials array
  Stmt threads;   // the thread loop that fills it
  Stmt combine;   // the nest that folds the partials (to be shared out)
};

// `rows` and `cols`: the nest's most rows and columns; `terms`: its most
// terms. Nothing where the fold is not `s = s op e` (or `e op s`) or where
// splitting would not give each part a few terms.
std::optional<SplitFold> split_fold(const DotProductNest& n, int64_t rows, int64_t cols, int64_t terms, int64_t threads, FreshNames& fresh);

}  // namespace zyntax::cir
