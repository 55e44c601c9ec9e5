// One factor of a matrix product (product_form.hpp) staged in a GPU block's
// shared memory, as the GPU product schedules do once per depth step: the
// block's threads copy the tile of the factor that the step reads, with
// zeros past the edges of the output and of the depth, so that the step's
// products need no tests. Where the factor is an input read along its last
// axis the way the tile is laid out, the copies can be asynchronous
// (cir::AsyncCopy), runs of 4 to 16 bytes that land while the block
// computes on an earlier tile.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/product_form.hpp"

namespace zyntax::cir {

struct TileStaging {
  std::string array;             // the shared array
  Expr factor;                   // over the side's and the depth's loop variables
  const LoopGroup* side = nullptr;  // the rows (for X) or the columns (for Y)
  std::string tile;              // the block's tile number along the side
  int64_t width = 0, depth = 0;  // the tile: `width` side indices by `depth` steps
  // Element (side s, depth d) of the tile is array[s * side_stride + d * depth_stride].
  int64_t side_stride = 1, depth_stride = 1;
  bool depth_fastest = false;    // consecutive threads take consecutive depths (else side indices)
  DType dtype = DType::F32;      // the array's
  // A guarded product: the guard, kept in `mask` (laid out as the array) and
  // tested before the factor is read (where it fails the factor may read
  // out of bounds).
  Expr guard;
  std::string mask;
};

// gpu_thread t of `threads`: for n in t..width * depth step threads: the
// factor at (side index tile * width + s, depth k0 + d) into the array, or 0
// where that is past the side's or the depth's (K) end.
Stmt stage_factor_tile(const TileStaging& st, const LoopGroup& depth, const std::string& k0, int64_t K, int64_t threads, FreshNames& fresh,
                       Span span);

// The elements (4, 8, ... up to `max_bytes` bytes, the most that fit) of the runs an
// asynchronous staging of the tile copies, or 0 where it cannot: the factor
// must be an input read without a guard, its tile's fast direction (depth
// or side, as laid out) must move along the input's last axis one element
// at a time and appear in no other index, and every run must start at a
// multiple of its length in both the input and the array (the depth step's
// start `k0` a multiple of the tile's depth).
int async_run_length(const TileStaging& st, const LoopGroup& depth, const Kernel& k, FreshNames& fresh, int max_bytes);

// for n in thread..width * depth / run step threads: an async_copy of the
// n-th run of the tile of depth step `k_start` (elements past the side's or
// the depth's end read as zeros), to be placed in a GPU thread loop of
// `thread` over `threads`, before the commit of its group.
Stmt async_stage_factor_tile(const TileStaging& st, int run, const LoopGroup& depth, const Expr& k_start, int64_t K, const std::string& thread,
                             int64_t threads, FreshNames& fresh, Span span);

// A product's depth steps. With one stage, the factors' tiles are copied
// between barriers:
//
//   for k0 in 0..K step step:
//     gpu_thread: copy step k0 (stage_factor_tile, into each side's array as staged)
//     barrier; compute(0, k0); barrier
//
// With more, they are copied asynchronously, stages - 1 steps ahead into a
// ring of `stages` arrays each (the loop unrolled by `stages`, so that each
// step names its stage's arrays):
//
//   gpu_thread: copy step s into stage s; commit      for s < stages - 1
//   for k0 in 0..K step stages * step:
//     for each j < stages (past the first, only if step j is inside K):
//       gpu_thread: async_wait stages - 2        (step j's copies have landed)
//       barrier                                   (everyone's, and step j - 1's products are done)
//       gpu_thread: copy step j + stages - 1 into the stage step j - 1 used; commit
//       compute(j, k0 + j * step)                 (the products of stage j's tiles)
//
// A thread commits a group for every step, empty past K, so that waiting
// for all but the last stages - 2 groups always means "up to step j".
struct DepthStaging {
  TileStaging x, y;                              // as staged (their arrays used with one stage only)
  int x_run = 0, y_run = 0;                      // async_run_length of each (more than one stage)
  std::vector<std::string> x_stages, y_stages;   // their arrays, one per stage
  int64_t step = 0;                              // the depth of a step
  int64_t threads = 0;
  std::string thread_base;                       // names of the thread loops
};
Block depth_steps(const DepthStaging& p, const LoopGroup& depth, const std::string& k0, int64_t K, FreshNames& fresh, Span span,
                      const std::function<Stmt(int stage, const Expr& k_start)>& compute);

}  // namespace zyntax::cir
