// GPU target descriptions: NVIDIA's from an architecture or a device, what
// verify() refuses, and the planner reading every decision from the target
// it is given (features it lacks are not used; its sizes shape the schedules).
#include <gtest/gtest.h>

#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "gpu_targets.hpp"
#include "kernel_source.hpp"
#include "plan_parity.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

TEST(GpuTarget, NvidiaArchitecturesSayWhatTheyOffer) {
  GpuTarget turing = testing::nvidia_target("sm_75"), ampere = testing::nvidia_target("sm_80"), hopper = testing::nvidia_target("sm_90");
  for (const GpuTarget* t : {&turing, &ampere, &hopper}) {
    EXPECT_EQ(t->verify(), "") << t->arch;
    EXPECT_EQ(t->api, GpuApi::Cuda);
    EXPECT_EQ(t->subgroup_size, 32);
    EXPECT_EQ(t->shared_memory_static, 48 << 10);
  }
  EXPECT_FALSE(turing.async_copy);
  EXPECT_FALSE(turing.matrix_units.any());
  EXPECT_EQ(turing.shared_memory_max, 64 << 10);
  EXPECT_TRUE(ampere.async_copy);
  EXPECT_TRUE(ampere.matrix_units.bf16 && ampere.matrix_units.f16 && ampere.matrix_units.tf32);
  EXPECT_EQ(ampere.shared_memory_max, 163 << 10);
  EXPECT_EQ(ampere.multiprocessors, 108);
  EXPECT_EQ(hopper.shared_memory_max, 227 << 10);
  EXPECT_EQ(hopper.multiprocessors, 132);
  EXPECT_NE(hopper.describe().find("sm_90, 132 multiprocessors"), std::string::npos) << hopper.describe();
  // Tensor copies and warpgroup matrix units: sm_90a's alone, not sm_90's.
  for (const GpuTarget* t : {&turing, &ampere, &hopper}) EXPECT_FALSE(t->tensor_copies || t->warpgroup_mma) << t->arch;
  EXPECT_EQ(hopper.describe().find("tensor copies"), std::string::npos) << hopper.describe();
  GpuTarget accelerated = testing::nvidia_target("sm_90a");
  EXPECT_EQ(accelerated.verify(), "");
  EXPECT_EQ(accelerated.arch, "sm_90a");
  EXPECT_TRUE(accelerated.tensor_copies && accelerated.warpgroup_mma && accelerated.async_copy);
  EXPECT_TRUE(accelerated.matrix_units.bf16 && accelerated.matrix_units.f16 && accelerated.matrix_units.tf32);
  EXPECT_NE(accelerated.describe().find(", tensor copies, warpgroup matrix units"), std::string::npos) << accelerated.describe();
  // A device's own limits win over the architecture's guesses.
  GpuTarget device = codegen::nvptx_gpu_target(*codegen::parse_nvptx_arch("sm_80"), {46, 100 << 10, 1024, 32});
  EXPECT_EQ(device.multiprocessors, 46);
  EXPECT_EQ(device.shared_memory_max, 100 << 10);
  EXPECT_TRUE(device.matrix_units.any());
}

TEST(GpuTarget, VerifyRefusesInconsistentDescriptions) {
  GpuTarget wgmma = testing::nvidia_target("sm_90a");
  wgmma.matrix_units = {};
  EXPECT_NE(wgmma.verify().find("warpgroup_mma needs matrix units"), std::string::npos) << wgmma.verify();
  GpuTarget t = testing::nvidia_target("sm_80");
  t.subgroup_size = 48;
  EXPECT_NE(t.verify().find("power of two"), std::string::npos);
  t = testing::nvidia_target("sm_80");
  t.subgroup_size = 64;
  EXPECT_NE(t.verify().find("matrix units"), std::string::npos);
  t = testing::nvidia_target("sm_80");
  t.shared_memory_max = 1024;
  EXPECT_NE(t.verify().find("shared_memory_max"), std::string::npos);
  t = testing::nvidia_target("sm_80");
  t.index_bits = 64;
  t.i64 = false;
  EXPECT_NE(t.verify().find("i64"), std::string::npos);
  t = testing::nvidia_target("sm_80");
  t.max_threads_per_block = 100;
  EXPECT_NE(t.verify().find("multiple of subgroup_size"), std::string::npos);
}

const char* kMatmul =
    "def f(A: tensor[M, K, DT], B: tensor[K, N, DT]) {\n return compute(A, B) {\n @kernel matmul\n for i in 0..M, j in 0..N:\n"
    "  var sum: f32 = 0.0\n  for k in 0..K:\n   sum += f32(A[i, k]) * f32(B[k, j])\n  out[i, j] = sum\n }\n}";

cir::Kernel product(const char* dtype, int64_t m, int64_t n, int64_t k) {
  std::string src = kMatmul;
  for (size_t at; (at = src.find("DT")) != std::string::npos;) src.replace(at, 2, dtype);
  return cir::specialize(kernel_of(src), {{"M", m}, {"N", n}, {"K", k}});
}

TEST(GpuTarget, ThePlanUsesOnlyWhatTheTargetHas) {
  GpuTarget t = testing::test_gpu_target();
  cir::Kernel bf16 = product("bf16", 512, 512, 256);
  EXPECT_EQ(gpu_plan(bf16, t).schedule, GpuSchedule::TensorCoreMatmul);
  t.matrix_units.bf16 = false;
  EXPECT_EQ(gpu_plan(bf16, t).schedule, GpuSchedule::TiledMatmul);
  // Without asynchronous copies, no schedule copies asynchronously.
  GpuTarget sync = testing::test_gpu_target();
  sync.async_copy = false;
  for (const cir::Kernel& k : {bf16, product("f32", 512, 512, 256)}) {
    GpuPlan p = gpu_plan(k, sync);
    ASSERT_TRUE(p.kernel) << p.why_not;
    EXPECT_EQ(cir::print(*p.kernel).find("async_copy"), std::string::npos);
  }
  // Without subgroup shuffles a row is still folded by a block (the
  // emitters fold in shared memory instead).
  const char* softmax =
      "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n  for j in 0..c:\n"
      "   m = max(m, x[i, j])\n  var s = 0.0\n  for j in 0..c:\n   s += exp(x[i, j] - m)\n  for j in 0..c:\n   out[i, j] = exp(x[i, j] - m) / s\n }\n}";
  cir::Kernel rows = cir::specialize(kernel_of(softmax), {{"r", 64}, {"c", 1000}});
  EXPECT_EQ(gpu_plan(rows, testing::test_gpu_target()).schedule, GpuSchedule::Rows);
  GpuTarget no_shuffles = testing::test_gpu_target();
  no_shuffles.subgroup_shuffles = false;
  EXPECT_EQ(gpu_plan(rows, no_shuffles).schedule, GpuSchedule::Rows);
  // A block's threads never exceed the target's.
  GpuTarget small = testing::test_gpu_target();
  small.max_threads_per_block = 128;
  GpuPlan p = gpu_plan(rows, small);
  EXPECT_EQ(p.schedule, GpuSchedule::Rows);
  EXPECT_LE(p.block_threads, 128);
  // Nor a product's (the tiled product's blocks are larger: another schedule).
  GpuPlan mm = gpu_plan(product("f32", 512, 512, 256), small);
  ASSERT_TRUE(mm.kernel) << mm.why_not;
  EXPECT_NE(mm.schedule, GpuSchedule::TiledMatmul);
  EXPECT_LE(mm.block_threads, 128);
}

TEST(GpuTarget, TheTargetsMultiprocessorsDecideTheTileSize) {
  cir::Kernel k = product("f32", 300, 300, 64);  // 9 tiles of 128x128, 25 of 64x64
  EXPECT_EQ(gpu_launch_blocks(gpu_plan(k, testing::test_gpu_target(132)), 1 << 20), 25u);
  EXPECT_EQ(gpu_launch_blocks(gpu_plan(k, testing::test_gpu_target(8)), 1 << 20), 9u);
}

// A GPU unlike NVIDIA's (subgroups of 64 lanes, no matrix units, no
// asynchronous copies, 64 KiB of shared memory per block, 104 compute
// units): every parity case still plans, and each plan computes the
// kernel's result without a race on the reference executor.
GpuTarget wide_subgroup_target() {
  GpuTarget t;
  t.api = GpuApi::Rocm;
  t.arch = "wave64";
  t.subgroup_size = 64;
  t.max_threads_per_block = 1024;
  t.multiprocessors = 104;
  t.shared_memory_static = t.shared_memory_max = 64 << 10;
  t.async_copy = false;
  t.matrix_units = {};
  return t;
}

class WideSubgroupPlans : public ::testing::TestWithParam<testing::Case> {};

TEST_P(WideSubgroupPlans, MatchTheKernelOnTheReference) {
  ASSERT_EQ(wide_subgroup_target().verify(), "");
  testing::expect_plans_match(GetParam(), wide_subgroup_target());
}

INSTANTIATE_TEST_SUITE_P(Kernels, WideSubgroupPlans, ::testing::ValuesIn(testing::kParityCases),
                         [](const ::testing::TestParamInfo<testing::Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace zyntax
