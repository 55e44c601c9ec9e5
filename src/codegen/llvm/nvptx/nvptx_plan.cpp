#include "codegen/llvm/nvptx/nvptx_plan.hpp"

#include "cir/output_coverage.hpp"
#include "cir/pass_manager.hpp"
#include "cir/passes/collapse_parallel_loops.hpp"
#include "cir/passes/fold_broadcast_extents.hpp"
#include "cir/passes/freeze_invariant_vars.hpp"
#include "cir/passes/gpu_row_registers.hpp"
#include "cir/passes/fuse_product_epilogues.hpp"
#include "cir/passes/group_thread_elements.hpp"
#include "cir/passes/hoist_kept_loops.hpp"
#include "cir/passes/map_in_place.hpp"
#include "cir/passes/product_form.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/schedule_gpu_matmul.hpp"
#include "cir/passes/schedule_gpu_mma.hpp"
#include "cir/passes/schedule_gpu_reduce.hpp"
#include "cir/passes/schedule_gpu_rows.hpp"
#include "cir/passes/schedule_gpu_tiles.hpp"
#include "cir/passes/sink_tile_loads.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "codegen/llvm/kernel_abi.hpp"

namespace zyntax::codegen {

namespace {

// How many times a loop runs, when its bounds are constants.
std::optional<int64_t> constant_trips(const cir::For& f) {
  auto lo = f.lo.as<cir::IntImm>(), hi = f.hi.as<cir::IntImm>(), step = f.step.as<cir::IntImm>();
  if (!lo || !hi || !step || step->value <= 0) return std::nullopt;
  return hi->value > lo->value ? (hi->value - lo->value + step->value - 1) / step->value : 0;
}

// The longest inner loop of the parallel loop's body when every one has a
// constant trip count; nothing when some length is known only at run time.
std::optional<int64_t> longest_row(const cir::Kernel& k) {
  auto outer = k.body.size() == 1 ? k.body[0].as<cir::For>() : nullptr;
  if (!outer) return std::nullopt;
  int64_t longest = 0;
  for (const cir::Stmt& s : outer->body) {
    auto f = s.as<cir::For>();
    if (!f) continue;
    std::optional<int64_t> trips = constant_trips(*f);
    if (!trips) return std::nullopt;
    longest = std::max(longest, *trips);
  }
  return longest;
}

constexpr int64_t kGridReduceBlocks = 1024;

// The iterations of a loop nest that is the whole body, when every bound is
// constant.
std::optional<int64_t> loop_trips(const cir::Kernel& k) {
  int64_t trips = 1;
  const cir::Block* body = &k.body;
  while (body->size() == 1 && (*body)[0].as<cir::For>()) {
    auto f = (*body)[0].as<cir::For>();
    std::optional<int64_t> n = constant_trips(*f);
    if (!n) return std::nullopt;
    trips *= *n;
    body = &f->body;
  }
  return trips;
}

// Threads for a block per row: a warp at least, else the row's length
// rounded up to a power of two, at most kGpuBlockThreads.
int row_threads(std::optional<int64_t> longest) {
  int threads = 32;
  while (threads < kGpuBlockThreads && (!longest || threads < *longest)) threads *= 2;
  return threads;
}

}  // namespace

GpuPlan plan_gpu_kernel(const cir::Kernel& kernel, int64_t max_shared_bytes, int capability) {
  GpuPlan plan;
  plan.writes_whole_output = cir::writes_whole_output(kernel);
  std::vector<cir::Pass> passes;
  bool scalarized = false;
  if (unsupported_reason(kernel, EmitTarget::Nvptx)) {
    if (!kernel.dims.empty()) {
      plan.why_not = "tile values are rewritten to loops once every size is known";
      return plan;
    }
    // Each element of a tile product its own dot product, so that the
    // threads of a block can share a product's elements out.
    constexpr auto dots = cir::ProductOrder::DotProducts;
    if (!cir::scalarize_tiles(kernel, &plan.why_not, dots)) return plan;
    passes.push_back({"scalarize_tiles", [](const cir::Kernel& k) { return *cir::scalarize_tiles(k, nullptr, dots); }});
    passes.push_back({"freeze_invariant_vars", [](const cir::Kernel& k) { return cir::freeze_invariant_vars(k); }});
    passes.push_back({"fold_broadcast_extents", [](const cir::Kernel& k) { return cir::fold_broadcast_extents(k); }});
    passes.push_back({"fuse_product_epilogues", [](const cir::Kernel& k) { return cir::fuse_product_epilogues(k); }});
    passes.push_back({"map_in_place", [](const cir::Kernel& k) { return cir::map_in_place(k); }});
    passes.push_back({"sink_tile_loads", [](const cir::Kernel& k) { return cir::sink_tile_loads(k); }});
    scalarized = true;
  }
  passes.push_back({"hoist_kept_loops", [](const cir::Kernel& k) { return cir::hoist_kept_loops(k); }});
  // Matrix products on tensor cores where their factors allow (f16, bf16,
  // TF32 by permission), of any size: with asynchronous copies where the
  // block may hold their stages, else with copies between barriers.
  bool tensor_cores = false;
  passes.push_back({"schedule_gpu_mma", [&](const cir::Kernel& k) {
                      if (capability < 80) return k;
                      for (bool async : {true, false}) {
                        std::optional<cir::Kernel> tiles = cir::schedule_gpu_mma(k, nullptr, async);
                        if (!tiles || !gpu_support(*tiles).fits(max_shared_bytes)) continue;
                        tensor_cores = true;
                        return *tiles;
                      }
                      return k;
                    }});
  // Other f32 matrix products of at least a quarter tile through shared memory.
  bool tiled = false;
  passes.push_back({"schedule_gpu_matmul", [&](const cir::Kernel& k) {
                      if (tensor_cores) return k;
                      std::optional<cir::ProductForm> m = cir::match_product(k);
                      if (!m || m->rows.size() * m->cols.size() < 1024 || m->depth.size() < 8) return k;
                      std::optional<cir::Kernel> tiles = cir::schedule_gpu_matmul(k);
                      if (!tiles || unsupported_reason(*tiles, EmitTarget::Nvptx)) return k;
                      tiled = true;
                      return *tiles;
                    }});
  passes.push_back({"collapse_parallel_loops", [](const cir::Kernel& k) { return cir::collapse_parallel_loops(k); }});
  // A block per iteration of a tile program, its tiles in shared memory
  // (up to what the device gives a block), its tile operations shared out
  // over the threads.
  bool tile_blocks = false;
  passes.push_back({"schedule_gpu_tiles", [&](const cir::Kernel& k) {
                      if (!scalarized) return k;
                      std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(k, kGpuBlockThreads);
                      if (!blocks || !gpu_support(*blocks).fits(max_shared_bytes)) return k;
                      tile_blocks = true;
                      return *blocks;
                    }});
  // A block per row where the schedule applies and rows are a warp or more
  // long (shorter ones run faster one per thread).
  int row_block = 0;
  passes.push_back({"schedule_gpu_rows", [&](const cir::Kernel& k) {
                      std::optional<int64_t> longest = longest_row(k);
                      if (tile_blocks || (longest && *longest < 32)) return k;
                      int threads = row_threads(longest);
                      std::optional<cir::Kernel> rows = cir::schedule_gpu_rows(k, threads);
                      if (!rows || unsupported_reason(*rows, EmitTarget::Nvptx)) return k;
                      row_block = threads;
                      return *rows;
                    }});
  // A thread's share of a row in registers: its loads in flight at once, a
  // row that several loops read loaded once.
  passes.push_back({"gpu_row_registers", [&](const cir::Kernel& k) { return row_block ? cir::gpu_row_registers(k) : k; }});
  // A whole-tensor reduction over the grid: enough blocks for 8 iterations
  // per thread, at most kGridReduceBlocks (argmax and argmin: one block).
  bool grid = false;
  passes.push_back({"schedule_gpu_reduce", [&](const cir::Kernel& k) {
                      if (row_block || tiled || tensor_cores || tile_blocks) return k;
                      std::optional<int64_t> trips = loop_trips(k);
                      int64_t per_block = int64_t{kGpuBlockThreads} * 8;
                      int64_t blocks = trips ? std::clamp<int64_t>((*trips + per_block - 1) / per_block, 1, kGridReduceBlocks) : kGridReduceBlocks;
                      if (is_arg_reduce(k.reduce_op)) blocks = 1;
                      std::optional<cir::Kernel> r = cir::schedule_gpu_reduce(k, blocks, kGpuBlockThreads);
                      if (!r || unsupported_reason(*r, EmitTarget::Nvptx)) return k;
                      grid = true;
                      return *r;
                    }});
  // Element-wise code: each thread takes 16 bytes of consecutive elements.
  passes.push_back({"group_thread_elements", [](const cir::Kernel& k) {
                      return cir::group_thread_elements(k, cir::thread_element_width(k));
                    }});
  cir::Kernel k = cir::run_passes(kernel, "specialize", passes);
  auto outer = k.body.size() == 1 ? k.body[0].as<cir::For>() : nullptr;
  bool threads = outer && outer->loop_kind == cir::LoopKind::Parallel;
  plan.schedule = tensor_cores ? "tensor-core matmul"
                  : tiled      ? "tiled matmul"
                  : tile_blocks ? "tile blocks"
                  : row_block  ? "rows"
                  : grid       ? "grid reduction"
                  : threads    ? "threads"
                               : "single";
  if (row_block) plan.block_threads = row_block;
  if (tiled) plan.block_threads = cir::kGpuMatmulThreads;
  if (tensor_cores) plan.block_threads = cir::kGpuMmaThreads;
  GpuSupport support = gpu_support(k);
  if (support.why_not) {
    plan.why_not = *support.why_not;
    return plan;
  }
  plan.shared_bytes = support.shared_bytes;
  plan.kernel = std::move(k);
  return plan;
}

unsigned gpu_launch_blocks(const GpuPlan& plan, int64_t most) {
  int64_t blocks = 1;
  const cir::For* f = plan.kernel && plan.kernel->body.size() == 1 ? plan.kernel->body[0].as<cir::For>() : nullptr;
  if (std::optional<int64_t> trips = f ? constant_trips(*f) : std::nullopt) {
    blocks = f->loop_kind == cir::LoopKind::GpuBlock ? *trips : (*trips + plan.block_threads - 1) / plan.block_threads;
  } else if (f && (f->loop_kind == cir::LoopKind::GpuBlock || f->loop_kind == cir::LoopKind::Parallel)) {
    blocks = most;  // sizes known only at run time: a full grid, the loops stride over the rest
  }
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, std::max<int64_t>(most, 1)));
}

}  // namespace zyntax::codegen
