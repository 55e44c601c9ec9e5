// Runs the loops that update the output atomically (scatters, histograms:
// see lower/parallel_loops.hpp) in order, on one CPU core, each update a
// plain read-modify-write:
//
//   parallel for i in 0..n {              for i in 0..n {
//     parallel for j in 0..dim {    →       for j in 0..dim {
//       atomic_add out[ids[i], j], g[i, j]      out[ids[i], j] = out[ids[i], j] + g[i, j]
//
// Why: a CPU has no atomic float add, so each update is a compare-and-swap
// loop of some twenty cycles, while one core adds a row with vector
// instructions; on a few cores the ordered loop is faster (BERT's embedding
// gradient, 4096 rows of 768 into 30522, takes 13 ms in order on two cores
// against 30 ms with atomics), and it gives the reference executor's
// result bit for bit. The CPU plan keeps the atomics where many cores share
// the updates (kCpuAtomicThreads).
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel serialize_atomic_loops(const Kernel& k);

}  // namespace zyntax::cir
