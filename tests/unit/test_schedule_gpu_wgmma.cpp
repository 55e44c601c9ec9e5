// schedule_gpu_wgmma: matrix products on Hopper's warpgroup matrix units,
// factors brought by the tensor copy engine. On the reference executor the
// scheduled kernel (a persistent grid of warpgroup_product statements) gives
// the original's result for f16/bf16 factors and, for TF32, the original's
// on rounded factors, at odd sizes, with either operand's depth as its fast
// axis, batched, broadcast, with a start value and an epilogue; the plan
// picks it for sm_90a only; what the copy engine cannot read falls back to
// the earlier schedules with the reason; pairs of blocks in clusters (the
// tuner's cluster=2) take every tile once; and its PTX passes
// `ptxas -arch=sm_90a -v` with no spills and no serialisation warning.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "backends/reference/reference_executor.hpp"
#include "cir/affine.hpp"
#include "cir/passes/schedule_gpu_wgmma.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "gpu_targets.hpp"
#include "kernel_source.hpp"
#include "plan/gpu_tuning.hpp"
#include "product_parity.hpp"
#include "ptxas.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

struct Product {
  const char* name;
  DType factors;  // f32: TF32
  const char* source;
};

const Product kProducts[] = {
    {"bf16", DType::BF16,
     "def f(a: tensor[m, k, bf16], b: tensor[k, n, bf16]) {\n return compute(a, b) {\n @kernel matmul\n for i in 0..m, j in 0..n:\n"
     "  var s: f32 = 0.0\n  for p in 0..k:\n   s += f32(a[i, p]) * f32(b[p, j])\n  out[i, j] = s\n }\n}"},
    {"f16_transposed_b_bias_relu", DType::F16,
     "def f(a: tensor[m, k, f16], b: tensor[n, k, f16], c: tensor[n, f32]) {\n return compute(a, b, c) {\n @kernel matmul\n"
     " for i in 0..m, j in 0..n:\n  var s = c[j]\n  for p in 0..k:\n   s += f32(a[i, p]) * f32(b[j, p])\n  out[i, j] = max(s * 0.5, 0.0)\n }\n}"},
    {"bf16_transposed_a", DType::BF16,
     "def f(a: tensor[k, m, bf16], b: tensor[k, n, bf16]) {\n return compute(a, b) {\n @kernel matmul\n for i in 0..m, j in 0..n:\n"
     "  var s: f32 = 0.0\n  for p in 0..k:\n   s += f32(a[p, i]) * f32(b[p, j])\n  out[i, j] = s\n }\n}"},
    {"bf16_batched", DType::BF16,
     "def f(a: tensor[h, m, k, bf16], b: tensor[h, k, n, bf16]) {\n return compute(a, b) {\n @kernel matmul\n"
     " for g in 0..h, i in 0..m, j in 0..n:\n  var s: f32 = 0.0\n  for p in 0..k:\n   s += f32(a[g, i, p]) * f32(b[g, p, j])\n"
     "  out[g, i, j] = s\n }\n}"},
    {"f16_batched_shared_b", DType::F16,
     "def f(a: tensor[h, m, k, f16], b: tensor[k, n, f16]) {\n return compute(a, b) {\n @kernel matmul\n"
     " for g in 0..h, i in 0..m, j in 0..n:\n  var s: f32 = 0.0\n  for p in 0..k:\n   s += f32(a[g, i, p]) * f32(b[p, j])\n"
     "  out[g, i, j] = s\n }\n}"},
    {"tf32_transposed_b", DType::F32,
     "def f(a: tensor[m, k, f32], b: tensor[n, k, f32]) {\n return compute(a, b) {\n @kernel matmul\n @precision(tf32)\n"
     " for i in 0..m, j in 0..n:\n  var s = 0.0\n  for p in 0..k:\n   s += a[i, p] * b[j, p]\n  out[i, j] = s\n }\n}"},
    // b[k, n]: computed transposed, b's tiles read into registers.
    {"tf32", DType::F32,
     "def f(a: tensor[m, k, f32], b: tensor[k, n, f32]) {\n return compute(a, b) {\n @kernel matmul\n @precision(tf32)\n"
     " for i in 0..m, j in 0..n:\n  var s = 0.0\n  for p in 0..k:\n   s += a[i, p] * b[p, j]\n  out[i, j] = s\n }\n}"},
    // a[k, m]: a's tiles read into registers.
    {"tf32_transposed_a_bias", DType::F32,
     "def f(a: tensor[k, m, f32], b: tensor[n, k, f32], c: tensor[m, f32]) {\n return compute(a, b, c) {\n @kernel matmul\n"
     " @precision(tf32)\n for i in 0..m, j in 0..n:\n  var s = c[i]\n  for p in 0..k:\n   s += a[p, i] * b[j, p]\n  out[i, j] = s\n }\n}"},
    {"tf32_batched", DType::F32,
     "def f(a: tensor[h, m, k, f32], b: tensor[h, k, n, f32]) {\n return compute(a, b) {\n @kernel matmul\n @precision(tf32)\n"
     " for g in 0..h, i in 0..m, j in 0..n:\n  var s = 0.0\n  for p in 0..k:\n   s += a[g, i, p] * b[g, p, j]\n"
     "  out[g, i, j] = s\n }\n}"},
};

cir::Kernel specialised(const char* source, int64_t m, int64_t n, int64_t k) {
  cir::Kernel generic = kernel_of(source);
  std::map<std::string, int64_t> dims = {{"m", m}, {"n", n}, {"k", k}, {"h", 3}}, used;
  for (const cir::DimParam& d : generic.dims) used[d.name] = dims.at(d.name);
  return cir::specialize(generic, used);
}

// sm_90a with an H100's multiprocessors.
GpuTarget hopper() { return testing::nvidia_target("sm_90a"); }

TEST(ScheduleGpuWgmma, TheReferencesProductAtOddSizes) {
  for (const Product& p : kProducts) {
    // Sizes whose rows are whole 16-byte runs (the copy engine's strides):
    // partial tiles on every side, one depth step and several, more tiles
    // than blocks (a block takes several turns).
    std::vector<std::tuple<int64_t, int64_t, int64_t>> sizes = {{8, 8, 8}, {40, 24, 72}, {136, 136, 64}, {200, 264, 136}};
    if (std::string(p.name) == "bf16") sizes.insert(sizes.end(), {{1, 8, 8}, {5, 24, 72}, {129, 8, 200}});  // rows of any count
    for (auto [m, n, k] : sizes) {
      cir::Kernel kernel = specialised(p.source, m, n, k);
      GpuTarget target = hopper();
      target.multiprocessors = 2;  // few blocks: each takes several tiles in turn
      std::string why;
      std::optional<cir::Kernel> s = cir::schedule_gpu_wgmma(kernel, target, &why);
      ASSERT_TRUE(s) << p.name << " " << m << "x" << n << "x" << k << ": " << why;
      EXPECT_NE(cir::print(*s).find("warpgroup_product"), std::string::npos) << cir::print(*s);
      Random rng(5);
      std::vector<Tensor> in = testing::random_inputs(kernel, rng);
      // TF32: the factors a and b as the matrix units read them.
      std::vector<Tensor> as_read = in;
      size_t input = 0;
      for (const cir::Param& param : kernel.params)
        if (param.role == cir::ParamRole::Input) {
          if (p.factors == DType::F32 && (param.name == "a" || param.name == "b")) as_read[input] = testing::rounded_to_tf32(as_read[input]);
          ++input;
        }
      Tensor want = ReferenceKernel(kernel).run(as_read, {}).astype(DType::F64);
      double scale = 1;
      for (int64_t e = 0; e < want.numel(); ++e) scale = std::max(scale, std::fabs(want.get(e).f));
      // Alone, and in pairs of blocks (two pairs: each takes several
      // turns; an odd count of row tiles leaves a pair's second block
      // past the last row).
      for (int cluster : {1, 2}) {
        target.multiprocessors = 2 * cluster;
        std::optional<cir::Kernel> s = cir::schedule_gpu_wgmma(kernel, target, &why, cluster);
        ASSERT_TRUE(s) << p.name << " " << m << "x" << n << "x" << k << ": " << why;
        EXPECT_EQ(cir::warpgroup_product_cluster(*s), cluster);
        Tensor got = ReferenceKernel(*s).run(in, {}).astype(DType::F64);
        ASSERT_EQ(want.shape(), got.shape());
        for (int64_t e = 0; e < want.numel(); ++e)
          ASSERT_NEAR(got.get(e).f, want.get(e).f, 1e-5 * scale)
              << p.name << " at " << m << "x" << n << "x" << k << " in clusters of " << cluster << ", element " << e;
      }
    }
  }
}

TEST(ScheduleGpuWgmma, PairsOfBlocksTakeTheTwoRowTilesOfAColumnTile) {
  cir::Kernel kernel = specialised(kProducts[0].source, 1000, 1000, 64);  // 8 x 4 tiles of 128 x 256
  GpuTarget target = hopper();
  target.multiprocessors = 7;  // an odd count: three pairs
  std::optional<cir::Kernel> s = cir::schedule_gpu_wgmma(kernel, target, nullptr, 2);
  ASSERT_TRUE(s);
  std::string text = cir::print(*s);
  EXPECT_NE(text.find("cluster 2 rank blk%wg % 2 "), std::string::npos) << text;
  EXPECT_NE(text.find("tiles blk%wg / 2.. step 3 "), std::string::npos) << text;
  EXPECT_NE(text.find("for blk%wg in 0..6"), std::string::npos) << text;
  // Without block clusters the schedule says why, and the plan refuses the knob.
  target.block_clusters = false;
  std::string why;
  EXPECT_FALSE(cir::schedule_gpu_wgmma(kernel, target, &why, 2));
  EXPECT_NE(why.find("clusters of 2 blocks"), std::string::npos) << why;
  EXPECT_THROW(gpu_plan(kernel, target, TuningChoice{{{"cluster", 2}}}), std::invalid_argument);
  EXPECT_THROW(gpu_plan(kernel, hopper(), TuningChoice{{{"cluster", 3}}}), std::invalid_argument);
  // The rules keep one block per cluster; the tuner may choose pairs.
  std::vector<TuningCandidate> space = gpu_tuning_space(kernel, hopper());
  ASSERT_EQ(space.size(), 2u);
  EXPECT_TRUE(space[0].choice.empty());
  EXPECT_EQ(space[1].choice.text(), "cluster=2");
  EXPECT_EQ(gpu_tuning_space(kernel, target).size(), 1u) << "no block clusters: nothing to choose";
  EXPECT_EQ(gpu_plan(kernel, hopper()).cluster, 1);
  EXPECT_EQ(gpu_plan(kernel, hopper(), TuningChoice{{{"cluster", 2}}}).cluster, 2);
  // A single row tile: the pair's second block has no rows, and the product is still whole.
  EXPECT_EQ(gpu_plan(specialised(kProducts[0].source, 128, 4096, 64), hopper(), TuningChoice{{{"cluster", 2}}}).cluster, 2);
}

TEST(ScheduleGpuWgmma, OperandViewsAndTiles) {
  // a[m, k] read along the depth (K-major), b[k, n] along the columns.
  std::optional<cir::Kernel> s = cir::schedule_gpu_wgmma(specialised(kProducts[0].source, 4096, 4096, 4096), hopper());
  ASSERT_TRUE(s);
  std::vector<codegen::TensorMapParam> maps = codegen::tensor_map_params(*s);
  ASSERT_EQ(maps.size(), 2u);
  const cir::ProductOperand& a = maps[0].operand;
  const cir::ProductOperand& b = maps[1].operand;
  EXPECT_TRUE(a.k_major);
  EXPECT_FALSE(b.k_major);
  EXPECT_EQ(a.rank, 2);
  EXPECT_EQ(a.dims[0], 4096);
  EXPECT_EQ(a.strides[0], 4096);
  EXPECT_EQ(maps[0].box[0], 64u);   // the depth step
  EXPECT_EQ(maps[0].box[1], 128u);  // the tile's rows
  EXPECT_EQ(maps[1].box[0], 64u);   // 128 bytes of columns
  EXPECT_EQ(maps[1].box[1], 64u);
  auto outer = s->body[0].as<cir::For>();
  ASSERT_TRUE(outer);
  EXPECT_EQ(outer->loop_kind, cir::LoopKind::GpuBlock);
  EXPECT_EQ(*cir::constant_value(outer->hi), 132) << "one block per multiprocessor";
  // TF32 with b[k, n]: computed transposed, b the first factor (MN-major,
  // boxes of 32 columns by the depth step, read into registers), a the
  // second (K-major); out^T's rows are out's columns.
  std::optional<cir::Kernel> tf32 = cir::schedule_gpu_wgmma(specialised(kProducts[6].source, 1024, 4096, 512), hopper());
  ASSERT_TRUE(tf32);
  maps = codegen::tensor_map_params(*tf32);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].operand.buffer, "b");
  EXPECT_FALSE(maps[0].operand.k_major);
  EXPECT_EQ(maps[0].box[0], 32u);
  EXPECT_EQ(maps[0].box[1], 32u);
  EXPECT_EQ(maps[1].operand.buffer, "a");
  EXPECT_TRUE(maps[1].operand.k_major);
  std::string text = cir::print(*tf32);
  EXPECT_NE(text.find("4096x1024 over 512"), std::string::npos) << text;
  // A batched product: both factors 3-D views, the batch their slowest axis.
  std::optional<cir::Kernel> batched = cir::schedule_gpu_wgmma(specialised(kProducts[3].source, 256, 512, 128), hopper());
  ASSERT_TRUE(batched);
  maps = codegen::tensor_map_params(*batched);
  EXPECT_EQ(maps[0].operand.rank, 3);
  EXPECT_EQ(maps[0].operand.strides[1], 256 * 128);
  EXPECT_EQ(maps[1].operand.rank, 3);
  EXPECT_EQ(maps[1].operand.strides[1], 128 * 512);
  // With a factor shared by every batch element, the batch joins the other
  // factor's rows: one 2-D product of 3 * 256 rows.
  std::optional<cir::Kernel> shared = cir::schedule_gpu_wgmma(specialised(kProducts[4].source, 256, 512, 128), hopper());
  ASSERT_TRUE(shared);
  maps = codegen::tensor_map_params(*shared);
  EXPECT_EQ(maps[0].operand.rank, 2);
  EXPECT_EQ(maps[0].operand.dims[1], 3 * 256);
  EXPECT_EQ(maps[1].operand.rank, 2);
}

TEST(ScheduleGpuWgmma, WhatTheCopyEngineCannotReadFallsBack) {
  std::string why;
  // Rows of 257 bf16 (514 bytes) are not 16-byte runs.
  EXPECT_FALSE(cir::schedule_gpu_wgmma(specialised(kProducts[0].source, 256, 256, 257), hopper(), &why));
  EXPECT_NE(why.find("514 bytes apart"), std::string::npos) << why;
  GpuPlan plan = gpu_plan(specialised(kProducts[0].source, 4095, 4097, 257), hopper());
  ASSERT_TRUE(plan.kernel) << plan.why_not;
  EXPECT_EQ(plan.schedule, GpuSchedule::TensorCoreMatmul);
  // TF32 needs the depth as one factor's fast axis at least.
  EXPECT_FALSE(cir::schedule_gpu_wgmma(specialised(
                                           "def f(a: tensor[k, m, f32], b: tensor[k, n, f32]) {\n return compute(a, b) {\n @kernel matmul\n"
                                           " @precision(tf32)\n for i in 0..m, j in 0..n:\n  var s = 0.0\n  for p in 0..k:\n   s += a[p, i] * b[p, j]\n"
                                           "  out[i, j] = s\n }\n}",
                                           256, 256, 256),
                                       hopper(), &why));
  EXPECT_NE(why.find("TF32 factors neither"), std::string::npos) << why;
  // sm_90 (without the accelerated features): the earlier schedule.
  EXPECT_FALSE(cir::schedule_gpu_wgmma(specialised(kProducts[0].source, 256, 256, 256), testing::nvidia_target("sm_90"), &why));
  GpuPlan sm90 = gpu_plan(specialised(kProducts[0].source, 1024, 1024, 1024), testing::nvidia_target("sm_90"));
  EXPECT_EQ(sm90.schedule, GpuSchedule::TensorCoreMatmul);
}

// Every product of kProducts at 4096 x 4096 and 304 x 264 planned for
// sm_90a under `choice` (each plan checked by `check`), compiled into one
// PTX module; its text, after ptxas has accepted it with no spills and no
// serialisation warning.
template <class Check>
std::string planned_ptx(const TuningChoice& choice, const std::string& tag, Check check) {
  std::vector<cir::Kernel> planned;
  std::vector<const cir::Kernel*> ptrs;
  std::vector<std::string> names;
  for (const Product& p : kProducts) {
    for (auto [m, n] : {std::pair<int64_t, int64_t>{4096, 4096}, {304, 264}}) {
      GpuPlan plan = gpu_plan(specialised(p.source, m, n, 512), hopper(), choice);
      EXPECT_TRUE(plan.kernel) << p.name << ": " << plan.why_not;
      if (!plan.kernel) continue;
      EXPECT_EQ(plan.schedule, GpuSchedule::WarpgroupMatmul) << p.name;
      EXPECT_EQ(plan.block_threads, cir::kWarpgroupProductThreads);
      EXPECT_GT(plan.shared_bytes, 48 << 10);
      EXPECT_LE(plan.shared_bytes, hopper().shared_memory_max);
      check(p, m, n, plan);
      planned.push_back(*plan.kernel);
      names.push_back(tag + "_" + p.name + "_" + std::to_string(m));
    }
  }
  for (const cir::Kernel& k : planned) ptrs.push_back(&k);
  codegen::PtxModule module = codegen::NvptxCompiler::instance().compile(ptrs, names, *codegen::parse_nvptx_arch("sm_90a"));
  testing::expect_ptxas_clean(module.ptx, "sm_90a", tag, planned.size());
  return module.ptx;
}

TEST(ScheduleGpuWgmma, ThePlanAndItsPtxForSm90a) {
  std::string ptx = planned_ptx({}, "wgmma", [](const Product&, int64_t, int64_t, const GpuPlan& plan) { EXPECT_EQ(plan.cluster, 1); });
  for (const char* op : {"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
                         "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                         "wgmma.wait_group.sync.aligned 1", "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                         "cp.async.bulk.tensor.3d", "mbarrier.arrive.expect_tx.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
                         "setmaxnreg.dec.sync.aligned.u32 40", "setmaxnreg.inc.sync.aligned.u32 232", "trap;", ".maxntid 384", ".minnctapersm 1",
                         "cvta.param"})
    EXPECT_NE(ptx.find(op), std::string::npos) << op;
  EXPECT_EQ(ptx.find("multicast"), std::string::npos) << "one block per cluster by the rules";
}

// In pairs of blocks: B's boxes copied into both blocks, stages released
// in both, the blocks meeting after making their barriers.
TEST(ScheduleGpuWgmma, ThePlanAndItsPtxInClustersOfTwo) {
  std::string ptx = planned_ptx(TuningChoice{{{"cluster", 2}}}, "wgmma_pair", [](const Product& p, int64_t, int64_t, const GpuPlan& plan) {
    EXPECT_EQ(plan.cluster, 2);
    EXPECT_EQ(gpu_launch_blocks(plan, 1 << 20) % 2, 0u) << p.name;
    // K-major B tiles come in one box per block of the pair.
    for (const codegen::TensorMapParam& map : codegen::tensor_map_params(*plan.kernel))
      if (map.operand.k_major) EXPECT_LE(map.box[1], 128u) << p.name;
  });
  for (const char* op : {"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
                         "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
                         "barrier.cluster.arrive.release.aligned", "barrier.cluster.wait.acquire.aligned", "mapa.shared::cluster.u32",
                         "mbarrier.arrive.release.cluster.shared::cluster.b64", "%cluster_ctarank", "%cluster_nctarank"})
    EXPECT_NE(ptx.find(op), std::string::npos) << op;
}

}  // namespace
}  // namespace zyntax
