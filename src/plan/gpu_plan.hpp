// The CIR passes that make a kernel what a GPU backend compiles, for any GPU
// the target description (target/gpu_target) fits: tile programs rewritten
// to loops, then one schedule, the first of these that takes the kernel:
//
//   warpgroup matmul    a matrix product on Hopper's wgmma, tiles brought by the tensor copy engine
//   tensor-core matmul  a matrix product on matrix units (f16/bf16, TF32 by permission)
//   tiled matmul        other f32 products, tiled through shared memory
//   tile blocks         a block per iteration of a tile program (flash attention)
//   rows                a block per row folded and written by inner loops (softmax, norms)
//   grid reduction      a reduce kernel folding everything, over the whole grid
//   threads             a thread per iteration of the parallel loop (element-wise code)
//   single              one thread, where there is no parallel loop
//
// The schedules read only the target: its subgroup size, shared memory,
// multiprocessors, vector width, and whether it has matrix units and
// asynchronous copies (the passes that need them are skipped without).
// Shared by every GPU backend and by `zyntax compile`, so what the command
// shows is what runs.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "support/tuning_choice.hpp"
#include "target/gpu_target.hpp"

namespace zyntax {

// The most threads a block of the GPU schedules takes (fewer where the
// target's blocks are smaller); an entry point may declare it as its bound.
constexpr int kGpuBlockThreads = 256;

enum class GpuSchedule { WarpgroupAttention, WarpgroupMatmul, TensorCoreMatmul, TiledMatmul, TileBlocks, Rows, GridReduction, Threads, Single };
const char* gpu_schedule_name(GpuSchedule s);

struct GpuPlan {
  std::optional<cir::Kernel> kernel;  // none: the GPU cannot run it
  std::string why_not;                // and why
  GpuSchedule schedule = GpuSchedule::Single;
  bool writes_whole_output = false;   // the output needs no zero-filling
  int block_threads = kGpuBlockThreads;  // threads per block to launch with
  int64_t shared_bytes = 0;           // the block's shared arrays (beyond the target's static shared memory: dynamic)
  int cluster = 1;                    // blocks per cluster along x (a warpgroup product's pairs: 2)
};

// `choice`: the tuner's knobs (plan/gpu_tuning), empty for the rules alone;
// a knob the target cannot take throws std::invalid_argument.
GpuPlan gpu_plan(const cir::Kernel& k, const GpuTarget& target, const TuningChoice& choice = {});

// Blocks to launch a planned kernel with: one per iteration of its block
// loop or enough for one iteration of its parallel loop per thread, at most
// `most` (the block loops and grid-stride loops take the rest).
unsigned gpu_launch_blocks(const GpuPlan& plan, int64_t most);

}  // namespace zyntax
