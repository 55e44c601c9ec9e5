// Byte offsets for a GPU block's shared arrays, so that arrays whose lives
// a barrier separates share bytes. A tile program's block holds a shared
// array for every tile it computes (flash attention: the scores, their
// exponentials, two products, ...), most of them dead a few barriers after
// they are written; laid end to end they take 147 KiB, and a multiprocessor
// runs one such block at a time. Placed, they take what the most arrays
// alive at once take.
//
// An array lives from its allocation to its last access, counted in
// barrier intervals (the statements between two barriers): an array read
// in interval 3 and one allocated in interval 4 may share bytes, since
// every thread has read the first before any writes the second. An array
// from outside a loop that the loop touches lives to the loop's end (each
// iteration touches it again). Arrays are placed largest first, each at
// the lowest offset clear of every placed array whose life meets its own.
//
//   shared K: [64, 65]              shared K: [64, 65] at byte 0
//   ...K read... barrier            ...K read... barrier
//   shared S: [64, 64]      →       shared S: [64, 64] at byte 0
//
// The reference executor runs placed arrays as views of one region of
// bytes, so a placement whose lives overlap shows as a wrong result or a
// data race there.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

// `k` with the shared arrays of its GPU block loop placed, when that saves
// bytes; else `k` as it is. Only for kernels whose shared arrays are read
// and written by loads and stores (the tile schedule's); any other kernel,
// and one with a barrier under a condition, comes back as it is.
Kernel place_shared_arrays(const Kernel& k);

}  // namespace zyntax::cir
