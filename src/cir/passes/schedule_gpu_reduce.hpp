// A whole-tensor reduction over the GPU's grid. A reduce kernel whose body
// is one loop yielding to one output element (a sum, product, min or max of
// everything it visits) is shared out over `blocks` blocks of `threads`
// threads, thread t of block b taking iterations b*T + t, b*T + t + B*T, ...:
//
//   for i in 0..n:            gpu_block for b in 0..B:
//     yield x[i] * x[i]   →     shared yield%part: [T]
//                               gpu_thread for i%t in 0..T:
//                                 var yield%p: f64 = 0.0
//                                 for i in (b*T + i%t)..n step B*T:
//                                   yield%p = yield%p + f64(x[i] * x[i])
//                                 yield%part[i%t] = yield%p
//                               let yield%p%all = block_reduce(+, yield%part[0:T])
//                               gpu_thread for once%t in 0..1:
//                                 yield yield%p%all
//
// The partials are kept in the accumulator's dtype (f64 for float sums), so
// the result differs from the serial fold only by reassociation; the blocks'
// yields meet in the accumulator (atomically on a GPU). A nest of loops
// whose inner bounds do not depend on the outer variables is first merged
// into one loop over all its iterations.
//
// argmax and argmin take one block (`blocks` must be 1): its threads fold
// their iterations and meet as in gpu_loops.hpp's arg_block_fold, since
// blocks cannot combine (value, index) pairs with one atomic.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

std::optional<Kernel> schedule_gpu_reduce(const Kernel& k, int64_t blocks, int threads, std::string* why_not = nullptr);

}  // namespace zyntax::cir
