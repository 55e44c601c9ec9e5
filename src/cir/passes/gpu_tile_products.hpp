// A tile product of a tile program on the GPU block's matrix units (tensor
// cores), for schedule_gpu_tiles. A nest of dot products over two shared
// tiles (as scalarize_tiles writes Q K^T and P V for the GPU)
//
//   for i in 0..rows:                    [for i, k in depth..D: a[i, k] = 0.0]   (a ragged depth)
//     for j in 0..cols:                  fragment acc: [R, C]
//       var s = init                     mma_zero acc
//       for k in 0..depth:         →     mma acc += a . b (or b^T) over D
//         s = fma(a[i, k], b[k, j], s)   mma_store ds = acc
//       out[i, j] = g(s)                 barrier
//                                        for i in 0..rows: for j in 0..cols:
//                                          var s = init + ds[i, j]
//                                          out[i, j] = g(s)
//
// runs its products on the matrix units over the tiles' largest extents
// (R, C and D: rows, columns and depth rounded up to whole 16 x 16 x 8
// pieces), leaving the outputs in a staging array that the nest's own
// epilogue then reads (the scheduler shares it out over the threads like
// any nest). Rows and columns past a tile's extent compute values nobody
// reads; depth past it would add to real outputs, so where the depth is
// not always D both factors' depth tails are zeroed first.
//
// The factors are f32 tiles read as TF32: exact where every value stored
// into them is an f16 or bf16 value widened (attention's Q and K blocks)
// or a literal TF32 holds, rounded where the kernel allows it
// (@precision(tf32)). The sums run in another order than the nest's: the
// result differs by f32 rounding of the sums (and TF32 rounding of factors
// that are not exact).
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/gpu_register_blocks.hpp"

namespace zyntax::cir {

// The two f32 tiles a dot-product nest multiplies: its terms are
// fma(a[i, k], b[k, j], s) (or a * b added), i, j and k its loops' own
// variables from 0; b_transposed where b is read as b[j, k].
struct TileProductFactors {
  std::string a, b;
  bool b_transposed = false;
  bool a_exact = false, b_exact = false;  // holds_tf32_values, set by the caller
};
std::optional<TileProductFactors> tile_product_factors(const DotProductNest& n);

// Whether every value `k` stores into `array` is exact in TF32: f16 or
// bf16 values widened to f32, or float literals TF32 holds.
bool holds_tf32_values(const Kernel& k, const std::string& array);

// The piece sizes of the matrix units' TF32 products.
inline constexpr int64_t kMatrixPieceRows = 16, kMatrixPieceCols = 16, kMatrixPieceDepthTf32 = 8;

// A shared tile's layout as a matrix-unit factor: constant extents, whole
// pieces in both axes (the most rows and columns rounded up to 16), rows
// 16 bytes apart plus 16 bytes (each row starts 16-byte aligned, and the
// rows of a piece start in different banks).
Type matrix_factor_layout(const Type& tile, int64_t most_rows, int64_t most_cols);

// What the product's statements need to know of its tiles.
struct TileProductShape {
  int64_t rows = 0, cols = 0, depth = 0;  // the nest's largest extents
  bool depth_always_whole = false;        // its depth is always `depth` rounded up to a piece
  Type a, b;                              // the factors' shared layouts (matrix_factor_layout)
};

// The statements above for `n`, in three parts the scheduler places with
// its barriers: the nests that zero the factors' depth tails (stores the
// scheduler shares out), the tensor-core steps (with the staging array and
// the fragment; every warp of the block takes part, so they stand outside
// thread loops, after a barrier that follows the factors' writes), and the
// epilogue nest (shared out after a barrier). Nothing where the factors'
// layouts cannot hold the pieces.
struct TileProductSteps {
  Block zero_tails;
  Block matrix_steps;
  Stmt epilogue;
};
std::optional<TileProductSteps> tile_product_on_matrix_units(const DotProductNest& n, const TileProductFactors& f, const TileProductShape& shape,
                                                             int warps, FreshNames& fresh);

}  // namespace zyntax::cir
