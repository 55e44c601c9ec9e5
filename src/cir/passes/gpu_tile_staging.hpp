// One factor of a matrix product (product_form.hpp) staged in a GPU block's
// shared memory, as the GPU product schedules do once per depth step: the
// block's threads copy the tile of the factor that the step reads, with
// zeros past the edges of the output and of the depth, so that the step's
// products need no tests. Where the factor is an input read along its last
// axis the way the tile is laid out, the copies can be asynchronous
// (cir::AsyncCopy), runs of 4 to 16 bytes that land while the block
// computes on an earlier tile.
#pragma once

#include <string>

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

// The elements (4, 8 or 16 bytes, the most that fit) of the runs an
// asynchronous staging of the tile copies, or 0 where it cannot: the factor
// must be an input read without a guard, its tile's fast direction (depth
// or side, as laid out) must move along the input's last axis one element
// at a time and appear in no other index, and every run must start at a
// multiple of its length in both the input and the array (the depth step's
// start `k0` a multiple of the tile's depth).
int async_run_length(const TileStaging& st, const LoopGroup& depth, const Kernel& k, FreshNames& fresh);

// for n in thread..width * depth / run step threads: an async_copy of the
// n-th run of the tile of depth step `k_start` (elements past the side's or
// the depth's end read as zeros), to be placed in a GPU thread loop of
// `thread` over `threads`, before the commit of its group.
Stmt async_stage_factor_tile(const TileStaging& st, int run, const LoopGroup& depth, const Expr& k_start, int64_t K, const std::string& thread,
                             int64_t threads, FreshNames& fresh, Span span);

}  // namespace zyntax::cir
