// A matrix product on Hopper's warpgroup matrix units (wgmma), its factor
// tiles brought by the tensor copy engine: the kernel becomes a persistent
// grid of one block per multiprocessor (at most one per output tile), each
// a cir::WarpgroupProduct over the tiles it takes:
//
//   gpu_block for blk in 0..blocks:
//     shared stage[stage_bytes]
//     warpgroup_product tiles blk, blk + blocks, ... (grouped order)
//       -> (b, row, col, value): if row < M && col < N: out[...] = f(init + value)
//
// It takes a product (product_form.hpp, no guard) whose factors the matrix
// units take (f16/bf16 widened to f32; f32 under @precision(tf32)) and the
// copy engine can read: each factor an input read at
// side * s + depth * t + batch * u with one of s and t equal to 1 (the
// depth or the side is the input's fast axis), the others multiples of 16
// bytes, the view inside the input. TF32 needs the depth as the fast axis
// of one factor at least: wgmma reads the second factor K-major only, and
// the first from registers, loaded from its tile whatever its major; where
// the second is MN-major (b[k, n]) the product is computed transposed (a
// and b, rows and columns exchanged; the epilogue stores out^T's element
// (row, col) at out[col, row]). Tiles are
// 128 x 256 x 64 (x 32 for TF32), or 128 x 128 where too few large tiles
// fill the multiprocessors; 4 stages; one producer and two consumer
// warpgroups (384 threads). In clusters of two blocks, the pair's blocks
// take the row tiles 2p and 2p + 1 of a column tile and each brings half
// of B's tile into both: the grid is an even number of blocks.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::cir {

constexpr int kWarpgroupProductThreads = 384;

// Only for targets with warpgroup matrix units and tensor copies.
// `cluster`: blocks per cluster (ir.hpp's WarpgroupProduct), 1 or 2 (2
// only where the target has block clusters); 0 for the rules' choice.
std::optional<Kernel> schedule_gpu_wgmma(const Kernel& k, const GpuTarget& target, std::string* why_not = nullptr, int cluster = 0);

// The blocks per cluster of a kernel's warpgroup product (1 without one).
int warpgroup_product_cluster(const Kernel& k);

}  // namespace zyntax::cir
