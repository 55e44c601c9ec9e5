// On an NVIDIA Hopper GPU (skipped elsewhere): matrix products in bf16, f16
// and TF32 (with b as [n, k] and as [k, n]) on cuda:0 against the same
// products on the compiled CPU device (itself checked against the reference
// executor by the parity suites), at 4096, at odd sizes (1000^3,
// 4095 x 4097 x 257, a depth of 8), batched and with an epilogue; where the
// copy engine can read the factors the plan must be the warpgroup product
// (the products on wgmma and TMA), elsewhere the earlier tensor-core schedule. Inputs are fresh random numbers; each
// product runs twice, the second time into memory the pool recycled (the
// plan writes its output whole, so nothing zeroes it): an element never
// written shows as stale data. Each warpgroup product also runs by both
// of the tuner's choices: one block per cluster, and pairs of blocks that
// share B's tiles (clusters of 2). Flash attention marked @precision(bf16) in
// bf16 and f16, causal and not, head dims 64 and 128, at seq 4096 and at
// odd lengths: the warpgroup attention kernel against the CPU's tile program.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "../../bench/bench_kernels.hpp"
#include "backends/registry.hpp"
#include "cir/hash.hpp"
#include "cir/passes/specialize.hpp"
#include "kernel_source.hpp"
#include "plan/gpu_plan.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

struct HopperCase {
  const char* name;
  DType factors;  // f32: TF32
  const char* source;
  int64_t m, n, k, h;
  bool warpgroup;  // the plan must be the warpgroup product
  double tolerance;  // on |got - want| / |want| (norms)
};

const char* kPlain = R"(def f(a: tensor[m, k, T], b: tensor[k, n, T]) {
 return compute(a, b) {
  @kernel matmul
  for i in 0..m, j in 0..n:
   var s: f32 = 0.0
   for p in 0..k:
    s += f32(a[i, p]) * f32(b[p, j])
   out[i, j] = s
 }
})";
const char* kBiasRelu = R"(def f(a: tensor[m, k, T], b: tensor[n, k, T], c: tensor[n, f32]) {
 return compute(a, b, c) {
  @kernel matmul
  for i in 0..m, j in 0..n:
   var s = c[j]
   for p in 0..k:
    s += f32(a[i, p]) * f32(b[j, p])
   out[i, j] = max(s * 0.5, 0.0)
 }
})";
const char* kBatched = R"(def f(a: tensor[h, m, k, T], b: tensor[h, k, n, T]) {
 return compute(a, b) {
  @kernel matmul
  for g in 0..h, i in 0..m, j in 0..n:
   var s: f32 = 0.0
   for p in 0..k:
    s += f32(a[g, i, p]) * f32(b[g, p, j])
   out[g, i, j] = s
 }
})";
const char* kTf32 = R"(def f(a: tensor[m, k, f32], b: tensor[n, k, f32]) {
 return compute(a, b) {
  @kernel matmul
  @precision(tf32)
  for i in 0..m, j in 0..n:
   var s = 0.0
   for p in 0..k:
    s += a[i, p] * b[j, p]
   out[i, j] = s
 }
})";
const char* kTf32RowMajorB = R"(def f(a: tensor[m, k, f32], b: tensor[k, n, f32]) {
 return compute(a, b) {
  @kernel matmul
  @precision(tf32)
  for i in 0..m, j in 0..n:
   var s = 0.0
   for p in 0..k:
    s += a[i, p] * b[p, j]
   out[i, j] = s
 }
})";

// kPlain with a bf16 result, rounded once at the store.
const std::string kBf16OutSource = [] {
  std::string text = kPlain;
  text.replace(text.find("out[i, j] = s"), 13, "out[i, j] = bf16(s)");
  return text;
}();
const char* kBf16Out = kBf16OutSource.c_str();
const char* kTf32Batched = R"(def f(a: tensor[h, m, k, f32], b: tensor[h, k, n, f32]) {
 return compute(a, b) {
  @kernel matmul
  @precision(tf32)
  for g in 0..h, i in 0..m, j in 0..n:
   var s = 0.0
   for p in 0..k:
    s += a[g, i, p] * b[g, p, j]
   out[g, i, j] = s
 }
})";

std::string with_type(const char* source, DType t) {
  std::string s = source;
  for (size_t at; (at = s.find(", T]")) != std::string::npos;) s.replace(at, 4, std::string(", ") + dtype_name(t) + "]");
  return s;
}

std::vector<HopperCase> cases() {
  std::vector<HopperCase> c;
  for (DType t : {DType::BF16, DType::F16}) {
    c.push_back({"plain_4096", t, kPlain, 4096, 4096, 4096, 1, true, 1e-4});
    c.push_back({"plain_1000", t, kPlain, 1000, 1000, 1000, 1, true, 1e-4});
    c.push_back({"plain_4095x4097x257", t, kPlain, 4095, 4097, 257, 1, false, 1e-4});
    c.push_back({"plain_k8", t, kPlain, 1000, 2048, 8, 1, true, 1e-4});
    c.push_back({"bias_relu_transposed_b", t, kBiasRelu, 1536, 1000, 512, 1, true, 1e-4});
    c.push_back({"batched", t, kBatched, 520, 384, 264, 6, true, 1e-4});
  }
  // A bf16 result: within bf16's rounding of the f32 sums.
  c.push_back({"bf16_out_1000", DType::BF16, kBf16Out, 1000, 1000, 1000, 1, true, 5e-3});
  c.push_back({"bf16_out_2048x1536x520", DType::BF16, kBf16Out, 2048, 1536, 520, 1, true, 5e-3});
  c.push_back({"tf32_4096", DType::F32, kTf32, 4096, 4096, 4096, 1, true, 5e-3});
  c.push_back({"tf32_1000", DType::F32, kTf32, 1000, 1000, 1000, 1, true, 5e-3});
  c.push_back({"tf32_k8", DType::F32, kTf32, 1000, 2048, 8, 1, true, 5e-3});
  // b[k, n]: computed transposed, b's tiles through registers.
  c.push_back({"tf32_row_major_b_4096", DType::F32, kTf32RowMajorB, 4096, 4096, 4096, 1, true, 5e-3});
  c.push_back({"tf32_row_major_b_1000", DType::F32, kTf32RowMajorB, 1000, 1000, 1000, 1, true, 5e-3});
  c.push_back({"tf32_row_major_b_k8", DType::F32, kTf32RowMajorB, 1000, 2048, 8, 1, true, 5e-3});
  c.push_back({"tf32_row_major_b_odd", DType::F32, kTf32RowMajorB, 4095, 4097, 257, 1, false, 5e-3});
  c.push_back({"tf32_batched", DType::F32, kTf32Batched, 520, 384, 264, 6, true, 5e-3});
  return c;
}

// |got - want| / |want| over all elements (L2 norms), and how many
// elements of `got` are not finite.
double relative_error(const Tensor& got, const Tensor& want, int64_t* not_finite) {
  double diff = 0, norm = 0;
  *not_finite = 0;
  for (int64_t e = 0; e < want.numel(); ++e) {
    double g = got.get(e).f, w = want.get(e).f;
    if (!std::isfinite(g)) ++*not_finite;
    diff += (g - w) * (g - w);
    norm += w * w;
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

TEST(CudaHopper, ProductsMatchTheCpuAndTakeTheWarpgroupSchedule) {
  Device* gpu = device_registry().find("cuda:0");
  if (!gpu) GTEST_SKIP() << device_registry().unavailable_reason("cuda:0");
  if (!gpu->gpu_target() || !gpu->gpu_target()->warpgroup_mma) GTEST_SKIP() << "not a Hopper GPU: " << gpu->gpu_target()->describe();
  Device* cpu = device_registry().find("cpu");
  ASSERT_NE(cpu, nullptr);
  Random rng(2026);
  for (const HopperCase& c : cases()) {
    std::string source = with_type(c.source, c.factors);
    cir::Kernel generic = testing::kernel_of(source);
    ASSERT_FALSE(generic.name.empty()) << source;
    std::map<std::string, int64_t> all = {{"m", c.m}, {"n", c.n}, {"k", c.k}, {"h", c.h}}, dims;
    for (const cir::DimParam& d : generic.dims) dims[d.name] = all.at(d.name);
    GpuPlan plan = gpu_plan(cir::specialize(generic, dims), *gpu->gpu_target());
    ASSERT_TRUE(plan.kernel) << c.name << ": " << plan.why_not;
    EXPECT_EQ(plan.schedule == GpuSchedule::WarpgroupMatmul, c.warpgroup)
        << c.name << " " << dtype_name(c.factors) << ": " << gpu_schedule_name(plan.schedule);
    std::vector<Tensor> in;
    for (const cir::Param& p : generic.params) {
      if (p.role != cir::ParamRole::Input) continue;
      Shape shape;
      for (const cir::Expr& e : p.type.shape) shape.push_back(dims.at(e.as<cir::Var>()->name));
      in.push_back(rand_normal(rng, p.type.dtype, shape));
    }
    CompiledCompute compiled(generic);
    Tensor want = compiled.launch(*cpu, in, {}, {}).astype(DType::F64);
    // Twice on the GPU: a second run over the pool's recycled (poisoned by the first) memory.
    for (int run = 0; run < 2; ++run) {
      Tensor got = compiled.launch(*gpu, in, {}, {}).astype(DType::F64);
      ASSERT_EQ(got.shape(), want.shape());
      int64_t bad = 0;
      double rel = relative_error(got, want, &bad);
      EXPECT_EQ(bad, 0) << c.name << " " << dtype_name(c.factors) << ": elements not finite";
      EXPECT_LT(rel, c.tolerance) << c.name << " " << dtype_name(c.factors) << " run " << run;
      std::printf("[ hopper   ] %-28s %-5s %s  relative error %.3g\n", c.name, dtype_name(c.factors), gpu_schedule_name(plan.schedule), rel);
    }
    // The same product by the tuner's choices: one block per cluster and
    // pairs of blocks (whichever the rules took, the other too), twice each.
    if (plan.schedule != GpuSchedule::WarpgroupMatmul || !gpu->gpu_target()->block_clusters) continue;
    cir::Kernel specialised = cir::specialize(generic, dims);
    for (int cluster : {1, 2}) {
      TuningChoice choice{{{"cluster", cluster}}};
      ASSERT_EQ(gpu_plan(specialised, *gpu->gpu_target(), choice).cluster, cluster) << c.name;
      for (int run = 0; run < 2; ++run) {
        Device::Attempt a = gpu->execute_choice(specialised, cir::hash_kernel(specialised), choice, in, {});
        ASSERT_EQ(a.outcome, Device::Outcome::Done) << c.name << " in clusters of " << cluster;
        Tensor got = a.result.astype(DType::F64);
        ASSERT_EQ(got.shape(), want.shape());
        int64_t bad = 0;
        double rel = relative_error(got, want, &bad);
        EXPECT_EQ(bad, 0) << c.name << " " << dtype_name(c.factors) << " in clusters of " << cluster << ": elements not finite";
        EXPECT_LT(rel, c.tolerance) << c.name << " " << dtype_name(c.factors) << " in clusters of " << cluster << ", run " << run;
        std::printf("[ hopper   ] %-28s %-5s %s, clusters of %d  relative error %.3g\n", c.name, dtype_name(c.factors),
                    gpu_schedule_name(plan.schedule), cluster, rel);
      }
    }
  }
}

TEST(CudaHopper, FlashAttentionMatchesTheCpuOnTheWarpgroupSchedule) {
  Device* gpu = device_registry().find("cuda:0");
  if (!gpu) GTEST_SKIP() << device_registry().unavailable_reason("cuda:0");
  if (!gpu->gpu_target() || !gpu->gpu_target()->warpgroup_mma) GTEST_SKIP() << "not a Hopper GPU: " << gpu->gpu_target()->describe();
  Device* cpu = device_registry().find("cpu");
  ASSERT_NE(cpu, nullptr);
  struct Case {
    const char* type;
    bool causal;
    int64_t bh, s, d;
  };
  const Case cases[] = {{"bf16", false, 4, 4096, 64}, {"bf16", true, 4, 4096, 64}, {"bf16", true, 2, 4096, 128},
                        {"f16", false, 3, 1000, 128}, {"bf16", true, 5, 257, 64},  {"f16", true, 2, 1, 64},
                        {"bf16", false, 2, 4095, 128}};
  Random rng(2027);
  for (const Case& c : cases) {
    std::string what = std::string(c.type) + (c.causal ? " causal " : " ") + std::to_string(c.bh) + "x" + std::to_string(c.s) + "x" +
                       std::to_string(c.d);
    cir::Kernel generic = testing::kernel_of(bench::flash_attention_typed_source(c.type, 64, c.causal, "bf16"));
    ASSERT_FALSE(generic.name.empty());
    std::map<std::string, int64_t> dims = {{"bh", c.bh}, {"s", c.s}, {"d", c.d}};
    GpuPlan plan = gpu_plan(cir::specialize(generic, dims), *gpu->gpu_target());
    ASSERT_TRUE(plan.kernel) << what << ": " << plan.why_not;
    EXPECT_EQ(plan.schedule, GpuSchedule::WarpgroupAttention) << what << ": " << gpu_schedule_name(plan.schedule);
    DType t = std::string(c.type) == "f16" ? DType::F16 : DType::BF16;
    std::vector<Tensor> in;
    for (int i = 0; i < 3; ++i) in.push_back(rand_normal(rng, t, {c.bh, c.s, c.d}));
    CompiledCompute compiled(generic);
    Tensor want = compiled.launch(*cpu, in, {}, {}).astype(DType::F64);
    for (int run = 0; run < 2; ++run) {
      Tensor got = compiled.launch(*gpu, in, {}, {}).astype(DType::F64);
      ASSERT_EQ(got.shape(), want.shape());
      int64_t bad = 0;
      double rel = relative_error(got, want, &bad);
      EXPECT_EQ(bad, 0) << what << ": elements not finite";
      EXPECT_LT(rel, t == DType::BF16 ? 1e-2 : 3e-3) << what << " run " << run;
      std::printf("[ hopper   ] attention %-26s %s  relative error %.3g\n", what.c_str(), gpu_schedule_name(plan.schedule), rel);
    }
  }
}

}  // namespace
}  // namespace zyntax
