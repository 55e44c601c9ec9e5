// A matrix product on the GPU, tiled through shared memory. A kernel of the
// product form (product_form.hpp: batch, row, column and reduction loops,
// `s = s + X * Y`, `out[..] = f(s)`, with or without a guard) becomes one GPU
// block per tile of the output (per batch element), 256 threads each owning
// a block of it in a thread-private accumulator (registers on a GPU): tiles
// of 128x128, 8 deep, 8x8 per thread where the product has 128 rows and
// columns or more and enough such tiles to give every multiprocessor of a
// GPU one (GpuTarget::multiprocessors, 132 on an H100: fewer blocks leave multiprocessors idle,
// a 8x128x28^2 convolution 76 of them), else 64x64, 16 deep, 4x4 per thread:
//
//   gpu_block for tile:                         a batch element, a row tile, a column tile
//     shared xs[BM * (BK + 4)], ys[BK * BN]      (X's rows depth-contiguous, padded 16 bytes)
//     local acc[256, TM * TN]
//     gpu_thread: acc[t, ..] = init (0, or the sum's start)
//     for k0 in 0..K step BK:
//       gpu_thread: xs[r * (BK + 4) + kk] = X at (row r, depth k0 + kk)   (0 past the edges)
//       gpu_thread: ys[kk * BN + c] = Y at (column c, depth k0 + kk)
//       barrier
//       gpu_thread: for kk: for a, b: acc[t, a*TN + b] = fma(xs[(ty + 16a) * (BK + 4) + kk], ys[kk*BN + col(tx, b)], acc[t, a*TN + b])
//       barrier
//     gpu_thread: out[row, col] = f(acc[t, a*TN + b]) where row < M, col < N
//
// Where the target has asynchronous copies and both factors are inputs read
// along their last axis the way their tiles are laid out (row-major A and B), the tiles are copied
// asynchronously instead (cir::AsyncCopy), two depth steps ahead into a ring
// of three stages, one barrier a step, as schedule_gpu_mma does.
//
// A guarded product (a padded convolution: rows = output channels, columns
// = output positions, depth = input channel and kernel offsets) stages, next
// to its guarded factor, whether the guard holds for each term (the factor
// is 0 where it fails, never read out of bounds), and a term whose guard
// failed leaves the accumulator as it is: exactly the original's skipped
// term, whatever the other factor holds.
// Thread (ty, tx) owns rows ty + 16a and the columns of runs of four,
// 4tx + 64(b / 4) + b % 4, so that it reads a row of ys and stores the
// output 16 bytes at a time, a warp's reads and stores consecutive. Each element
// still adds its products in k order from the same start, each product and
// sum rounded once (a fused multiply-add), as the CPU's products do: within
// the rounding of the reference's separate product and sum. X is loaded
// with the depth fastest and Y with the columns fastest (coalesced for
// row-major A and B).
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::cir {

constexpr int kGpuMatmulThreads = 256;

// Whether a product takes 128x128 tiles: it is that large each way and has
// at least `large_tiles` of them, one for each of the target's
// multiprocessors (schedule_gpu_mma follows the same rule).
struct ProductForm;
bool takes_large_gpu_tiles(const ProductForm& m, int64_t large_tiles);

// Asynchronous copies only where the target has them (runs up to its
// vector width); large tiles where there are enough for its multiprocessors.
// `tiles` overrides that rule (the tuner's knob): 1 the small tiles, 2 the
// large ones (where the product is that large each way), 0 the rule.
std::optional<Kernel> schedule_gpu_matmul(const Kernel& k, const GpuTarget& target, std::string* why_not = nullptr, int tiles = 0);

}  // namespace zyntax::cir
