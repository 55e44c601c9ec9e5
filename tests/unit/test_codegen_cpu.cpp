// The CPU backend against the reference executor: every kernel on random
// inputs of many shapes (odd sizes, 1, non-square), compared element by
// element. With the reference's rounding rules the results are identical
// bit for bit, NaN where the reference has NaN — except where the backend
// knowingly differs by rounding: f32 exp and tanh (inline, within 2 ulp),
// erf and the activations (inline, within 1 ulp: see below) and running sums `s += e`, which the vectoriser may split into partial sums.
// Those kernels must agree to a relative 1e-4 (the parity bound of long
// reductions), with an absolute 1e-5 for results that cancel to near zero.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/registry.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "gpu_targets.hpp"
#include "plan/kernel_support.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/hash.hpp"
#include "cir/passes/specialize.hpp"
#include "driver/session.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "lower/check_program.hpp"
#include "support/diagnostics.hpp"
#include "kernel_source.hpp"
#include "parity_cases.hpp"
#include "activation_accuracy.hpp"

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

// The buffers a kernel reads and writes are distinct (the entry's body
// takes them as noalias arguments): a gather's row index is read once per
// row, so the copy of the row is vector loads and stores, not one element
// at a time with its index read again after each store.
TEST(CodegenCpu, AGatherCopiesItsRowsInVectors) {
  const std::string& simd = codegen::CpuJit::instance().target().simd;
  if (simd == "scalar") GTEST_SKIP() << "no vector unit";
  cir::Kernel k = kernel_of("def g(t: tensor[v, d, f32], ids: tensor[n, i32]) {\n return compute(t, ids) {\n @kernel elementwise\n"
                            " for i in 0..n, k in 0..d:\n  out[i, k] = t[ids[i], k]\n }\n}");
  std::map<std::string, int64_t> dims;
  for (const cir::DimParam& d : k.dims) dims[d.name] = d.name == "t.d0" ? 1000 : d.name == "t.d1" ? 768 : 64;
  std::string ir = codegen::CpuJit::instance().emit(cir::specialize(k, dims), "llvm");
  std::string lanes = simd == "avx512" ? "16" : simd == "avx2" ? "8" : "4";
  EXPECT_NE(ir.find("load <" + lanes + " x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store <" + lanes + " x float>"), std::string::npos) << ir;
}

// With ZYNTAX_PERF_MAP naming a directory, each kernel the JIT loads is
// named in perf's map for this process at the address it runs from, and
// its object is kept there.
TEST(CodegenCpu, ThePerfMapNamesEachKernelAtItsAddress) {
  std::string dir = ::testing::TempDir() + "zyntax_perf_map_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ::setenv("ZYNTAX_PERF_MAP", dir.c_str(), 1);
  // A kernel no other test compiles, so that this process loads it here.
  cir::Kernel k = kernel_of("def perf_map_probe(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n"
                            " for i in 0..n:\n  out[i] = x[i] * 3.25 - 0.5\n }\n}");
  cir::Kernel s = cir::specialize(k, {{"n", 4099}});
  const void* fn = reinterpret_cast<const void*>(codegen::CpuJit::instance().compile(s, cir::hash_kernel(s)).fn);
  ::unsetenv("ZYNTAX_PERF_MAP");
  ASSERT_NE(fn, nullptr);
  std::ifstream map("/tmp/perf-" + std::to_string(::getpid()) + ".map");
  ASSERT_TRUE(map) << "no perf map written";
  std::string line, name;
  unsigned long long start = 0, size = 0;
  bool found = false;
  while (std::getline(map, line)) {
    std::istringstream in(line);
    in >> std::hex >> start >> size >> name;
    if (start == reinterpret_cast<uintptr_t>(fn)) {
      found = true;
      break;
    }
  }
  ASSERT_TRUE(found) << "the kernel's address is not in the map";
  EXPECT_GT(size, 16u);
  EXPECT_EQ(name.rfind("zyntax_kernel_", 0), 0u) << name;
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + name + ".o")) << name;
  std::filesystem::remove_all(dir);
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

using testing::f32_ulps;

// f32 erf runs inline, without libm, within 1 ulp of the correctly rounded
// value (subnormal arguments included); NaN stays NaN, erf(±inf) = ±1.
TEST(CodegenCpu, InlineErfIsWithinOneUlp) {
  const int64_t n = 240001;
  Tensor x = Tensor::empty(DType::F32, {n + 3});
  for (int64_t i = 0; i < n; ++i) x.set(i, Scalar::of_float(-12.0 + 24.0 * static_cast<double>(i) / (n - 1), DType::F32));
  const double specials[] = {NAN, -INFINITY, INFINITY};
  for (int64_t i = 0; i < 3; ++i) x.set(n + i, Scalar::of_float(specials[i], DType::F32));
  CompiledCompute c(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = erf(x[i])\n }\n}"));
  Tensor erf = c.launch(*device_registry().find("cpu"), {x}, {}, {});
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = static_cast<double>(static_cast<float>(x.get(i).f));
    worst = std::max(worst, f32_ulps(static_cast<float>(erf.get(i).f), static_cast<float>(std::erf(v))));
  }
  EXPECT_LE(worst, 1);
  EXPECT_TRUE(std::isnan(erf.get(n).f));
  EXPECT_EQ(erf.get(n + 1).f, -1.0);
  EXPECT_EQ(erf.get(n + 2).f, 1.0);
}

// A body past the optimising code generator's bound (a sum of 400
// transcendental terms: one block of some 20,000 instructions) is compiled
// without its optimisations, in about linear time, and still computes the
// reference's sum.
TEST(CodegenCpu, HugeBodiesCompileQuicklyAndRight) {
  std::string terms;
  for (int k = 1; k <= 400; ++k) terms += (k > 1 ? " + " : "") + std::string("tanh(exp(x[i] * 0.00") + std::to_string(100 + k) + "))";
  CompiledCompute c(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = " + terms + "\n }\n}"));
  Tensor x = Tensor::empty(DType::F32, {37});
  for (int64_t i = 0; i < 37; ++i) x.set(i, Scalar::of_float(-1.0 + i / 18.0, DType::F32));
  Tensor got = c.launch(*device_registry().find("cpu"), {x}, {}, {});
  Tensor want = c.launch(*device_registry().find("cpu:reference"), {x}, {}, {});
  for (int64_t i = 0; i < 37; ++i) EXPECT_NEAR(got.get(i).f, want.get(i).f, 1e-4 * std::fabs(want.get(i).f) + 1e-4) << i;
}

// The f32 activations (computed in f64 with an inline exp, rounded once)
// are within 1 ulp of the reference over the whole range
// (activation_accuracy.hpp).
TEST(CodegenCpu, ActivationsAreWithinOneUlpOfTheReference) {
  testing::expect_activations_match_reference(*device_registry().find("cpu"), 1);
  // The reference itself, against values computed in higher precision.
  auto at = [&](const char* fn, double v) {
    CompiledCompute c(kernel_of(std::string("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = ") +
                                fn + "(x[i])\n }\n}"));
    Tensor t = Tensor::empty(DType::F32, {1});
    t.set(0, Scalar::of_float(v, DType::F32));
    return c.launch(*device_registry().find("cpu:reference"), {t}, {}, {}).get(0).f;
  };
  EXPECT_FLOAT_EQ(at("gelu", -7.0), -8.958688e-12f);
  EXPECT_FLOAT_EQ(at("gelu", -5.0), -1.4332578e-06f);
  EXPECT_EQ(at("gelu", -1e9), 0.0);
  EXPECT_TRUE(std::signbit(at("gelu", -INFINITY)));
  EXPECT_EQ(at("sigmoid", -88.75), 2.859991e-39f);  // subnormal: exact
  EXPECT_FLOAT_EQ(at("silu", -88.75), -2.5382423e-37f);
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
      worst = std::max(worst, f32_ulps(static_cast<float>(got.get(i).f), static_cast<float>(exact)));
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
