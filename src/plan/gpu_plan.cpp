#include "plan/gpu_plan.hpp"

#include <stdexcept>

#include <algorithm>
#include <functional>

#include "cir/output_coverage.hpp"
#include "cir/pass_manager.hpp"
#include "cir/passes/collapse_parallel_loops.hpp"
#include "cir/passes/fold_broadcast_extents.hpp"
#include "cir/passes/freeze_invariant_vars.hpp"
#include "cir/passes/fuse_product_epilogues.hpp"
#include "cir/passes/gpu_row_registers.hpp"
#include "cir/passes/group_thread_elements.hpp"
#include "cir/passes/hoist_kept_loops.hpp"
#include "cir/passes/map_in_place.hpp"
#include "cir/passes/product_form.hpp"
#include "cir/passes/read_each_element_once.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/schedule_gpu_attention.hpp"
#include "cir/passes/schedule_gpu_matmul.hpp"
#include "cir/passes/schedule_gpu_mma.hpp"
#include "cir/passes/schedule_gpu_wgmma.hpp"
#include "cir/passes/schedule_gpu_reduce.hpp"
#include "cir/passes/schedule_gpu_rows.hpp"
#include "cir/passes/schedule_gpu_tiles.hpp"
#include "cir/passes/sink_tile_loads.hpp"
#include "plan/kernel_support.hpp"
#include "support/trip_count.hpp"

namespace zyntax {

namespace {

using cir::Kernel;
using Attempt = std::optional<Kernel>;

// How many times a loop runs, when its bounds are constants.
std::optional<int64_t> constant_trips(const cir::For& f) {
  auto lo = f.lo.as<cir::IntImm>(), hi = f.hi.as<cir::IntImm>(), step = f.step.as<cir::IntImm>();
  if (!lo || !hi || !step || step->value <= 0) return std::nullopt;
  return trip_count(lo->value, hi->value, step->value);
}

// The longest inner loop of the parallel loop's body when every one has a
// constant trip count; nothing when some length is known only at run time.
std::optional<int64_t> longest_row(const Kernel& k) {
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

// The iterations of a loop nest that is the whole body, when every bound is
// constant.
std::optional<int64_t> loop_trips(const Kernel& k) {
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

constexpr int64_t kGridReduceBlocks = 1024;

// ------------------------------------------------------------ when each schedule takes a kernel

// A matrix product on Hopper's warpgroup matrix units, its factors' tiles
// brought by the tensor copy engine, where the target has both and the
// engine can read the factors as laid out.
Attempt warpgroup_matmul(const Kernel& k, const GpuTarget& target, int cluster) {
  if (!target.warpgroup_mma || !target.tensor_copies) return std::nullopt;
  Attempt tiles = cir::schedule_gpu_wgmma(k, target, nullptr, cluster);
  if (!tiles || !gpu_support(*tiles, target).ok()) return std::nullopt;
  return tiles;
}

// A matrix product on matrix units where its factors allow (f16, bf16,
// TF32 by permission), of any size: with asynchronous copies where the
// target has them and a block may hold their stages, else with copies
// between barriers.
Attempt tensor_core_matmul(const Kernel& k, const GpuTarget& target) {
  if (!target.matrix_units.any()) return std::nullopt;
  for (bool async : {true, false}) {
    if (async && !target.async_copy) continue;
    Attempt tiles = cir::schedule_gpu_mma(k, target, nullptr, async);
    if (tiles && gpu_support(*tiles, target).ok()) return tiles;
  }
  return std::nullopt;
}

// Other f32 matrix products of at least a quarter tile through shared memory.
Attempt tiled_matmul(const Kernel& k, const GpuTarget& target, int tiles) {
  std::optional<cir::ProductForm> m = cir::match_product(k);
  if (!m || m->rows.size() * m->cols.size() < 1024 || m->depth.size() < 8) return std::nullopt;
  if (target.max_threads_per_block < cir::kGpuMatmulThreads) return std::nullopt;  // its blocks have that many threads
  Attempt scheduled = cir::schedule_gpu_matmul(k, target, nullptr, tiles);
  if (!scheduled || !gpu_support(*scheduled, target).ok()) return std::nullopt;
  return scheduled;
}

// A block per iteration of a tile program, its tiles in shared memory (up
// to what the target gives a block), its tile operations shared out over
// the threads.
// Tile products on matrix units where the target has them, unless their
// layouts take more shared memory than a block may have.
Attempt tile_blocks(const Kernel& k, const GpuTarget& target, int threads) {
  for (bool matrix_units : {true, false}) {
    if (matrix_units && !target.matrix_units.any()) continue;
    Attempt blocks = cir::schedule_gpu_tiles(k, target, threads, nullptr, matrix_units);
    if (blocks && gpu_support(*blocks, target).ok()) return blocks;
  }
  return std::nullopt;
}

// A block per row where rows are a subgroup or more long (shorter ones run
// faster one per thread): a subgroup at least, else the row's length
// rounded up to a power of two, at most `most` threads.
Attempt rows(const Kernel& k, const GpuTarget& target, int most, int* threads_taken) {
  std::optional<int64_t> longest = longest_row(k);
  if (longest && *longest < target.subgroup_size) return std::nullopt;
  int threads = target.subgroup_size;
  while (threads < most && (!longest || threads < *longest)) threads *= 2;
  Attempt r = cir::schedule_gpu_rows(k, threads);
  if (!r || !gpu_support(*r, target).ok()) return std::nullopt;
  *threads_taken = threads;
  return r;
}

// A whole-tensor reduction over the grid: enough blocks for 8 iterations
// per thread, at most kGridReduceBlocks (argmax and argmin: one block).
Attempt grid_reduction(const Kernel& k, const GpuTarget& target, int threads, int64_t per_thread) {
  std::optional<int64_t> trips = loop_trips(k);
  int64_t per_block = int64_t{threads} * per_thread;
  int64_t blocks = trips ? std::clamp<int64_t>((*trips + per_block - 1) / per_block, 1, kGridReduceBlocks) : kGridReduceBlocks;
  if (is_arg_reduce(k.reduce_op)) blocks = 1;
  Attempt r = cir::schedule_gpu_reduce(k, blocks, threads);
  if (!r || !gpu_support(*r, target).ok()) return std::nullopt;
  return r;
}

}  // namespace

const char* gpu_schedule_name(GpuSchedule s) {
  switch (s) {
    case GpuSchedule::WarpgroupAttention: return "warpgroup attention";
    case GpuSchedule::WarpgroupMatmul: return "warpgroup matmul";
    case GpuSchedule::TensorCoreMatmul: return "tensor-core matmul";
    case GpuSchedule::TiledMatmul: return "tiled matmul";
    case GpuSchedule::TileBlocks: return "tile blocks";
    case GpuSchedule::Rows: return "rows";
    case GpuSchedule::GridReduction: return "grid reduction";
    case GpuSchedule::Threads: return "threads";
    case GpuSchedule::Single: return "single";
  }
  return "?";
}

GpuPlan gpu_plan(const Kernel& kernel, const GpuTarget& target, const TuningChoice& choice) {
  GpuPlan plan;
  plan.writes_whole_output = cir::writes_whole_output(kernel);
  // The tuner's knobs (plan/gpu_tuning.hpp): threads per block of the
  // thread, row and reduction schedules; elements per thread; a grid
  // reduction's iterations per thread.
  const int most_threads = std::min(kGpuBlockThreads, target.max_threads_per_block);
  for (const auto& [name, value] : choice.knobs)
    if (name != "threads" && name != "width" && name != "per_thread" && name != "tiles" && name != "cluster")
      throw std::invalid_argument("tuning choice '" + choice.text() + "': no GPU knob '" + name + "'");
  const int threads = static_cast<int>(choice.get("threads", most_threads));
  // The rules' own count fits every target.
  if (choice.has("threads") && (threads < target.subgroup_size || threads > most_threads || threads % target.subgroup_size != 0))
    throw std::invalid_argument("tuning choice '" + choice.text() + "': " + std::to_string(threads) +
                                " threads per block do not fit this target (whole subgroups, at most " + std::to_string(most_threads) + ")");
  const int64_t per_thread = std::max<int64_t>(choice.get("per_thread", 8), 1);
  const int width = static_cast<int>(choice.get("width", 0));
  const int product_tiles = static_cast<int>(choice.get("tiles", 0));
  // A warpgroup product's blocks per cluster (0: the rules').
  const int cluster = static_cast<int>(choice.get("cluster", 0));
  if (choice.has("cluster") && (cluster < 1 || cluster > 2 || (cluster > 1 && !target.block_clusters)))
    throw std::invalid_argument("tuning choice '" + choice.text() + "': clusters of " + std::to_string(cluster) +
                                " blocks do not fit this target (1, or 2 where it has block clusters)");
  std::vector<cir::Pass> passes;

  // Tile programs: tile values rewritten to loops, each element of a tile
  // product its own dot product (so that a block's threads can share a
  // product's elements out), then the tiles made fewer and shorter-lived.
  bool tile_program = gpu_support(kernel, target).why_not.has_value();
  // The scheduled kernel, if the GPU can run it, into the plan.
  auto finish = [&](Kernel k) -> GpuPlan {
    GpuSupport support = gpu_support(k, target);
    if (support.why_not) plan.why_not = *support.why_not;
    else {
      plan.shared_bytes = support.shared_bytes;
      plan.kernel = std::move(k);
    }
    return std::move(plan);
  };
  // Flash attention on warpgroup matrix units takes the tile program whole.
  if (tile_program && kernel.dims.empty()) {
    if (Attempt found = cir::schedule_gpu_attention(kernel, target)) {
      plan.schedule = GpuSchedule::WarpgroupAttention;
      plan.block_threads = cir::kWarpgroupAttentionThreads;
      return finish(cir::run_passes(kernel, "specialize", {{"schedule_gpu_attention", [&found](const Kernel&) { return *found; }}}));
    }
  }
  if (tile_program) {
    if (!kernel.dims.empty()) {
      plan.why_not = "tile values are rewritten to loops once every size is known";
      return plan;
    }
    constexpr auto dots = cir::ProductOrder::DotProducts;
    if (!cir::scalarize_tiles(kernel, &plan.why_not, dots)) return plan;
    passes.push_back({"scalarize_tiles", [](const Kernel& k) { return *cir::scalarize_tiles(k, nullptr, dots); }});
    passes.push_back({"freeze_invariant_vars", [](const Kernel& k) { return cir::freeze_invariant_vars(k); }});
    passes.push_back({"fold_broadcast_extents", [](const Kernel& k) { return cir::fold_broadcast_extents(k); }});
    passes.push_back({"fuse_product_epilogues", [](const Kernel& k) { return cir::fuse_product_epilogues(k); }});
    passes.push_back({"map_in_place", [](const Kernel& k) { return cir::map_in_place(k); }});
    passes.push_back({"sink_tile_loads", [](const Kernel& k) { return cir::sink_tile_loads(k); }});
  }
  passes.push_back({"hoist_kept_loops", [](const Kernel& k) { return cir::hoist_kept_loops(k); }});

  // The schedules, in order of preference: the first that takes the kernel
  // is chosen, and the later ones leave it alone.
  std::optional<GpuSchedule> chosen;
  auto schedule = [&chosen](const char* name, GpuSchedule s, std::function<Attempt(const Kernel&)> attempt) {
    return cir::Pass{name, [&chosen, s, attempt = std::move(attempt)](const Kernel& k) {
                       if (chosen) return k;
                       Attempt scheduled = attempt(k);
                       if (!scheduled) return k;
                       chosen = s;
                       return *scheduled;
                     }};
  };
  int row_threads = 0;
  passes.push_back(
      schedule("schedule_gpu_wgmma", GpuSchedule::WarpgroupMatmul, [&](const Kernel& k) { return warpgroup_matmul(k, target, cluster); }));
  passes.push_back(schedule("schedule_gpu_mma", GpuSchedule::TensorCoreMatmul, [&](const Kernel& k) { return tensor_core_matmul(k, target); }));
  passes.push_back(schedule("schedule_gpu_matmul", GpuSchedule::TiledMatmul, [&](const Kernel& k) { return tiled_matmul(k, target, product_tiles); }));
  passes.push_back({"collapse_parallel_loops", [](const Kernel& k) { return cir::collapse_parallel_loops(k); }});
  if (tile_program)
    passes.push_back(schedule("schedule_gpu_tiles", GpuSchedule::TileBlocks, [&](const Kernel& k) { return tile_blocks(k, target, threads); }));
  passes.push_back(schedule("schedule_gpu_rows", GpuSchedule::Rows, [&](const Kernel& k) { return rows(k, target, threads, &row_threads); }));
  // A thread's share of a row in registers: its loads in flight at once, a
  // row that several loops read loaded once.
  passes.push_back({"gpu_row_registers", [&](const Kernel& k) { return chosen == GpuSchedule::Rows ? cir::gpu_row_registers(k) : k; }});
  passes.push_back(
      schedule("schedule_gpu_reduce", GpuSchedule::GridReduction, [&](const Kernel& k) { return grid_reduction(k, target, threads, per_thread); }));
  // Element-wise code: each thread takes a vector's width of consecutive elements.
  passes.push_back({"group_thread_elements", [&](const Kernel& k) {
                      return cir::group_thread_elements(k, width > 0 ? std::min(width, cir::thread_element_width(k, target.vector_bytes))
                                                                     : cir::thread_element_width(k, target.vector_bytes));
                    }});
  // Last, as on the CPU: a statement that reads an element several times (a
  // fused chain of blocks reads its input once per block) loads and checks
  // it once; shader compilers do not merge the checked loads themselves.
  // Not where the driver may assume no NaN or infinity (WebGPU's, a Vulkan
  // driver without SignedZeroInfNanPreserve): one value read twice would
  // let it fold `a - a` to 0, which two loads keep it from.
  if (target.api == GpuApi::Cuda || target.preserves_ieee_specials_f32)
    passes.push_back({"read_each_element_once", [](const Kernel& k) { return cir::read_each_element_once(k); }});
  Kernel k = cir::run_passes(kernel, "specialize", passes);

  auto outer = k.body.size() == 1 ? k.body[0].as<cir::For>() : nullptr;
  bool parallel = outer && outer->loop_kind == cir::LoopKind::Parallel;
  plan.schedule = chosen ? *chosen : parallel ? GpuSchedule::Threads : GpuSchedule::Single;
  plan.block_threads = threads;
  if (chosen == GpuSchedule::Rows) plan.block_threads = row_threads;
  if (chosen == GpuSchedule::TiledMatmul) plan.block_threads = cir::kGpuMatmulThreads;
  if (chosen == GpuSchedule::TensorCoreMatmul) plan.block_threads = cir::kGpuMmaThreads;
  if (chosen == GpuSchedule::WarpgroupMatmul) {
    plan.block_threads = cir::kWarpgroupProductThreads;
    plan.cluster = cir::warpgroup_product_cluster(k);
  }
  return finish(std::move(k));
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

}  // namespace zyntax
