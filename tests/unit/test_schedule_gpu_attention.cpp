// schedule_gpu_attention: flash attention on Hopper's warpgroup matrix
// units. On the reference executor the scheduled kernel (a persistent grid
// of warpgroup_attention statements) gives the tile program's result within
// the rounding of P to the inputs' type, in bf16 and f16, causal and not,
// for head dimensions 64 and 128, at sequence lengths that leave partial
// query and key tiles; what it cannot take (no @precision(bf16), other
// types, other head dimensions, a different softmax) keeps the tile
// schedule, with the reason; and its PTX passes `ptxas -arch=sm_90a -v`
// with no spills and no serialisation warning.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "../../bench/bench_kernels.hpp"
#include "backends/reference/reference_executor.hpp"
#include "cir/affine.hpp"
#include "cir/passes/schedule_gpu_attention.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "gpu_targets.hpp"
#include "kernel_source.hpp"
#include "plan/gpu_plan.hpp"
#include "product_parity.hpp"
#include "ptxas.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

cir::Kernel attention(const std::string& type, bool causal, const std::string& precision, int64_t bh, int64_t s, int64_t d, int block = 64) {
  cir::Kernel generic = testing::kernel_of(bench::flash_attention_typed_source(type, block, causal, precision));
  return cir::specialize(generic, {{"bh", bh}, {"s", s}, {"d", d}});
}

GpuTarget hopper() { return testing::nvidia_target("sm_90a"); }

double relative_error(const Tensor& got, const Tensor& want) {
  double diff = 0, norm = 0;
  for (int64_t e = 0; e < want.numel(); ++e) {
    double g = got.get(e).f, w = want.get(e).f;
    if (!std::isfinite(g)) return INFINITY;
    diff += (g - w) * (g - w);
    norm += w * w;
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

TEST(ScheduleGpuAttention, TheTileProgramsResultAtOddSizes) {
  struct Case {
    const char* type;
    bool causal;
    int64_t bh, s, d;
    int block;
  };
  const Case cases[] = {{"bf16", false, 2, 37, 64, 64},  {"bf16", true, 2, 130, 64, 64}, {"f16", false, 3, 130, 64, 32},
                        {"f16", true, 1, 200, 64, 64},   {"bf16", false, 1, 37, 128, 64}, {"bf16", true, 2, 129, 128, 64},
                        {"bf16", true, 1, 1, 64, 64}};
  for (const Case& c : cases) {
    std::string what = std::string(c.type) + (c.causal ? " causal" : "") + " " + std::to_string(c.bh) + "x" + std::to_string(c.s) + "x" +
                       std::to_string(c.d);
    cir::Kernel kernel = attention(c.type, c.causal, "bf16", c.bh, c.s, c.d, c.block);
    GpuTarget target = hopper();
    target.multiprocessors = 2;  // few blocks: each takes several tiles in turn
    std::string why;
    std::optional<cir::Kernel> scheduled = cir::schedule_gpu_attention(kernel, target, &why);
    ASSERT_TRUE(scheduled) << what << ": " << why;
    EXPECT_NE(cir::print(*scheduled).find("warpgroup_attention"), std::string::npos) << cir::print(*scheduled);
    Random rng(11);
    std::vector<Tensor> in = testing::random_inputs(kernel, rng);
    Tensor want = ReferenceKernel(kernel).run(in, {}).astype(DType::F64);
    Tensor got = ReferenceKernel(*scheduled).run(in, {}).astype(DType::F64);
    ASSERT_EQ(want.shape(), got.shape()) << what;
    // P rounded to bf16 (8 bits) or f16 (11 bits) before P V.
    double err = relative_error(got, want);
    EXPECT_LT(err, std::string(c.type) == "bf16" ? 8e-3 : 2e-3) << what;
  }
}

TEST(ScheduleGpuAttention, OperandsTilesAndTheGrid) {
  std::string why;
  std::optional<cir::Kernel> s = cir::schedule_gpu_attention(attention("bf16", false, "bf16", 12, 4096, 128), hopper(), &why);
  ASSERT_TRUE(s) << why;
  std::vector<codegen::TensorMapParam> maps = codegen::tensor_map_params(*s);
  ASSERT_EQ(maps.size(), 3u);
  // Queries and keys K-major (the head dimension fast), values MN-major.
  EXPECT_EQ(maps[0].operand.buffer, "Q");
  EXPECT_TRUE(maps[0].operand.k_major);
  EXPECT_TRUE(maps[1].operand.k_major);
  EXPECT_FALSE(maps[2].operand.k_major);
  for (const codegen::TensorMapParam& m : maps) {
    EXPECT_EQ(m.operand.rank, 3);
    EXPECT_EQ(m.operand.dims[0], 128);
    EXPECT_EQ(m.operand.dims[1], 4096);
    EXPECT_EQ(m.operand.dims[2], 12);
    EXPECT_EQ(m.operand.strides[0], 128);
    EXPECT_EQ(m.operand.strides[1], 4096 * 128);
    EXPECT_EQ(m.box[0], 64u);  // 128 bytes of the head dimension
    EXPECT_EQ(m.box[1], 128u);  // the query tile's rows, the key tile's keys
  }
  auto outer = s->body[0].as<cir::For>();
  ASSERT_TRUE(outer);
  EXPECT_EQ(outer->loop_kind, cir::LoopKind::GpuBlock);
  EXPECT_EQ(*cir::constant_value(outer->hi), 132) << "one block per multiprocessor";
  // The causal tiles go last row tile first: they see the most keys.
  EXPECT_EQ(cir::attention_tile(0, 12, 32).row_tile, 31);
  EXPECT_EQ(cir::attention_tile(12, 12, 32).row_tile, 30);
  EXPECT_EQ(cir::attention_tile(13, 12, 32).batch, 1);
}

TEST(ScheduleGpuAttention, WhatItCannotTakeKeepsTheTileSchedule) {
  std::string why;
  // P V may not round P without the block's permission.
  EXPECT_FALSE(cir::schedule_gpu_attention(attention("bf16", false, "tf32", 2, 256, 64), hopper(), &why));
  EXPECT_NE(why.find("@precision(bf16)"), std::string::npos) << why;
  GpuPlan plan = gpu_plan(attention("bf16", false, "tf32", 2, 256, 64), hopper());
  ASSERT_TRUE(plan.kernel) << plan.why_not;
  EXPECT_EQ(plan.schedule, GpuSchedule::TileBlocks);
  // f32 inputs, a head dimension of 96, sm_90 without the accelerated features.
  EXPECT_FALSE(cir::schedule_gpu_attention(attention("f32", false, "bf16", 2, 256, 64), hopper(), &why));
  EXPECT_FALSE(cir::schedule_gpu_attention(attention("bf16", false, "bf16", 2, 256, 96), hopper(), &why));
  EXPECT_NE(why.find("head dimension"), std::string::npos) << why;
  EXPECT_FALSE(cir::schedule_gpu_attention(attention("bf16", false, "bf16", 2, 256, 64), testing::nvidia_target("sm_90"), &why));
  // Not the online softmax: the sum is not rescaled, or the scores not scaled.
  std::string source = bench::flash_attention_typed_source("bf16", 64, false, "bf16");
  std::string unscaled_sum = source;
  unscaled_sum.replace(unscaled_sum.find("l = exp(m - m_new) * l"), 22, "l = l");
  cir::Kernel k = cir::specialize(testing::kernel_of(unscaled_sum), {{"bh", 2}, {"s", 256}, {"d", 64}});
  EXPECT_FALSE(cir::schedule_gpu_attention(k, hopper(), &why));
  EXPECT_NE(why.find("running sum"), std::string::npos) << why;
  std::string other_mask = bench::flash_attention_typed_source("bf16", 64, true, "bf16");
  other_mask.replace(other_mask.find("if k0 + c > q0 + r"), 18, "if k0 + c > q0 + r + 1");
  k = cir::specialize(testing::kernel_of(other_mask), {{"bh", 2}, {"s", 256}, {"d", 64}});
  EXPECT_FALSE(cir::schedule_gpu_attention(k, hopper(), &why));
  EXPECT_NE(why.find("causal"), std::string::npos) << why;
}

TEST(ScheduleGpuAttention, ThePlanAndItsPtxForSm90a) {
  std::vector<cir::Kernel> planned;
  std::vector<const cir::Kernel*> ptrs;
  std::vector<std::string> names;
  for (int64_t d : {64, 128})
    for (bool causal : {false, true})
      for (const char* type : {"bf16", "f16"}) {
        GpuPlan plan = gpu_plan(attention(type, causal, "bf16", 12, 4096, d), hopper());
        ASSERT_TRUE(plan.kernel) << plan.why_not;
        EXPECT_EQ(plan.schedule, GpuSchedule::WarpgroupAttention);
        EXPECT_EQ(plan.block_threads, cir::kWarpgroupAttentionThreads);
        EXPECT_GT(plan.shared_bytes, 48 << 10);
        EXPECT_LE(plan.shared_bytes, hopper().shared_memory_max);
        planned.push_back(*plan.kernel);
        names.push_back(std::string("attention_") + type + "_d" + std::to_string(d) + (causal ? "_causal" : ""));
      }
  for (const cir::Kernel& k : planned) ptrs.push_back(&k);
  codegen::PtxModule module = codegen::NvptxCompiler::instance().compile(ptrs, names, *codegen::parse_nvptx_arch("sm_90a"));
  for (const char* op : {"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
                         "cvt.rn.bf16x2.f32", "cvt.rn.f16x2.f32", "ex2.approx.ftz.f32", "shfl.sync.bfly.b32",
                         "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", "mbarrier.try_wait.parity.shared::cta.b64",
                         "setmaxnreg.dec.sync.aligned.u32 24", "setmaxnreg.inc.sync.aligned.u32 240", "trap;", ".maxntid 384"})
    EXPECT_NE(module.ptx.find(op), std::string::npos) << op;
  testing::expect_ptxas_clean(module.ptx, "sm_90a", "attention", planned.size());
}

}  // namespace
}  // namespace zyntax
