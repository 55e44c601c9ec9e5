// The CPU backend against the reference executor: every kernel on random
// inputs of many shapes (odd sizes, 1, non-square), compared element by
// element. With the reference's rounding rules the results are identical
// bit for bit, NaN where the reference has NaN — except where the backend
// knowingly differs by rounding: f32 exp and tanh (inline, within 2 ulp) and
// running sums `s += e`, which the vectoriser may split into partial sums.
// Those kernels must agree to a relative 1e-4 (the parity bound of long
// reductions), with an absolute 1e-5 for results that cancel to near zero.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/specialize.hpp"
#include "driver/session.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "sema/host_checker.hpp"
#include "support/diagnostics.hpp"
#include "kernel_source.hpp"

namespace zyntax {
namespace {

// Every dimension of `k` at size n.
std::map<std::string, int64_t> all_dims(const cir::Kernel& k, int64_t n) {
  std::map<std::string, int64_t> dims;
  for (const cir::DimParam& d : k.dims) dims[d.name] = n;
  return dims;
}

using testing::kernel_of;

// Identical, or for `approximate` kernels |a - b| <= 1e-4 |b| + 1e-5; NaN
// and infinities must match either way.
bool agree(const Tensor& a, const Tensor& b, bool approximate, std::string* where) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    *where = "shape/dtype " + shape_str(a.shape()) + " vs " + shape_str(b.shape());
    return false;
  }
  if (std::memcmp(a.data(), b.data(), a.nbytes()) == 0) return true;
  for (int64_t i = 0; i < a.numel(); ++i) {
    Scalar x = a.get(i), y = b.get(i);
    bool both_nan = is_float(a.dtype()) && std::isnan(x.f) && std::isnan(y.f);
    bool close = approximate && is_float(a.dtype()) && std::isfinite(x.f) && std::isfinite(y.f) &&
                 std::fabs(x.f - y.f) <= 1e-4 * std::fabs(y.f) + 1e-5;
    if (!both_nan && !close && x.str() != y.str()) {
      *where = "element " + std::to_string(i) + ": " + x.str() + " vs " + y.str();
      return false;
    }
  }
  return true;
}

struct Case {
  const char* name;
  const char* source;  // `DT` in the source stands for the cases's dtype
  std::vector<int> ranks;
  DType dtype = DType::F32;
  bool approximate = false;  // goes through f32 exp or tanh, or a running sum
};

// Shapes per rank: the same few sizes in every position.
std::vector<Shape> shapes_for(int rank, int variant) {
  // Smaller sizes for many axes keep the reference executor quick.
  static const int64_t kSizes[] = {1, 3, 17, 127, 64, 5};
  static const int64_t kSmall[] = {1, 3, 17, 7, 2, 5};
  const int64_t* sizes = rank >= 3 ? kSmall : kSizes;
  Shape s;
  for (int a = 0; a < rank; ++a) s.push_back(sizes[(variant + a * 2) % 6]);
  return {s};
}

class CpuParity : public ::testing::TestWithParam<Case> {};

TEST_P(CpuParity, MatchesTheReference) {
  const Case& c = GetParam();
  std::string src = c.source;
  for (size_t at; (at = src.find("DT")) != std::string::npos;) src.replace(at, 2, dtype_name(c.dtype));
  cir::Kernel generic = kernel_of(src);
  ASSERT_FALSE(generic.name.empty());
  CompiledCompute compiled(generic);
  Device* cpu = DeviceRegistry::global().find("cpu");
  Device* ref = DeviceRegistry::global().find("cpu:reference");
  Random rng(42);
  for (int variant = 0; variant < 6; ++variant) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.ranks.size(); ++i) {
      // Inputs of one case share their sizes so that dimensions agree.
      Shape s = shapes_for(c.ranks[i], variant)[0];
      if (c.ranks.size() > 1 && c.ranks[i] == c.ranks[0]) s = shapes_for(c.ranks[0], variant)[0];
      Tensor t = rand_normal(rng, DType::F32, s).astype(c.dtype);
      if (variant == 2 && t.numel() > 2 && is_float(c.dtype)) {  // specials must propagate the same way
        t.set(0, Scalar::of_float(NAN, c.dtype));
        t.set(1, Scalar::of_float(-INFINITY, c.dtype));
      }
      inputs.push_back(t);
    }
    // The result, or the error the launch reports.
    auto launch = [&](Device* device, Tensor* result) -> std::string {
      try {
        *result = compiled.launch(*device, inputs, {}, {});
      } catch (const Error& e) {
        return e.what();
      } catch (const DataError& e) {
        return e.what();
      }
      return "";
    };
    Tensor want, got;
    std::string ref_error = launch(ref, &want), cpu_error = launch(cpu, &got);
    ASSERT_EQ(ref_error, cpu_error) << c.name << " variant " << variant;
    if (!ref_error.empty()) continue;
    std::string where;
    EXPECT_TRUE(agree(want, got, c.approximate, &where)) << c.name << " variant " << variant << ": " << where;
  }
}

const Case kCases[] = {
    {"relu", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = relu(x[i])\n }\n}", {1}},
    {"mul_add", "def f(x: tensor[n, DT], y: tensor[n, DT]) {\n return compute(x, y) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * y[i] + 1.0\n }\n}", {1, 1}},
    {"math", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
             "  out[i] = exp(x[i]) + tanh(x[i]) * gelu(x[i]) - sigmoid(x[i]) / (1.0 + abs(x[i])) + rsqrt(abs(x[i]) + 1.0)"
             " + max(x[i], 0.5) + min(x[i], -0.5) + floor(x[i]) + sqrt(abs(x[i])) + erf(x[i]) + silu(x[i]) + gelu_tanh(x[i])\n }\n}",
     {1}, DType::F32, true},
    {"math_f64", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = log(abs(x[i]) + 1e-3) * 2.5 + pow(abs(x[i]), 1.5) + x[i] % 0.7\n }\n}",
     {1}, DType::F64},
    {"f16", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * x[i] + 0.1\n }\n}", {1}, DType::F16},
    {"bf16", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 3.0 - x[i] / 7.0\n }\n}", {1}, DType::BF16},
    {"int_ops", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
                "  out[i] = (x[i] * 7 + 3) / 2 - x[i] % 3 + max(x[i], 0)\n }\n}", {1}, DType::I32},
    {"cast_sat", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = i8(x[i] * 100.0)\n }\n}", {1}},
    {"broadcast", "def f(m: tensor[r, c, DT], v: tensor[c, DT]) {\n return compute(m, v) {\n @kernel elementwise\n for i in 0..r, j in 0..c:\n  out[i, j] = m[i, j] * v[j]\n }\n}",
     {2, 1}},
    {"reduce_sum", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel reduce(+)\n for i in 0..n:\n  yield x[i] * x[i]\n }\n}", {1}},
    {"reduce_max", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel reduce(max)\n for i in 0..n:\n  yield x[i]\n }\n}", {1}},
    {"row_sums", "def f(m: tensor[r, c, DT]) {\n return compute(m) {\n @kernel reduce(+, axis=1)\n for i in 0..r, j in 0..c:\n  yield m[i, j]\n }\n}", {2}},
    {"col_min", "def f(m: tensor[r, c, DT]) {\n return compute(m) {\n @kernel reduce(min, axis=0)\n for i in 0..r, j in 0..c:\n  yield m[i, j]\n }\n}", {2}},
    {"argmax", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel reduce(argmax)\n for i in 0..n:\n  yield (x[i], i)\n }\n}", {1}},
    {"argmin_rows", "def f(m: tensor[r, c, DT]) {\n return compute(m) {\n @kernel reduce(argmin, axis=1)\n for i in 0..r, j in 0..c:\n  yield (m[i, j], j)\n }\n}", {2}},
    {"matmul", "def f(A: tensor[M, K, DT], B: tensor[K, N, DT]) {\n return compute(A, B) {\n @kernel matmul\n for i in 0..M, j in 0..N:\n"
               "  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j]\n  out[i, j] = sum\n }\n}",
     {2, 2}},
    {"softmax_rows", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n  for j in 0..c:\n   m = max(m, x[i, j])\n"
                     "  var s = 0.0\n  for j in 0..c:\n   s += exp(x[i, j] - m)\n  for j in 0..c:\n   out[i, j] = exp(x[i, j] - m) / s\n }\n}",
     {2}, DType::F32, true},
    {"layernorm", "def f(x: tensor[r, c, DT], g: tensor[c, DT]) {\n return compute(x, g) {\n @kernel fused\n for b in 0..r:\n  var mean = 0.0\n  for i in 0..c:\n   mean += x[b, i]\n"
                  "  mean /= c\n  var var = 0.0\n  for i in 0..c:\n   let d = x[b, i] - mean\n   var += d * d\n  var /= c\n  let inv = rsqrt(var + 1e-5)\n"
                  "  for i in 0..c:\n   out[b, i] = (x[b, i] - mean) * inv * g[i]\n }\n}",
     {2, 1}, DType::F32, true},
    {"shared_ffn", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n for b in 0..r:\n  shared var up[c]\n  for i in 0..c:\n   up[i] = x[b, i] * 2.0\n"
                   "  barrier()\n  for i in 0..c:\n   var s = 0.0\n   for j in 0..c:\n    s += up[j]\n   out[b, i] = s - up[i]\n }\n}",
     {2}, DType::F32, true},
    {"guarded", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
                "  if i > 0 and x[i - 1] > 0.0:\n   out[i] = x[i - 1]\n  else:\n   out[i] = where(x[i] > 0.0, x[i], -x[i])\n }\n}",
     {1}},
    // Tile kernels: scalarised into loops, then compiled.
    {"softmax_tiles", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel fused\n let m = reduce(max, x)\n let e = exp(x - m)\n"
                      " out = e / reduce(+, e)\n }\n}", {1}, DType::F32, true},
    {"row_tiles", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n let m = row_max(x)\n let e = exp(x - m)\n"
                  " out = e / row_sum(e)\n }\n}", {2}, DType::F32, true},
    {"attention_dot", "def f(Q: tensor[b, h, s, d, DT], K: tensor[b, h, s, d, DT], V: tensor[b, h, s, d, DT]) {\n return compute(Q, K, V) {\n"
                      " @kernel attention\n for i0 in 0..b, i1 in 0..h, i in 0..s:\n  var mx = -inf\n  for j in 0..s:\n"
                      "   mx = max(mx, dot(Q[i0, i1, i], K[i0, i1, j]))\n  var den = 0.0\n  for j in 0..s:\n"
                      "   den += exp(dot(Q[i0, i1, i], K[i0, i1, j]) - mx)\n  for e in 0..d:\n   var acc = 0.0\n   for j in 0..s:\n"
                      "    acc += exp(dot(Q[i0, i1, i], K[i0, i1, j]) - mx) / den * V[i0, i1, j, e]\n   out[i0, i1, i, e] = acc\n }\n}",
     {4, 4, 4}, DType::F32, true},
    {"flash", "def f(q: tensor[b, h, s, d, DT], k: tensor[b, h, s, d, DT], v: tensor[b, h, s, d, DT]) {\n return compute(q, k, v) {\n"
              " @kernel flash_attention\n for bb in 0..b, hh in 0..h:\n  for q0 in 0..s step 4:\n   let rows = min(4, s - q0)\n"
              "   var m = -inf\n   var l = 0.0\n   var o = zeros(rows, d)\n   let Qb = q[bb, hh, q0:q0 + 4]\n"
              "   for k0 in 0..s step 4:\n    let Kb = k[bb, hh, k0:k0 + 4]\n    let Vb = v[bb, hh, k0:k0 + 4]\n"
              "    let S = Qb @ transpose(Kb) / sqrt(d)\n    let m_new = max(m, row_max(S))\n"
              "    let l_new = exp(m - m_new) * l + row_sum(exp(S - m_new))\n    o = exp(m - m_new) * o + exp(S - m_new) @ Vb\n"
              "    m = m_new\n    l = l_new\n   out[bb, hh, q0:q0 + 4] = o / l\n }\n}",
     {4, 4, 4}, DType::F32, true},
    {"argmax_tile", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  out[i] = reduce(argmax, x[i])\n }\n}", {2}},
    {"out_of_bounds", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i + 1]\n }\n}", {1}},
    {"division_by_zero", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = 10 / (x[i] - x[i])\n }\n}",
     {1}, DType::I64},
};

INSTANTIATE_TEST_SUITE_P(Kernels, CpuParity, ::testing::ValuesIn(kCases),
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
  for (const Case& c : kCases) {
    std::string src = c.source;
    for (size_t at; (at = src.find("DT")) != std::string::npos;) src.replace(at, 2, "f32");
    cir::Kernel k = cir::specialize(kernel_of(src), all_dims(kernel_of(src), 7));
    if (!codegen::unsupported_reason(k)) continue;
    std::string why;
    std::optional<cir::Kernel> s = cir::scalarize_tiles(k, &why);
    ASSERT_TRUE(s.has_value()) << c.name << ": " << why;
    EXPECT_FALSE(codegen::unsupported_reason(*s).has_value()) << c.name << ": " << *codegen::unsupported_reason(*s);
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
    Tensor got = c.launch(*DeviceRegistry::global().find("cpu"), {x}, {}, {});
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
  Tensor got = e.launch(*DeviceRegistry::global().find("cpu"), {s}, {}, {});
  EXPECT_TRUE(std::isnan(got.get(0).f));
  EXPECT_EQ(got.get(1).f, 0.0);
  EXPECT_EQ(got.get(2).f, INFINITY);
  EXPECT_EQ(got.get(3).f, 1.0);
  CompiledCompute t(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = tanh(x[i])\n }\n}"));
  got = t.launch(*DeviceRegistry::global().find("cpu"), {s}, {}, {});
  EXPECT_TRUE(std::isnan(got.get(0).f));
  EXPECT_EQ(got.get(1).f, -1.0);
  EXPECT_EQ(got.get(2).f, 1.0);
  EXPECT_EQ(got.get(3).f, 0.0);
}

}  // namespace
}  // namespace zyntax
