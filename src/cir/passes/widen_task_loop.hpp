// Widens the outer parallel loop, the one the CPU splits into tasks, until
// it has enough iterations for every thread, so that a batch of one still
// keeps all cores busy:
//
//   parallel for n in 0..1:            parallel for n%c in 0..256:
//     parallel for c in 0..256:   →      let n = n%c / 256
//       body                             let c = n%c % 256
//                                        body
//
// An inner loop whose body holds further loops merges whole, as above. An
// innermost loop, the one the code generator vectorises, merges in blocks
// of `block` iterations, each still a loop of its own:
//
//   parallel for i in 0..1:            parallel for i%j in 0..4:
//     parallel for j in 0..1000:  →      let i = i%j / 4
//       body                             parallel for j in (i%j % 4) * 256..min(1000, (i%j % 4) * 256 + 256):
//                                          body
//
// Lets between the two loops move inside the merged one. Only loops with
// constant bounds merge; iterations of parallel loops are independent, so
// the order they run in does not change the result. Reduce kernels, whose
// tasks each keep a partial result, are left as they are.
#pragma once

#include <cstdint>

#include "cir/ir.hpp"

namespace zyntax::cir {

// `reduction_trips` > 0: an inner loop whose every iteration is one
// reduction (`var s = init; <loops updating s>; store`) merges in blocks
// too, each still a loop, so that interchange_reductions can still turn it
// inside out (a matrix-vector product's columns, split over the threads),
// into this many tasks: each block's rows of the matrix are then as long
// as they can be (a block of 512 f32 columns read half a page per row and
// ran a 4096² product at 0.7x the speed of one block per thread).
Kernel widen_task_loop(const Kernel& k, int64_t min_trips, int64_t block = 64, int64_t reduction_trips = 0);

}  // namespace zyntax::cir
