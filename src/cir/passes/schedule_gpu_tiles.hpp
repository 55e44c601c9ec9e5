// One GPU block per iteration of a tile program. A kernel written with tile
// values (flash attention's query blocks, a row's tiles), once
// scalarize_tiles has made its tiles local arrays and each tile operation a
// loop nest over one, gets its parallel loop as a GPU block loop, its tiles
// in the block's shared memory, and each loop nest shared out over the
// block's threads:
//
//   parallel for q in 0..blocks:         gpu_block for q in 0..blocks:
//     local S: [n0, n1]                    shared S: [n0, n1 + 1]
//     for i in 0..n0:                      gpu_thread for t in 0..256:
//       for j in 0..n1:          →           for i in t / 32..n0 step 8:
//         var acc = 0.0                        for j in t % 32..n1 step 32:
//         for k in 0..d: acc += ...              var acc = 0.0 ...
//         S[i, j] = acc                    barrier
//     ...                                  ...
//
// A warp takes 32 consecutive columns of a row (so its accesses to a
// row-major tile, and to rows of the inputs and the output, are
// contiguous); a 2-D tile with an even constant row length gets one column
// of padding, so that reading down a column (a transposed factor) meets
// every shared-memory bank once. A nest is shared out when its iterations
// are independent: every array it stores to is accessed at one index only,
// which moves with the loop variables (with no loop left, or one row per
// thread, when only the outer loop qualifies). A nest that stores but does
// not qualify runs in the block's first thread; a tile product's nest of
// dot products gives each thread a 4x4 block of them (gpu_register_blocks),
// or runs on the block's matrix units where they take its factors
// (gpu_tile_products: attention's Q K^T over bf16 blocks widened, and P V
// under @precision(tf32));
// one that only folds into
// scalars runs in every thread alike, as does the straight-line code
// between nests. Loops holding tiles of their own (flash attention's loop
// over key blocks) keep running in every thread, their nests shared out in
// turn. Barriers follow each nest that stores, precede one that overwrites
// what code outside nests read, and end every loop body that touched shared
// memory. Last, tiles whose lives a barrier separates share bytes
// (place_shared_arrays).
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::cir {

// The scheduled kernel for blocks of `threads` threads (whole subgroups of the target);
// nothing, and why, when the kernel is not one parallel loop over tile
// arrays of constant capacity.
// `matrix_units`: tile products of f32 tiles go to the target's matrix
// units where they take TF32 factors and the factors allow
// (gpu_tile_products); false keeps every product on the threads.
std::optional<Kernel> schedule_gpu_tiles(const Kernel& k, const GpuTarget& target, int threads, std::string* why_not = nullptr,
                                         bool matrix_units = true);

}  // namespace zyntax::cir
