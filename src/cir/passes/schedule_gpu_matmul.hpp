// A matrix product on the GPU, tiled through shared memory. A kernel of the
// product form (product_form.hpp: batch, row, column and reduction loops,
// `s = s + X * Y`, `out[..] = f(s)`, with or without a guard) becomes one GPU block per
// 64x64 tile of the output (per batch element), 256 threads each owning a
// 4x4 block of it in a thread-private accumulator (registers on a GPU):
//
//   gpu_block for tile:                         a batch element, a row tile, a column tile
//     shared xs[16 * 64], ys[16 * 64]
//     local acc[256, 16]
//     gpu_thread: acc[t, ..] = init (0, or the sum's start)
//     for k0 in 0..K step 16:
//       gpu_thread: xs[kk * 64 + r] = X at (row r, depth k0 + kk)   (0 past the edges)
//       gpu_thread: ys[kk * 64 + c] = Y at (column c, depth k0 + kk)
//       barrier
//       gpu_thread: for kk: for a, b: acc[t, a*4 + b] += xs[kk*64 + ty + 16a] * ys[kk*64 + tx + 16b]
//       barrier
//     gpu_thread: out[row, col] = f(acc[t, a*4 + b]) where row < M, col < N
//
// A guarded product (a padded convolution: rows = output channels, columns
// = output positions, depth = input channel and kernel offsets) stages, next
// to its guarded factor, whether the guard holds for each term (the factor
// is 0 where it fails, never read out of bounds), and a term whose guard
// failed leaves the accumulator as it is: exactly the original's skipped
// term, whatever the other factor holds.
// Thread (ty, tx) owns rows ty + 16a and columns tx + 16b, so a warp's
// reads of ys and its stores of the output are consecutive. Each element
// still adds its products in k order from the same start, with the same
// roundings, so the result is the reference's bit for bit. X is loaded with
// the depth fastest and Y with the columns fastest (coalesced for row-major
// A and B).
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

constexpr int kGpuMatmulThreads = 256;

std::optional<Kernel> schedule_gpu_matmul(const Kernel& k, std::string* why_not = nullptr);

}  // namespace zyntax::cir
