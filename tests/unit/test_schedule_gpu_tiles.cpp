// schedule_gpu_tiles: a GPU block per iteration of a tile program, its
// tiles in shared memory, its tile operations shared out over the threads
// (tile products a block of outputs per thread).
// Flash attention (query blocks of 32 and 64 rows, odd sequence lengths and
// head sizes) scheduled this way runs on the reference executor, whose race
// checker stands in for the threads running at once, and must give the
// original kernel's result; a barrier taken out is a race it finds; the plan
// chooses the schedule where the device's shared memory holds the tiles
// (dynamic shared memory beyond 48 KiB) and ptxas accepts the PTX.
#include <gtest/gtest.h>

#include "../../bench/bench_kernels.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/collapse_parallel_loops.hpp"
#include "cir/passes/fold_broadcast_extents.hpp"
#include "cir/passes/freeze_invariant_vars.hpp"
#include "cir/passes/fuse_product_epilogues.hpp"
#include "cir/passes/map_in_place.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/schedule_gpu_tiles.hpp"
#include "cir/passes/sink_tile_loads.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "gpu_targets.hpp"
#include "plan/kernel_support.hpp"
#include "kernel_source.hpp"
#include "ptxas.hpp"
#include "schedule_parity.hpp"

namespace zyntax {
namespace {

using testing::expect_same_result;
using testing::kernel_of;

// Flash attention over query and key blocks of `block` rows, as a user
// writes it (the benchmark's kernel); `loads_first`: the key and value
// blocks named at the top of the loop, as the seed's example has them.
std::string flash_attention(int block, bool loads_first = false) {
  std::string b = std::to_string(block);
  std::string kb = "K[h, k0:k0 + " + b + "]", vb = "V[h, k0:k0 + " + b + "]";
  std::string loads = loads_first ? "     let Kb = " + kb + "\n     let Vb = " + vb + "\n" : "";
  if (loads_first) kb = "Kb", vb = "Vb";
  return "def f(Q: tensor[bh, s, d, f32], K: tensor[bh, s, d, f32], V: tensor[bh, s, d, f32]) {\n"
         " return compute(Q, K, V) {\n  @kernel flash_attention\n"
         "  for h in 0..bh:\n   for q0 in 0..s step " + b + ":\n"
         "    var m = -inf\n    var l = 0.0\n    var o = zeros(min(" + b + ", s - q0), d)\n"
         "    let Qb = Q[h, q0:q0 + " + b + "]\n"
         "    for k0 in 0..s step " + b + ":\n" + loads +
         "     let S = Qb @ transpose(" + kb + ") / sqrt(d)\n"
         "     let m_new = max(m, row_max(S))\n     let p = exp(S - m_new)\n"
         "     l = exp(m - m_new) * l + row_sum(p)\n"
         "     o = exp(m - m_new) * o + p @ " + vb + "\n     m = m_new\n"
         "    out[h, q0:q0 + " + b + "] = o / l\n }\n}";
}

// The kernel as the GPU plan has it before the schedule: sizes known, tiles
// as local arrays with products as dot products (their shape variables
// frozen where they never change, broadcasts between extents always equal
// written out, their element-wise maps fused into their
// stores, maps written over tiles nothing reads after, tiles loaded where
// they are first read), one parallel loop.
cir::Kernel scalarized(const cir::Kernel& generic, int64_t bh, int64_t s, int64_t d) {
  cir::Kernel k = cir::specialize(generic, {{"bh", bh}, {"s", s}, {"d", d}});
  std::string why;
  std::optional<cir::Kernel> loops = cir::scalarize_tiles(k, &why, cir::ProductOrder::DotProducts);
  EXPECT_TRUE(loops) << why;
  cir::Kernel folded = cir::fold_broadcast_extents(cir::freeze_invariant_vars(loops.value_or(k)));
  cir::Kernel fused = cir::map_in_place(cir::fuse_product_epilogues(folded));
  return cir::collapse_parallel_loops(cir::sink_tile_loads(fused));
}

struct Shape {
  int64_t bh, s, d;
};

TEST(ScheduleGpuTiles, FlashAttentionMatchesTheReferenceAtOddSizes) {
  for (auto [block, loads_first] : {std::pair{32, false}, {64, false}, {32, true}}) {
    cir::Kernel generic = kernel_of(flash_attention(block, loads_first));
    for (Shape sh : {Shape{1, 1, 4}, {2, 17, 16}, {1, 70, 8}, {3, 33, 5}, {1, 64, 64}, {2, 100, 3}}) {
      std::string what = "block " + std::to_string(block) + (loads_first ? ", loads first," : "") + " at " + std::to_string(sh.bh) + "x" + std::to_string(sh.s) + "x" + std::to_string(sh.d);
      cir::Kernel original = cir::specialize(generic, {{"bh", sh.bh}, {"s", sh.s}, {"d", sh.d}});
      cir::Kernel loops = scalarized(generic, sh.bh, sh.s, sh.d);
      for (int threads : {32, 256}) {
        std::string why;
        std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(loops, testing::test_gpu_target(), threads, &why);
        ASSERT_TRUE(blocks) << what << ": " << why;
        expect_same_result(original, *blocks, what + ", " + std::to_string(threads) + " threads");
      }
    }
  }
}

// Flash attention over bf16 blocks, widened where read, as the benchmark
// writes it; `tf32`: marked @precision(tf32).
std::string bf16_flash_attention(int block, bool tf32) { return bench::flash_attention_bf16_source(block, false, tf32); }

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Q K^T over bf16 blocks widened is exact in TF32: it runs on the matrix
// units (K read transposed), P V too where the kernel allows TF32 (P
// rounded) and the head size is a piece wide at least, each product over the tiles' largest extents in whole pieces,
// ragged depths zeroed past their end; at odd sizes (partial blocks, head
// sizes that are no multiple of 8, 16 rows or fewer) the results are the
// original kernel's within f32 rounding of reordered sums (exact factors)
// or TF32 rounding of P.
TEST(ScheduleGpuTiles, AttentionProductsOverBfloatBlocksRunOnMatrixUnits) {
  for (bool tf32 : {false, true})
    for (int block : {32, 64}) {
      cir::Kernel generic = kernel_of(bf16_flash_attention(block, tf32));
      for (Shape sh : {Shape{2, 17, 16}, {1, 70, 8}, {3, 33, 5}, {1, 64, 64}, {2, 100, 24}, {1, 40, 128}}) {
        std::string what = std::string(tf32 ? "tf32, " : "") + "block " + std::to_string(block) + " at " + std::to_string(sh.bh) + "x" +
                           std::to_string(sh.s) + "x" + std::to_string(sh.d);
        cir::Kernel original = cir::specialize(generic, {{"bh", sh.bh}, {"s", sh.s}, {"d", sh.d}});
        cir::Kernel loops = scalarized(generic, sh.bh, sh.s, sh.d);
        std::string why;
        std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(loops, testing::test_gpu_target(), 256, &why);
        ASSERT_TRUE(blocks) << what << ": " << why;
        std::string text = cir::print(*blocks);
        // P V where its output block is 16 columns wide at least (the head size).
        EXPECT_EQ(count_of(text, "mma_zero"), tf32 && sh.d >= 16 ? 2 : 1) << what << "\n" << text;
        EXPECT_NE(text.find("^T[ld "), std::string::npos) << what << "\n" << text;
        // Q K^T's depth is the head size: zeroed past its end where it is no multiple of 8.
        bool ragged_head = sh.d % 8 != 0;
        EXPECT_EQ(text.find("for Qb%k in ") != std::string::npos, ragged_head) << what << "\n" << text;
        expect_same_result(original, *blocks, what, 7, tf32 ? 3e-3 : 2e-5);
      }
    }
  // Without matrix units (or without TF32 on them) the products stay on the threads.
  cir::Kernel loops = scalarized(kernel_of(bf16_flash_attention(64, true)), 1, 64, 64);
  GpuTarget no_units = testing::test_gpu_target();
  no_units.matrix_units = {};
  for (std::optional<cir::Kernel> k : {cir::schedule_gpu_tiles(loops, no_units, 256), cir::schedule_gpu_tiles(loops, testing::test_gpu_target(), 256, nullptr, false)}) {
    ASSERT_TRUE(k);
    EXPECT_EQ(cir::print(*k).find("mma"), std::string::npos);
  }
}

// The factors' tiles are laid out for the units (whole pieces, rows 16
// bytes apart plus 16), the others keep their padded rows; placed, the
// 64-row blocks of 64-wide heads fit two blocks a multiprocessor; the plan
// takes the schedule on sm_80 and sm_90, and ptxas takes its PTX.
TEST(ScheduleGpuTiles, MatrixUnitTilesAreLaidOutForThemAndAssemble) {
  cir::Kernel loops = scalarized(kernel_of(bf16_flash_attention(64, true)), 12, 4096, 64);
  std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(loops, testing::test_gpu_target(), 256);
  ASSERT_TRUE(blocks);
  std::string text = cir::print(*blocks);
  EXPECT_NE(text.find("shared Qb: tensor[64, 68, f32]"), std::string::npos) << text;
  EXPECT_NE(text.find("shared o: tensor[o%n0, 65, f32]"), std::string::npos) << text;
  // Q and K hold widened bf16 values, read unrounded; P is rounded to TF32, V not.
  EXPECT_NE(text.find("mma mma%acc += Qb[ld 68, exact] . stage%8^T[ld 68, exact] over 64 warps 4x2"), std::string::npos) << text;
  EXPECT_NE(text.find("+= S[ld 68] . stage%37[ld 68, exact] over 64"), std::string::npos) << text;
  EXPECT_EQ(text.find("for S%k in"), std::string::npos) << "whole key blocks need no zeroed depth\n" << text;
  EXPECT_LE(2 * (gpu_shared_bytes(*blocks) + 1024), 228 << 10) << gpu_shared_bytes(*blocks);

  std::vector<cir::Kernel> planned;
  for (const char* arch : {"sm_80", "sm_90"}) {
    for (int64_t s : {4096, 1000}) {
      GpuPlan plan = gpu_plan(cir::specialize(kernel_of(bf16_flash_attention(64, true)), {{"bh", 12}, {"s", s}, {"d", 64}}), testing::nvidia_target(arch));
      ASSERT_TRUE(plan.kernel) << plan.why_not;
      EXPECT_EQ(plan.schedule, GpuSchedule::TileBlocks);
      EXPECT_EQ(count_of(cir::print(*plan.kernel), "mma_zero"), 2) << arch;
      if (std::string(arch) == "sm_80") planned.push_back(*plan.kernel);
    }
  }
  testing::expect_ptx_assembles(planned, {"attention_even", "attention_ragged"}, "tile_mma_attention", [](const std::string& ptx) {
    EXPECT_NE(ptx.find("wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32"), std::string::npos) << ptx.substr(0, 4000);
    EXPECT_NE(ptx.find("wmma.load.b.sync.aligned.col.m16n16k8"), std::string::npos);
  });
}

// The row statistics (64 of them for 256 threads) fold each row in four
// parts, interleaved, then the parts; the output's rescaling exp(m - m_new),
// the same along a row, is computed once per row into a shared column,
// which the output's update reads. At odd sizes the results are the
// original kernel's (FlashAttentionMatchesTheReferenceAtOddSizes and the
// bf16 cases above run these schedules too).
TEST(ScheduleGpuTiles, RowStatisticsAreSplitAndRowInvariantsComputedOncePerRow) {
  cir::Kernel k = scalarized(kernel_of(flash_attention(64)), 12, 4096, 64);
  std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(k, testing::test_gpu_target(), 256);
  ASSERT_TRUE(blocks);
  std::string text = cir::print(*blocks);
  EXPECT_EQ(count_of(text, "%part: tensor[256, f32]"), 1) << text;  // row_max's partials
  EXPECT_EQ(count_of(text, "%part: tensor[256, f64]"), 1) << text;  // row_sum's, in its f64 sums
  EXPECT_NE(text.find(" step 4 {"), std::string::npos) << "each part every fourth term\n" << text;
  EXPECT_NE(text.find("%col[mm%40i%412] = exp(m[mm%40i%412, 0] - m_new[mm%40i%412, 0])"), std::string::npos) << text;
  EXPECT_NE(text.find("o[mm%40i%41, mm%40i%42] = mm%40i%41%col[mm%40i%41] * o[mm%40i%41, mm%40i%42] + acc%43%0%0"), std::string::npos) << text;
  expect_same_result(cir::specialize(kernel_of(flash_attention(64)), {{"bh", 1}, {"s", 100}, {"d", 24}}), 
                     *cir::schedule_gpu_tiles(scalarized(kernel_of(flash_attention(64)), 1, 100, 24), testing::test_gpu_target(), 256), "1x100x24");
}

// Every nest of the tile program is shared out over the block's threads,
// none left to one thread, at even and ragged lengths; the tile products'
// register blocks as large as the tiles need: 2x2 outputs a thread for the
// 32x32 scores, 2x4 for the 32x64 output block (16 x 16 threads).
TEST(ScheduleGpuTiles, EveryNestOfFlashAttentionIsSharedOut) {
  for (int64_t s : {4096, 100}) {
    cir::Kernel k = scalarized(kernel_of(flash_attention(32)), 12, s, 64);
    std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(k, testing::test_gpu_target(), 256);
    ASSERT_TRUE(blocks);
    std::string text = cir::print(*blocks);
    EXPECT_EQ(text.find("once%t"), std::string::npos) << "s=" << s << "\n" << text;
    EXPECT_NE(text.find("%1%1 = fma("), std::string::npos) << text;
    EXPECT_EQ(text.find("%2%2 = fma("), std::string::npos) << text;
    EXPECT_NE(text.find("%1%3 = fma("), std::string::npos) << text;
  }
  // Where the blocks divide the length every extent is a constant: the
  // scores' rows are padded, and the key block is copied along K's rows
  // (coalesced) into padded rows that Q K^T reads down.
  cir::Kernel even = scalarized(kernel_of(flash_attention(32)), 12, 4096, 64);
  std::string text = cir::print(*cir::schedule_gpu_tiles(even, testing::test_gpu_target(), 256));
  EXPECT_NE(text.find("shared S: tensor[S%n0, 33, f32]"), std::string::npos) << text;
  EXPECT_NE(text.find("shared stage%8: tensor[stage%8%n0, 65, f32]"), std::string::npos) << text;
  EXPECT_NE(text.find("stage%8[stage%8i%9, stage%8i%10] = K[h, k0 + stage%8i%9, stage%8i%10]"), std::string::npos) << text;
}

TEST(ScheduleGpuTiles, TilesGoToPaddedSharedArraysAndNestsToThreads) {
  cir::Kernel k = scalarized(kernel_of(flash_attention(64)), 2, 128, 64);
  std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(k, testing::test_gpu_target(), 256);
  ASSERT_TRUE(blocks);
  std::string text = cir::print(*blocks);
  EXPECT_NE(text.find("gpu_block.x for"), std::string::npos) << text;
  EXPECT_EQ(text.find("local "), std::string::npos) << text;
  // Rows of 64 get a column of padding, so that a warp reading down a
  // column meets each bank once.
  EXPECT_NE(text.find("shared Qb: tensor[Qb%n0, 65, f32] capacity 4160"), std::string::npos) << text;
  // The key block, a view of K read transposed by Q K^T, is copied into a
  // shared array of its own once, rather than read from memory by every
  // dot product.
  EXPECT_NE(text.find("shared stage%"), std::string::npos) << text;
  EXPECT_NE(text.find("] = K[h, "), std::string::npos) << text;
  // 2-D nests as 8 rows of 32 columns at a time.
  EXPECT_NE(text.find("step 8 {"), std::string::npos) << text;
  EXPECT_NE(text.find("step 32 {"), std::string::npos) << text;
  // Tile products as 4x4 blocks of dot products a thread, their terms fused
  // multiply-adds: 16 rows of 16 threads cover 64 by 64 outputs.
  EXPECT_NE(text.find("%t / 16"), std::string::npos) << text;
  EXPECT_NE(text.find("step 64 {"), std::string::npos) << text;
  EXPECT_NE(text.find("%3%3 = fma("), std::string::npos) << text;
  EXPECT_NE(text.find("+ 48 < "), std::string::npos) << text;
  EXPECT_NE(text.find("barrier(block)"), std::string::npos) << text;
}

// 64-row blocks' tiles fit three times in a multiprocessor's 228 KiB (each
// block also takes 1 KiB the driver keeps): with o updated in place and
// p = exp(S - m_new) written over S, at most four 64x64 tiles are alive at
// once (o, the query block, S or p, the key or value block), and placed
// (place_shared_arrays) they take no more than that.
TEST(ScheduleGpuTiles, FlashAttentionsTilesFitThreeBlocksAMultiprocessor) {
  // Also with the value block named at the top of the loop: it is loaded
  // where the last product reads it (sink_tile_loads).
  for (bool loads_first : {false, true}) {
    cir::Kernel k = scalarized(kernel_of(flash_attention(64, loads_first)), 12, 512, 64);
    std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(k, testing::test_gpu_target(), 256);
    ASSERT_TRUE(blocks);
    int64_t bytes = gpu_shared_bytes(*blocks);
    EXPECT_LE(3 * (bytes + 1024), 228 << 10) << bytes;
    EXPECT_LE(bytes, 4 * 64 * 65 * 4 + 4 * 64 * 4) << "four tiles of padded rows and four columns of row statistics";
    EXPECT_NE(cir::print(*blocks).find(" at byte 0"), std::string::npos);
  }
}

// Every barrier removed.
class DropBarriers : public cir::IRMutator {
 public:
  using IRMutator::visit;

 protected:
  cir::Stmt visit(const cir::Barrier* op) override { return cir::make_check(cir::BoolImm::make(true), "no barrier here", op->span); }
};

TEST(ScheduleGpuTiles, AMissingBarrierIsARaceTheReferenceFinds) {
  cir::Kernel k = scalarized(kernel_of(flash_attention(32)), 1, 40, 8);
  std::optional<cir::Kernel> blocks = cir::schedule_gpu_tiles(k, testing::test_gpu_target(), 64);
  ASSERT_TRUE(blocks);
  cir::Kernel racy = *blocks;
  racy.body = DropBarriers().mutate(racy.body);
  Random rng(3);
  auto [inputs, scalars] = testing::inputs_for(k, rng);
  try {
    ReferenceKernel(racy).run(inputs, scalars);
    FAIL() << "no race found";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data race in the GPU schedule"), std::string::npos) << e.what();
  }
}

TEST(ScheduleGpuTiles, KernelsWithoutTilesAreLeftAlone) {
  cir::Kernel k = cir::specialize(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n  @kernel fused\n"
                                            "  for i in 0..n:\n   out[i] = x[i] * 2.0\n }\n}"),
                                  {{"n", 1000}});
  std::string why;
  EXPECT_FALSE(cir::schedule_gpu_tiles(cir::collapse_parallel_loops(k), testing::test_gpu_target(), 256, &why));
  EXPECT_EQ(why, "no tile arrays");
  EXPECT_FALSE(cir::schedule_gpu_tiles(k, testing::test_gpu_target(), 100, &why));
}

TEST(ScheduleGpuTiles, ThePlanTakesItWhereTheTilesFitInSharedMemory) {
  cir::Kernel generic = kernel_of(flash_attention(64));
  cir::Kernel k = cir::specialize(generic, {{"bh", 12}, {"s", 512}, {"d", 64}});
  // 64x64 tiles need more than the 48 KiB of static shared memory.
  GpuPlan small = gpu_plan(k, testing::test_gpu_target());
  ASSERT_TRUE(small.kernel) << small.why_not;
  EXPECT_NE(small.schedule, GpuSchedule::TileBlocks);
  GpuTarget sm90 = testing::nvidia_target("sm_90");
  GpuPlan plan = gpu_plan(k, sm90);
  ASSERT_TRUE(plan.kernel) << plan.why_not;
  EXPECT_EQ(plan.schedule, GpuSchedule::TileBlocks);
  EXPECT_EQ(plan.block_threads, 256);
  EXPECT_GT(plan.shared_bytes, sm90.shared_memory_static);
  EXPECT_LE(plan.shared_bytes, sm90.shared_memory_max);
  EXPECT_EQ(gpu_launch_blocks(plan, 1 << 20), 12u * 8u);  // a block per query block

  // Blocks of 32 rows with 16-wide heads fit in static shared memory.
  cir::Kernel small_tiles = cir::specialize(kernel_of(flash_attention(32)), {{"bh", 4}, {"s", 100}, {"d", 16}});
  GpuPlan fits = gpu_plan(small_tiles, testing::test_gpu_target());
  ASSERT_TRUE(fits.kernel) << fits.why_not;
  EXPECT_EQ(fits.schedule, GpuSchedule::TileBlocks);
  EXPECT_LE(fits.shared_bytes, sm90.shared_memory_static);

  // Static shared arrays in one, dynamic shared memory in the other; both
  // through ptxas for sm_80 and sm_90.
  testing::expect_ptx_assembles({*fits.kernel, *plan.kernel}, {"static_tiles", "dynamic_tiles"}, "tile_blocks", [](const std::string& ptx) {
    EXPECT_NE(ptx.find(".extern .shared .align 128 .b8 dynamic_tiles_dynamic_shared[]"), std::string::npos) << ptx.substr(0, 4000);
    EXPECT_NE(ptx.find(".shared .align 128 .b8 static_tiles_$_"), std::string::npos) << ptx.substr(0, 4000);
    EXPECT_NE(ptx.find("bar.sync"), std::string::npos);
  });
}

}  // namespace
}  // namespace zyntax
