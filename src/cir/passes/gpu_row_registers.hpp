// A GPU block per row (schedule_gpu_rows) with each thread's share of the
// row in registers. A thread takes elements t, t + T, ... of a row of C:
// where C is a constant and each thread takes a few (at most
// kMostRowElements), its loops over them get a constant trip count and are
// unrolled, so that all of a thread's loads are in flight at once rather
// than one memory latency after another; and a row of an input that two or
// more of the block's loops read (softmax's max, sum and output loops) is
// loaded once, into a thread-private array (registers), and read from there
// by the later loops:
//
//   gpu_thread for t in 0..T:               local x%row: [T, K]          (K = ceil(C / T))
//     for j in t..C step T:                 gpu_thread for t in 0..T:
//       m%p = max(m%p, x[i, j])               unrolled for k in 0..K:
//   ...                              →          let j = t + k * T
//   gpu_thread for t in 0..T:                   if j < C:                 (where T does not divide C)
//     for j in t..C step T:                       let v = x[i, j]
//       out[i, j] = exp(x[i, j] - m)              x%row[t, k] = v
//                                                 m%p = max(m%p, v)
//                                           ...
//                                           gpu_thread for t in 0..T:
//                                             unrolled for k in 0..K:
//                                               let j = t + k * T
//                                               if j < C: out[i, j] = exp(x%row[t, k] - m)
//
// Each element is read by the thread that read it before, so the values and
// the order of every fold are those of the schedule as it was. A row is
// kept only when its loops have no conditions of their own (the load moves
// to the top of the loop body), its other indices name only the row and
// lets, and the kernel never stores into it.
#pragma once

#include <cstdint>

#include "cir/ir.hpp"

namespace zyntax::cir {

inline constexpr int64_t kMostRowElements = 16;  // per thread: the registers a row may take

Kernel gpu_row_registers(const Kernel& k);

}  // namespace zyntax::cir
