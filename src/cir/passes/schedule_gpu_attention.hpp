// Flash attention on Hopper's warpgroup matrix units: a tile program that
// computes attention the flash way, over f16 or bf16 queries, keys and
// values, becomes one cir::WarpgroupAttention per persistent GPU block:
//
//   gpu_block for blk in 0..blocks:
//     shared stage[stage_bytes]
//     warpgroup_attention tiles blk, blk + blocks, ...
//       -> (b, row, col, value): if row < queries: out[b, row, col] = value
//
// The form it takes (the op library's and the tutorials' flash attention,
// names free; specialised, every size known):
//
//   parallel for h in 0..BH:                         batch (heads)
//     parallel for q0 in 0..S step B:                query blocks
//       var m = fill(-inf), var l = fill(0), var o = fill(0)
//       let Qb = f32(Q[h, q0:q0 + B])                (or read where used)
//       for k0 in 0..S (or 0..min(q0 + B, S), causal) step Bk:
//         var S = Qb @ transpose(f32(K[h, k0:k0 + Bk])) / c   (or * c)
//         [if k0 + Bk > q0: for r.., c..: if k0 + c > q0 + r: S[r, c] = -inf]   causal
//         let m_new = max(m, row_max(S))
//         let p = exp(S - m_new)
//         l = exp(m - m_new) * l + row_sum(p)
//         o = exp(m - m_new) * o + p @ f32(V[h, k0:k0 + Bk])
//         m = m_new
//       out[h, q0:q0 + B] = o / l
//
// Q, K and V of one dtype (f16 or bf16) and shape [BH, S, D], D 64 or 128.
// P V rounds P to that dtype, so the block must permit it:
// @precision(bf16). The schedule picks its own block sizes (128 query rows
// by 128 keys): the result differs from the program's blocks by rounding.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::cir {

constexpr int kWarpgroupAttentionThreads = 384;

// Only for targets with warpgroup matrix units and tensor copies.
std::optional<Kernel> schedule_gpu_attention(const Kernel& k, const GpuTarget& target, std::string* why_not = nullptr);

}  // namespace zyntax::cir
