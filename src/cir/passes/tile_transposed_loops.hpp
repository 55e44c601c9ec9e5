// Tiles two nested parallel loops whose body writes along the inner loop
// and reads an input across it (a transpose, a permute of the last two
// axes), so that both stay in cache:
//
//   parallel for a in 0..A:            parallel for a%t in 0..ceil(A / T):
//     parallel for b in 0..B:    →       for b%t in 0..ceil(B / T):
//       out[a, b] = x[b, a]                for a in a%t * T..min(a%t * T + T, A):
//                                            parallel for b in b%t * T..min(b%t * T + T, B):
//                                              out[a, b] = x[b, a]
//
// Untiled, each b reads a new line of x and the next a reads the same
// lines again, after B others have passed through the cache; tiled, the T
// lines of a tile are read T times while in L1. Iterations of parallel
// loops are independent, so their order does not change the result.
#pragma once

#include <cstdint>

#include "cir/ir.hpp"

namespace zyntax::cir {

// `tile` iterations of each loop per tile (32: two 64-byte lines of f32;
// measured ahead of 8 and 16 on 4096x1000, 1024x1024 and 100000x64).
Kernel tile_transposed_loops(const Kernel& k, int64_t tile = 32);

}  // namespace zyntax::cir
