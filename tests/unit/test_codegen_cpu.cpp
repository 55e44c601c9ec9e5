// The CPU backend against the reference executor: every kernel on random
// inputs of many shapes (odd sizes, 1, non-square), compared element by
// element. With the reference's rounding rules the results are identical
// bit for bit, NaN where the reference has NaN — except where the backend
// knowingly differs by rounding: f32 exp and tanh (inline, within 2 ulp),
// erf and the gelus (inline, see InlineErfAndGelu...) and running sums `s += e`, which the vectoriser may split into partial sums.
// Those kernels must agree to a relative 1e-4 (the parity bound of long
// reductions), with an absolute 1e-5 for results that cancel to near zero.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/registry.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "gpu_targets.hpp"
#include "plan/kernel_support.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/specialize.hpp"
#include "driver/session.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "lower/check_program.hpp"
#include "support/diagnostics.hpp"
#include "kernel_source.hpp"
#include "parity_cases.hpp"

namespace zyntax {
namespace {

// Every dimension of `k` at size n.
std::map<std::string, int64_t> all_dims(const cir::Kernel& k, int64_t n) {
  std::map<std::string, int64_t> dims;
  for (const cir::DimParam& d : k.dims) dims[d.name] = n;
  return dims;
}

using testing::Case;
using testing::expect_matches_reference;
using testing::kParityCases;
using testing::kernel_of;

class CpuParity : public ::testing::TestWithParam<Case> {};

TEST_P(CpuParity, MatchesTheReference) {
  const Case& c = GetParam();
  expect_matches_reference(*device_registry().find("cpu"), c, c.approximate);
}

INSTANTIATE_TEST_SUITE_P(Kernels, CpuParity, ::testing::ValuesIn(kParityCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// In the spirit of Halide's simd_op_check: an element-wise kernel is compiled
// to vector instructions of the width the host supports.
TEST(CodegenCpu, ElementwiseUsesVectorInstructionsOfTheDetectedWidth) {
  cir::Kernel k = kernel_of("def f(x: tensor[n, f32], y: tensor[n, f32]) {\n return compute(x, y) {\n @kernel elementwise\n"
                            " for i in 0..n:\n  out[i] = x[i] * y[i] + 1.0\n }\n}");
  std::string asm_text = codegen::CpuJit::instance().emit(cir::specialize(k, all_dims(k, 4096)), "asm");
  const std::string& simd = codegen::CpuJit::instance().target().simd;
  if (simd == "avx512") {
    EXPECT_NE(asm_text.find("vmulps"), std::string::npos);
    EXPECT_NE(asm_text.find("zmm"), std::string::npos);
  } else if (simd == "avx2") {
    EXPECT_NE(asm_text.find("vmulps"), std::string::npos);
    EXPECT_NE(asm_text.find("ymm"), std::string::npos);
  } else if (simd == "sse4.1") {
    EXPECT_NE(asm_text.find("mulps"), std::string::npos);
  } else if (simd == "neon") {
    EXPECT_NE(asm_text.find("fmul\tv"), std::string::npos);
  }
}

// Tile kernels are compiled natively after scalarisation, not left to the reference.
TEST(CodegenCpu, TileKernelsAreScalarisedAndCompiled) {
  for (const Case& c : kParityCases) {
    std::string src = c.source;
    for (size_t at; (at = src.find("DT")) != std::string::npos;) src.replace(at, 2, "f32");
    cir::Kernel k = cir::specialize(kernel_of(src), all_dims(kernel_of(src), 7));
    if (!cpu_unsupported_reason(k)) continue;
    std::string why;
    std::optional<cir::Kernel> s = cir::scalarize_tiles(k, &why);
    ASSERT_TRUE(s.has_value()) << c.name << ": " << why;
    EXPECT_FALSE(cpu_unsupported_reason(*s).has_value()) << c.name << ": " << *cpu_unsupported_reason(*s);
  }
}

}  // namespace
}  // namespace zyntax

namespace zyntax {
namespace {

// Distance in units in the last place between two finite floats.
int64_t ulps(float a, float b) {
  int32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  if ((x < 0) != (y < 0)) return std::llabs(static_cast<int64_t>(x & 0x7fffffff)) + std::llabs(static_cast<int64_t>(y & 0x7fffffff));
  return std::llabs(static_cast<int64_t>(x) - static_cast<int64_t>(y));
}

// f32 erf, gelu (erf form) and gelu_tanh run inline, without libm: erf
// within 1 ulp of the correctly rounded value (subnormal arguments
// included); gelu within 3e-5 relative or 1e-7 absolute of the exact form
// (its 1 + erf nears 0 for negative x); gelu_tanh, as x / (1 + exp(-2u)),
// within 2 ulp where x >= -1, 1e-6 relative down to -3, 2e-7 absolute below. Specials as the
// reference: NaN stays NaN, ±inf give ±1, inf, and NaN at -inf for both gelus.
TEST(CodegenCpu, InlineErfAndGeluAreCloseToTheExactValues) {
  const int64_t n = 240001;
  Tensor x = Tensor::empty(DType::F32, {n + 6});
  for (int64_t i = 0; i < n; ++i) x.set(i, Scalar::of_float(-12.0 + 24.0 * static_cast<double>(i) / (n - 1), DType::F32));
  const double specials[] = {NAN, -INFINITY, INFINITY, 0.0, 1e-40, -3e-39};
  for (int64_t i = 0; i < 6; ++i) x.set(n + i, Scalar::of_float(specials[i], DType::F32));
  auto run = [&](const std::string& fn) {
    CompiledCompute c(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = " + fn +
                                "(x[i])\n }\n}"));
    return c.launch(*device_registry().find("cpu"), {x}, {}, {});
  };
  Tensor erf = run("erf"), gelu = run("gelu"), gelu_tanh = run("gelu_tanh");
  int64_t worst_erf = 0, worst_tanh_form = 0;
  for (int64_t i = 0; i < n + 6; ++i) {
    double v = static_cast<double>(static_cast<float>(x.get(i).f));
    if (!std::isfinite(v)) continue;
    worst_erf = std::max(worst_erf, ulps(static_cast<float>(erf.get(i).f), static_cast<float>(std::erf(v))));
    double g = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    EXPECT_LE(std::fabs(gelu.get(i).f - g), std::max(3e-5 * std::fabs(g), 1e-7)) << "gelu(" << v << ")";
    double gt = 0.5 * v * (1.0 + std::tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
    if (v >= -1) {
      worst_tanh_form = std::max(worst_tanh_form, ulps(static_cast<float>(gelu_tanh.get(i).f), static_cast<float>(gt)));
    } else {  // u's rounding, relative to exp(-2u), grows with |u|
      EXPECT_LE(std::fabs(gelu_tanh.get(i).f - gt), v > -3 ? 1e-6 * std::fabs(gt) + 1e-9 : 2e-7) << "gelu_tanh(" << v << ")";
    }
  }
  EXPECT_LE(worst_erf, 1);
  EXPECT_LE(worst_tanh_form, 2);
  for (const Tensor* t : {&erf, &gelu, &gelu_tanh}) EXPECT_TRUE(std::isnan(t->get(n).f));
  EXPECT_EQ(erf.get(n + 1).f, -1.0);
  EXPECT_EQ(erf.get(n + 2).f, 1.0);
  EXPECT_TRUE(std::isnan(gelu.get(n + 1).f));
  EXPECT_TRUE(std::isnan(gelu_tanh.get(n + 1).f));
  EXPECT_EQ(gelu.get(n + 2).f, INFINITY);
  EXPECT_EQ(gelu_tanh.get(n + 2).f, INFINITY);
  EXPECT_EQ(gelu.get(n + 3).f, 0.0);
  EXPECT_EQ(gelu_tanh.get(n + 3).f, 0.0);
}

// f32 exp and tanh are within 2 ulp of the correctly rounded value over
// their whole range, subnormal results included; specials are exact.
TEST(CodegenCpu, FastExpAndTanhAreWithinTwoUlp) {
  const int64_t n = 200001;
  Tensor x = Tensor::empty(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) x.set(i, Scalar::of_float(-105.0 + 195.0 * static_cast<double>(i) / (n - 1), DType::F32));
  for (const char* fn : {"exp", "tanh"}) {
    // exp over [-105, 90] reaches overflow and the subnormals; tanh over [-26, 22].
    std::string scale = std::string(fn) == "exp" ? "1.0" : "0.25";
    std::string src = std::string("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = ") +
                      fn + "(x[i] * " + scale + ")\n }\n}";
    CompiledCompute c(kernel_of(src));
    Tensor got = c.launch(*device_registry().find("cpu"), {x}, {}, {});
    int64_t worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      float arg = static_cast<float>(x.get(i).f) * (std::string(fn) == "exp" ? 1.0f : 0.25f);  // the kernel's f32 product
      double exact = std::string(fn) == "exp" ? std::exp(static_cast<double>(arg)) : std::tanh(static_cast<double>(arg));
      worst = std::max(worst, ulps(static_cast<float>(got.get(i).f), static_cast<float>(exact)));
    }
    EXPECT_LE(worst, 2) << fn;
  }
  // Specials: NaN stays NaN, exp(-inf) = 0, exp(inf) = inf, tanh(±inf) = ±1.
  Tensor s = Tensor::empty(DType::F32, {4});
  s.set(0, Scalar::of_float(NAN, DType::F32));
  s.set(1, Scalar::of_float(-INFINITY, DType::F32));
  s.set(2, Scalar::of_float(INFINITY, DType::F32));
  s.set(3, Scalar::of_float(0.0, DType::F32));
  CompiledCompute e(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = exp(x[i])\n }\n}"));
  Tensor got = e.launch(*device_registry().find("cpu"), {s}, {}, {});
  EXPECT_TRUE(std::isnan(got.get(0).f));
  EXPECT_EQ(got.get(1).f, 0.0);
  EXPECT_EQ(got.get(2).f, INFINITY);
  EXPECT_EQ(got.get(3).f, 1.0);
  CompiledCompute t(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = tanh(x[i])\n }\n}"));
  got = t.launch(*device_registry().find("cpu"), {s}, {}, {});
  EXPECT_TRUE(std::isnan(got.get(0).f));
  EXPECT_EQ(got.get(1).f, -1.0);
  EXPECT_EQ(got.get(2).f, 1.0);
  EXPECT_EQ(got.get(3).f, 0.0);
}

}  // namespace
}  // namespace zyntax
