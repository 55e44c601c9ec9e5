// The vulkan backend on vulkan:0 (Mesa's lavapipe in CI; skipped where
// there is no Vulkan device): every parity case against the reference
// executor, each variant run on the device itself (not through the
// fallback) but for the kernels the GLSL backend does not write, loops
// past lavapipe's budget and grids past one row of workgroups, and a
// failed check reported with the source's words. The tests run with the
// validation layer on (ZYNTAX_VULKAN_VALIDATION=1, in ctest), where any
// message of it fails the run that caused it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/registry.hpp"
#include "backends/vulkan/vulkan_device.hpp"
#include "activation_accuracy.hpp"
#include "parity_cases.hpp"
#include "plan_parity.hpp"

namespace zyntax {
namespace {

using testing::Case;

Device* vulkan_device() { return device_registry().find("vulkan:0"); }

class VulkanParity : public ::testing::TestWithParam<Case> {};

TEST_P(VulkanParity, MatchesTheReference) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  const Case& c = GetParam();
  testing::expect_matches_reference(*d, c, c.approximate || is_float(c.dtype));
}

// Parity cases that run on the host instead (the GLSL backend does not
// write them: test_glsl_emitter.cpp says why): none at present.
const std::set<std::string> kOnTheHost = {};

TEST_P(VulkanParity, RunsOnTheDevice) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  const Case& c = GetParam();
  cir::Kernel generic = testing::kernel_of(testing::parity_source(c));
  CompiledCompute compiled(generic);
  Random rng(42);
  for (int variant = 0; variant < 6; ++variant) {
    std::vector<Tensor> inputs = testing::parity_inputs(c, variant, rng);
    std::optional<std::map<std::string, int64_t>> dims = testing::variant_dims(generic, inputs);
    if (!dims) continue;
    std::string why;
    std::string glsl = vulkan_glsl_of(*d, compiled.specialize(*dims)->kernel, &why);
    // Kernels that compute in doubles (f64 data, f32 sums kept in f64) run
    // on the host where the device has none (vulkan_minimal_device).
    if (glsl.empty() && !d->gpu_target()->f64 && why.find("would need f64") != std::string::npos) continue;
    EXPECT_EQ(glsl.empty(), kOnTheHost.count(c.name) > 0) << c.name << " variant " << variant << ": " << why;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, VulkanParity, ::testing::ValuesIn(testing::kParityCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// gelu, gelu_tanh, sigmoid and silu of f32 values within 1 ulp of the
// reference, tails, subnormals and infinities included (computed in
// doubles, which lavapipe has).
TEST(Vulkan, ActivationsAreWithinOneUlpOfTheReference) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  testing::expect_activations_match_reference(*d, 1);
}

cir::Kernel specialised(const char* source, std::map<std::string, int64_t> dims) {
  return CompiledCompute(testing::kernel_of(source)).specialize(dims)->kernel;
}

// A recurrence of 200,001 steps in each invocation: more loop iterations
// than lavapipe lets one invocation run, so it is not written for it and
// runs on the host, with the right result.
TEST(Vulkan, LoopsPastTheDevicesBudgetRunOnTheHost) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  const char* src =
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..n:\n  var s = 0\n  for j in 0..200001:\n"
      "   s = (s * 7 + j) % 1000003\n  out[i] = s + x[i]\n }\n}";
  cir::Kernel k = specialised(src, {{"n", 3}});
  std::string why;
  if (d->gpu_target()->loop_budget > 0) {
    EXPECT_TRUE(vulkan_glsl_of(*d, k, &why).empty());
    EXPECT_NE(why.find("loop iterations per invocation"), std::string::npos) << why;
  }
  CompiledCompute compiled(testing::kernel_of(src));
  Tensor got = compiled.launch(*d, {Tensor::full(DType::F32, {3}, Scalar::of_float(1.0, DType::F32))}, {}, {});
  EXPECT_EQ(got.get(2).f, 548878.0);
}

// A long sum of transcendental functions runs on the host where the driver
// would take minutes to compile it (its compile time grows faster than the
// shader), with the reference's result; a short one on the device.
TEST(Vulkan, ShadersPastTheDriversHelperCallsRunOnTheHost) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  auto sum_of = [](int terms) {
    std::string e;
    for (int k = 1; k <= terms; ++k) e += (k > 1 ? " + " : "") + std::string("tanh(exp(x[i] * 0.") + std::to_string(k) + "))";
    return "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = " + e + "\n }\n}";
  };
  Tensor x = Tensor::full(DType::F32, {5}, Scalar::of_float(0.25, DType::F32));
  for (int terms : {4, 60}) {
    std::string src = sum_of(terms), why;
    bool on_host = vulkan_glsl_of(*d, specialised(src.c_str(), {{"n", 5}}), &why).empty();
    int limit = d->gpu_target()->max_shader_helper_calls;
    EXPECT_EQ(on_host, limit > 0 && 2 * terms > limit) << terms << " terms: " << why;
    if (on_host) EXPECT_NE(why.find("would take minutes to compile"), std::string::npos) << why;
    CompiledCompute compiled(testing::kernel_of(src));
    Tensor got = compiled.launch(*d, {x}, {}, {});
    Tensor want = compiled.launch(*device_registry().find("cpu:reference"), {x}, {}, {});
    EXPECT_NEAR(got.get(4).f, want.get(4).f, 1e-5 * std::fabs(want.get(4).f)) << terms << " terms";
  }
}

// 70,000 workgroups of 256 invocations: more than one row of the grid
// (65,535 workgroups), every element computed once.
TEST(Vulkan, GridsOfMoreThanOneRowOfWorkgroups) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  const char* src =
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 2.0 + 1.0\n }\n}";
  int64_t n = int64_t{70000} * 256 * 4 + 3;  // 4 elements per invocation, and a ragged end
  CompiledCompute compiled(testing::kernel_of(src));
  Tensor x = Tensor::zeros(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) x.data_as<float>()[i] = static_cast<float>(i % 1000);
  Tensor got = compiled.launch(*d, {x}, {}, {});
  ASSERT_EQ(got.numel(), n);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += got.data_as<float>()[i] != static_cast<float>(i % 1000) * 2.0f + 1.0f;
  EXPECT_EQ(wrong, 0);
  EXPECT_FALSE(vulkan_glsl_of(*d, compiled.specialize({{"n", n}})->kernel, nullptr).empty());
}

// A failed check (an index past the input) is the reference executor's
// error, with the source's words, as on every device.
TEST(Vulkan, AFailedCheckIsTheReferencesError) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  const char* src = "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i + 1]\n }\n}";
  CompiledCompute compiled(testing::kernel_of(src));
  std::string error;
  try {
    compiled.launch(*d, {Tensor::zeros(DType::F32, {5})}, {}, {});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("out of bounds"), std::string::npos) << error;
}

// ZYNTAX_VULKAN_STAGING=1 (ctest's vulkan_staging runs this file so) keeps
// the kernels' buffers in device-local memory filled and emptied through
// staging buffers, as on a discrete GPU; every test above then runs that way.
TEST(Vulkan, StagesThroughHostVisibleBuffersWhereAsked) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  const char* asked = std::getenv("ZYNTAX_VULKAN_STAGING");
  bool stages = d->info().backend.find("through staging") != std::string::npos;
  if (asked && std::string(asked) == "1") {
    EXPECT_TRUE(stages) << d->info().backend;
  }
}

// The queue's timestamps time each dispatch (what the benchmarks read):
// a kernel that ran leaves a positive time behind.
TEST(Vulkan, TimesEachDispatch) {
  Device* d = vulkan_device();
  if (!d) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  CompiledCompute compiled(testing::kernel_of(
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 2.0\n }\n}"));
  Tensor got = compiled.launch(*d, {Tensor::full(DType::F32, {4096}, Scalar::of_float(1.5, DType::F32))}, {}, {});
  EXPECT_EQ(got.get(4095).f, 3.0);
  double ms = d->last_kernel_milliseconds();
  if (ms < 0) GTEST_SKIP() << "the compute queue of vulkan:0 keeps no timestamps";
  EXPECT_GT(ms, 0.0);
  EXPECT_LT(ms, 60000.0);
}

}  // namespace
}  // namespace zyntax
