// A nest of dot products (a tile product as scalarize_tiles writes it for
// the GPU) shared out over a block's threads with each thread holding a
// block of up to 4x4 outputs in registers (4x4 drawn here):
//
//   for i in lo_i..hi_i:                  gpu_thread for t in 0..threads:
//     for j in lo_j..hi_j:                  for i in lo_i + t / 16..hi_i step 4 * rows:
//       var acc = init                        for j in lo_j + t % 16..hi_j step 64:
//       for k in ..:              →             let i%1 = min(i + rows, hi_i - 1)  ...
//         acc = acc + e(i, j, k)                var acc%0%0 = init ...    (16 vars)
//       S[i, j] = g(acc)                        for k in ..: acc%a%b = acc%a%b + e(i%a, j%b, k)
//                                               if i + a * rows < hi_i and j + b * 16 < hi_j:
//                                                 S[i%a, j%b] = g(acc%a%b)
//
// Thread t takes rows i + a * rows and columns j + b * 16 (rows = threads /
// 16; a, b < 4): a warp reads 16 consecutive elements of two rows of a tile
// (or 16 rows of a padded tile at one column) at a time, so its shared
// loads meet each bank once, and each element it loads serves four
// products instead of one. Rows and columns past the end are clamped for
// reading, so every read stays inside the tile, and not stored. Each
// output still folds its terms in the same order: the results are those of
// the nest as written.
#pragma once

#include <optional>

#include "cir/ir.hpp"
#include "cir/passes/gpu_loops.hpp"

namespace zyntax::cir {

// The nest's parts when `rows` is such a nest: two serial loops of step 1,
// the inner one holding a scalar var, one serial loop folding terms into it
// (its bounds reading neither loop variable) and one store to an array the
// nest does not read.
struct DotProductNest {
  const For* rows;
  const For* cols;
  const Decl* acc;
  const For* terms;
  const Assign* fold;
  const Store* store;
};
std::optional<DotProductNest> dot_product_nest(const For& rows);

inline constexpr int64_t kRegisterBlock = 4;    // outputs a thread holds along each axis, at most
inline constexpr int64_t kRegisterColumns = 16; // threads along a row

// The nest over `threads` threads (a multiple of 16) as above, each thread
// holding block_rows x block_cols outputs (at most 4 x 4; fewer where the
// tile is smaller than 4 x 4 times the threads, so that no thread computes
// clamped copies alone). The caller has established that its iterations
// are independent.
Stmt register_blocked(const DotProductNest& n, int64_t threads, FreshNames& fresh, int64_t block_rows = kRegisterBlock,
                      int64_t block_cols = kRegisterBlock);

}  // namespace zyntax::cir
