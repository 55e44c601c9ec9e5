// The CIR passes that make a kernel what the NVPTX backend compiles: tile
// values rewritten to loops (once every size is known), reductions over
// leading axes turned inside out, matrix products on tensor cores
// (schedule_gpu_mma: f16/bf16 factors, or f32 ones under @precision(tf32))
// or else tiled through shared memory (schedule_gpu_matmul), the nest of
// parallel loops collapsed into one, then a schedule: one block per
// iteration of a tile program, its tiles in shared memory
// (schedule_gpu_tiles), one block per row
// where rows are folded and written by inner loops (schedule_gpu_rows), the
// whole grid for a reduce kernel folding everything into one element
// (schedule_gpu_reduce), else the grid's threads share the parallel loop,
// one iteration each.
// Shared by the cuda device and `zyntax compile --backend nvptx`.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "codegen/llvm/kernel_abi.hpp"

namespace zyntax::codegen {

struct GpuPlan {
  std::optional<cir::Kernel> kernel;  // none: the GPU cannot run it
  std::string why_not;                // and why
  bool writes_whole_output = false;   // the output needs no zero-filling
  int block_threads = 256;            // threads per block to launch with
  int64_t shared_bytes = 0;           // the block's shared arrays (beyond 48 KiB: dynamic shared memory, see gpu_shared_bytes)
  std::string schedule;               // "tensor-core matmul", "tiled matmul", "tile blocks", "rows", "grid reduction", "threads" (a thread per iteration) or "single" (one thread)
};

// `max_shared_bytes`: the shared memory a block may have on the device
// (nvptx_max_shared_bytes); a schedule needing more is not chosen.
// `capability`: the architecture's (80 for sm_80); tensor-core products
// (bf16 and TF32 wmma, asynchronous copies) need 80 or more.
GpuPlan plan_gpu_kernel(const cir::Kernel& k, int64_t max_shared_bytes = kGpuStaticSharedBytes, int capability = 80);

// Blocks to launch a planned kernel with: one per iteration of its block
// loop or enough for one iteration of its parallel loop per thread, at most
// `most` (the block loops and grid-stride loops take the rest).
unsigned gpu_launch_blocks(const GpuPlan& plan, int64_t most);

}  // namespace zyntax::codegen
