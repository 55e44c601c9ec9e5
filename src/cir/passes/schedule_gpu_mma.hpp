// A matrix product on the GPU's tensor cores. A kernel of the product form
// (product_form.hpp, no guard) whose factors tensor cores can take
//   - f16 or bf16 values widened to f32, `s: f32 = s + f32(x) * f32(y)`
//     (exact products, as the tensor cores form them), or
//   - f32 values in a kernel marked @precision(tf32) (factors rounded to TF32),
// becomes one GPU block per 128x128 tile of the output (per batch element),
// 8 warps as a 2x4 grid, each accumulating a 64x32 part in registers. A
// product of fewer such tiles than the target has multiprocessors (too few to give
// every multiprocessor one) takes 64x64 tiles instead, 32x16 per warp:
//
//   gpu_block for tile:
//     shared xs[128 * lda], ys[depth * ldb], ds[32 * 132]; fragment acc[128, 128]
//     mma_zero acc
//     for k0 in 0..K step depth (32 for f16/bf16, 16 for TF32):
//       gpu_thread: xs[r * lda + kk] = x at (row r, depth k0 + kk)   (0 past the edges)
//       gpu_thread: ys[kk * ldb + c] = y at (column c, depth k0 + kk)
//       barrier
//       mma acc += xs . ys
//       barrier
//     for each 32-row quarter q of the tile:
//       mma_store ds = acc[q]
//       barrier
//       gpu_thread: out[row, col] = f(init + ds[..]) where row < M, col < N
//       barrier
//
// Where both factors are inputs whose tile rows are aligned runs of their
// last axis (gpu_tile_staging.hpp: async_run_length), the slices are copied
// asynchronously instead, into a ring of STAGES (3) pairs of arrays, two
// depth steps ahead of the tensor cores (see depth_steps): the copies
// of step k + 2 land while step k computes, one barrier per step.
//
// The rows of xs and ys are padded (lda = depth + 16 bytes, ldb = 128 + 16
// bytes) so that the warps' fragment loads spread over the shared memory
// banks. The sums run in another order than the kernel's, so the result
// differs from the reference by rounding (f32 sums of exact products).
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "cir/passes/product_form.hpp"
#include "cir/passes/schedule_gpu_matmul.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::cir {

constexpr int kGpuMmaThreads = 256;

// A product's factors as matrix units read them (f16 or bf16 values widened
// to f32, unwidened; or f32 values where the kernel allows TF32), and their
// dtype (f32 meaning TF32). Nothing, and why, where the units cannot take them.
struct TensorCoreFactors {
  Expr x, y;
  DType dtype;
};
std::optional<TensorCoreFactors> tensor_core_factors(const ProductForm& m, bool tf32, const MatrixUnits& units, std::string* why);

// Only for factor types the target's matrix units take. `async_copies`
// false, or a target without them: the slices are copied between barriers
// even where they could be copied asynchronously (which takes more shared
// memory). Large tiles where there are enough for its multiprocessors.
std::optional<Kernel> schedule_gpu_mma(const Kernel& k, const GpuTarget& target, std::string* why_not = nullptr,
                                       bool async_copies = true);

}  // namespace zyntax::cir
