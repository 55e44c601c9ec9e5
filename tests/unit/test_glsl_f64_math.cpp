// The f64 math functions of the GLSL backend (codegen/glsl/glsl_f64_math)
// run on vulkan:0 and measured in ulp against the C library, over random
// arguments across each function's range and the special values (zeros,
// infinities, NaN, the edges of overflow). A spy in place of the device's
// fallbacks makes sure the device computed them itself; arguments the
// helpers send to the reference executor (huge sin/cos/tan arguments,
// fmod with a quotient past 2^53) are tested for that too.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>

#include "backends/registry.hpp"
#include "parity_cases.hpp"
#include "plan_parity.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

// Counts what the device under test hands on, and runs it on the reference.
class FallbackSpy : public Device {
 public:
  const DeviceInfo& info() const override { return info_; }
  int calls = 0;

 protected:
  Attempt execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                  const std::map<std::string, Scalar>& scalars) override {
    ++calls;
    return Attempt::done(device_registry().find("cpu:reference")->run(kernel, key, inputs, scalars));
  }

 private:
  DeviceInfo info_{"spy", "cpu", "spy", "fallback spy", 1, 0, ""};
};

class VulkanF64Math : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = device_registry().find("vulkan:0");
    if (!device_) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
    if (!device_->gpu_target()->f64) GTEST_SKIP() << "vulkan:0 has no shaderFloat64";
    device_->set_fallbacks({&spy_, &spy_});
  }
  void TearDown() override {
    if (device_) device_registry().lend_fallbacks(*device_);
  }

  // out[i] = `expr` over f64 inputs x (and y), on the device.
  std::vector<double> run(const std::string& expr, const std::vector<double>& x, const std::vector<double>& y = {}) {
    std::string params = y.empty() ? "x: tensor[n, f64]" : "x: tensor[n, f64], y: tensor[n, f64]";
    std::string args = y.empty() ? "x" : "x, y";
    std::string src = "def f(" + params + ") {\n return compute(" + args + ") {\n @kernel elementwise\n for i in 0..n:\n  out[i] = " + expr +
                      "\n }\n}";
    auto tensor = [](const std::vector<double>& v) {
      Tensor t = Tensor::zeros(DType::F64, {static_cast<int64_t>(v.size())});
      for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), Scalar::of_float(v[i], DType::F64));
      return t;
    };
    std::vector<Tensor> inputs = {tensor(x)};
    if (!y.empty()) inputs.push_back(tensor(y));
    CompiledCompute compiled(testing::kernel_of(src.c_str()));
    Tensor out = compiled.launch(*device_, inputs, {}, {});
    std::vector<double> r;
    for (int64_t i = 0; i < out.numel(); ++i) r.push_back(out.get(i).f);
    return r;
  }

  // Distance in ulp (doubles ordered as integers); results both below the
  // smallest normal count as equal (devices may flush subnormals).
  static double ulps(double got, double want) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want) ? 0 : 1e300;
    if (got == want) return std::signbit(got) == std::signbit(want) ? 0 : 1e300;
    if (std::fabs(got) < std::numeric_limits<double>::min() && std::fabs(want) < std::numeric_limits<double>::min()) return 0;
    auto ordered = [](double v) -> __int128 {
      int64_t b = std::bit_cast<int64_t>(v);
      return b < 0 ? -static_cast<__int128>(b & std::numeric_limits<int64_t>::max()) : b;
    };
    __int128 diff = ordered(got) - ordered(want);
    return static_cast<double>(diff < 0 ? -diff : diff);
  }

  void expect_within(const char* fn, double max_ulps, const std::vector<double>& x, const std::vector<double>& got,
                     const std::function<double(size_t)>& want) {
    ASSERT_EQ(got.size(), x.size());
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double u = ulps(got[i], want(i));
      if (u > worst) worst = u, worst_at = i;
    }
    EXPECT_LE(worst, max_ulps) << fn << ": worst at argument " << ::testing::PrintToString(x[worst_at]) << ": got "
                               << ::testing::PrintToString(got[worst_at]) << ", C says " << ::testing::PrintToString(want(worst_at));
  }

  // Random arguments, log-uniform in magnitude between 2^lo and 2^hi, either
  // sign where `negative`, then the special values.
  static std::vector<double> arguments(int lo, int hi, bool negative, std::vector<double> special, int count = 3000) {
    Random rng(7);
    std::vector<double> v;
    for (int i = 0; i < count; ++i) {
      // One draw at a time: as arguments of one call their order would be the compiler's.
      int exponent = lo + static_cast<int>(rng.uniform() * (hi - lo));
      double m = std::ldexp(1.0 + rng.uniform(), exponent);
      v.push_back(negative && rng.uniform() < 0.5 ? -m : m);
    }
    double inf = std::numeric_limits<double>::infinity();
    for (double s : {0.0, -0.0, inf, -inf, std::nan("")}) v.push_back(s);
    v.insert(v.end(), special.begin(), special.end());
    return v;
  }

  void unary(const char* fn, double max_ulps, double (*c)(double), const std::vector<double>& x) {
    std::vector<double> got = run(std::string(fn) + "(x[i])", x);
    expect_within(fn, max_ulps, x, got, [&](size_t i) { return c(x[i]); });
  }

  Device* device_ = nullptr;
  FallbackSpy spy_;
};

double c_exp(double x) { return std::exp(x); }

TEST_F(VulkanF64Math, ExponentialsAndLogarithms) {
  unary("exp", 2, c_exp, arguments(-30, 10, true, {709.78, 709.79, -745.1, -745.2, -708.5, 1e-300}));
  unary("exp2", 2, [](double x) { return std::exp2(x); }, arguments(-30, 11, true, {1023.5, 1024.0, -1074.0, -1022.5, 3.0}));
  std::vector<double> positive = arguments(-1070, 1023, false, {1.0, 2.0, 0.5, 1e-310, 4.9e-324, 0.9999999999999999, 1.0000000000000002, -1.0});
  unary("log", 2, [](double x) { return std::log(x); }, positive);
  unary("log2", 2, [](double x) { return std::log2(x); }, positive);
  unary("log10", 2, [](double x) { return std::log10(x); }, positive);
  EXPECT_EQ(spy_.calls, 0);
}

TEST_F(VulkanF64Math, Trigonometry) {
  std::vector<double> x = arguments(-30, 49, true, {M_PI / 2, M_PI, 3 * M_PI / 2, 1e15, -1e15, 355.0, 103993.0, 7.45e-9});
  unary("sin", 2, [](double v) { return std::sin(v); }, x);
  unary("cos", 2, [](double v) { return std::cos(v); }, x);
  unary("tan", 2, [](double v) { return std::tan(v); }, x);
  std::vector<double> unit;
  Random rng(3);
  for (int i = 0; i < 2000; ++i) unit.push_back(2 * rng.uniform() - 1);
  for (double s : {1.0, -1.0, 0.0, -0.0, 1.0000000000000002, -2.0, 0.9999999999999999, 1e-200, std::nan("")}) unit.push_back(s);
  unary("asin", 2, [](double v) { return std::asin(v); }, unit);
  unary("acos", 2, [](double v) { return std::acos(v); }, unit);
  unary("atan", 2, [](double v) { return std::atan(v); }, arguments(-40, 60, true, {1.0, -1.0, 0.19891236737965800, 5.027339492125848}));
  EXPECT_EQ(spy_.calls, 0);
}

// Rounding to integers exactly over the whole range: every integer
// between 2^31 and 2^52 and the halves between them (drivers' roundEven,
// floor and trunc on doubles have been seen going through narrower types).
TEST_F(VulkanF64Math, RoundingToIntegers) {
  std::vector<double> x = arguments(-10, 60, true, {0.5, 1.5, 2.5, -0.5, -2.5, 4503599627370495.5, -4503599627370495.5, 4503599627370496.0,
                                                   123456789.4, 269634000000000.7, 2147483648.5, -2147483648.5, 1e-310});
  for (double& v : x)
    if (std::isfinite(v) && std::fabs(v) > 4 && std::fabs(v) < 4.5e15) v = std::floor(v) + 0.5 * (std::fmod(std::fabs(v), 3.0) < 1.0);
  unary("round", 0, [](double v) { return std::nearbyint(v); }, x);
  unary("floor", 0, [](double v) { return std::floor(v); }, x);
  unary("ceil", 0, [](double v) { return std::ceil(v); }, x);
  unary("trunc", 0, [](double v) { return std::trunc(v); }, x);
  EXPECT_EQ(spy_.calls, 0);
}

TEST_F(VulkanF64Math, HyperbolicAndErf) {
  std::vector<double> x = arguments(-40, 10, true, {709.0, 710.0, 710.5, 22.0, -22.0, 0.3465, 1e-301});
  unary("sinh", 2, [](double v) { return std::sinh(v); }, x);
  unary("cosh", 2, [](double v) { return std::cosh(v); }, x);
  unary("tanh", 2, [](double v) { return std::tanh(v); }, x);
  // Small arguments, both sides of the series' bound (2^-7): e / (e + 2) was 3 ulps off there.
  unary("tanh", 2, [](double v) { return std::tanh(v); },
        arguments(-40, -5, true, {0x1.cbfa447ebb56ap-23, -0x1.cbfa447ebb56ap-23, 0.0078124, 0.0078126, -0.0078125}));
  unary("erf", 8, [](double v) { return std::erf(v); }, arguments(-30, 3, true, {0.75, 2.5, 6.0, 5.9, -0.7499999}));
  EXPECT_EQ(spy_.calls, 0);
}

TEST_F(VulkanF64Math, PowAtan2AndFmod) {
  Random rng(11);
  double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  std::vector<double> x, y;
  for (int i = 0; i < 3000; ++i) {
    x.push_back(std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.uniform() * 60) - 30));
    y.push_back((rng.uniform() - 0.5) * 40);
  }
  for (int i = 0; i < 200; ++i) {  // negative bases with integer exponents
    x.push_back(-std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.uniform() * 8)));
    y.push_back(std::round((rng.uniform() - 0.5) * 60));
  }
  for (double a : {0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, inf, -inf, nan})
    for (double b : {0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 0.5, 2.0, inf, -inf, nan, 1100.0, -1100.0}) x.push_back(a), y.push_back(b);
  std::vector<double> got = run("pow(x[i], y[i])", x, y);
  expect_within("pow", 2, x, got, [&](size_t i) { return std::pow(x[i], y[i]); });
  got = run("x[i] ** y[i]", x, y);
  expect_within("**", 2, x, got, [&](size_t i) { return std::pow(x[i], y[i]); });
  got = run("atan2(x[i], y[i])", y, x);
  expect_within("atan2", 2, y, got, [&](size_t i) { return std::atan2(y[i], x[i]); });

  std::vector<double> a, b;
  for (int i = 0; i < 3000; ++i) {
    double m = std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.uniform() * 80) - 40);
    a.push_back(rng.uniform() < 0.5 ? -m : m);
    double q = std::ldexp(1.0 + rng.uniform(), -static_cast<int>(rng.uniform() * 50));  // |a / b| up to 2^51
    b.push_back((rng.uniform() < 0.5 ? -m : m) * q);
  }
  for (double s : {0.0, -0.0, 3.0, -3.0, inf, -inf, nan}) a.push_back(s), b.push_back(2.0);
  for (double s : {0.0, inf, nan}) a.push_back(5.5), b.push_back(s);
  a.push_back(-4.0), b.push_back(2.0);
  a.push_back(0.7), b.push_back(0.1);
  got = run("x[i] % y[i]", a, b);
  expect_within("%", 0, a, got, [&](size_t i) { return std::fmod(a[i], b[i]); });
  EXPECT_EQ(spy_.calls, 0);
}

// fma rounds once: the product's rounding error comes out exactly, and the
// hard cases (a sum that cancels to the product's last bits, ties,
// subnormal and overflowing results) are C's.
TEST_F(VulkanF64Math, FmaRoundsOnce) {
  std::vector<double> x = arguments(-600, 600, true, {1.0000000000000002, 1.0000000000000002, 3.0, 1e308, 1e-308, 0.1}),
                      y = arguments(-600, 600, true, {1.0000000000000002, -1.0000000000000002, 1.0 / 3, 10.0, 1e-10, 10.0});
  std::reverse(y.begin(), y.end());
  std::vector<double> error = run("fma(x[i], y[i], -(x[i] * y[i]))", x, y);
  expect_within("fma(x, y, -x y)", 0, x, error, [&](size_t i) { return std::fma(x[i], y[i], -(x[i] * y[i])); });
  std::vector<double> sum = run("fma(x[i], y[i], x[i])", x, y);
  expect_within("fma(x, y, x)", 0, x, sum, [&](size_t i) { return std::fma(x[i], y[i], x[i]); });
  std::vector<double> a = {1.0000000000000002, 1e308, 1e-300, -2.5, 0.5, 3.0, 1.0000000000000002},
                      b = {1.0000000000000002, 10.0, 1e-30, 3e300, 4.9e-324, 1.0 / 3, 0.9999999999999999};
  std::vector<double> hard = run("fma(x[i], y[i], -1.0000000000000004)", a, b);
  expect_within("fma(x, y, -1 - 2^-51)", 0, a, hard, [&](size_t i) { return std::fma(a[i], b[i], -1.0000000000000004); });
}

TEST_F(VulkanF64Math, CompositionsMatchTheReference) {
  std::vector<double> x = arguments(-20, 5, true, {});
  for (const char* expr : {"gelu(x[i])", "gelu_tanh(x[i])", "sigmoid(x[i])", "silu(x[i])", "rsqrt(abs(x[i]))"}) {
    std::vector<double> got = run(expr, x);
    std::string src = std::string("def f(x: tensor[n, f64]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = ") + expr +
                      "\n }\n}";
    Tensor in = Tensor::zeros(DType::F64, {static_cast<int64_t>(x.size())});
    for (size_t i = 0; i < x.size(); ++i) in.set(static_cast<int64_t>(i), Scalar::of_float(x[i], DType::F64));
    Tensor want = CompiledCompute(testing::kernel_of(src.c_str())).launch(*device_registry().find("cpu:reference"), {in}, {}, {});
    // The reference may write a function another way (gelu_tanh through
    // tanh): equal within 1e-14 relative or 1e-15 absolute.
    for (size_t i = 0; i < x.size(); ++i) {
      double w = want.get(static_cast<int64_t>(i)).f;
      if (got[i] == w || (std::isnan(got[i]) && std::isnan(w))) continue;
      ASSERT_LE(std::fabs(got[i] - w), 1e-14 * std::fabs(w) + 1e-15) << expr << " at " << x[i] << ": got " << got[i] << ", reference " << w;
    }
  }
  EXPECT_EQ(spy_.calls, 0);
}

// Past what the helpers compute exactly, the run goes to the reference
// executor and the result is still C's.
TEST_F(VulkanF64Math, HugeArgumentsRunOnTheReference) {
  std::vector<double> got = run("sin(x[i])", {1e22, 0.5});
  EXPECT_EQ(spy_.calls, 1);
  EXPECT_EQ(got[0], std::sin(1e22));
  EXPECT_EQ(got[1], std::sin(0.5));
  got = run("x[i] % y[i]", {1e300, 7.0}, {3.0, 2.0});
  EXPECT_EQ(spy_.calls, 2);
  EXPECT_EQ(got[0], std::fmod(1e300, 3.0));
  EXPECT_EQ(got[1], 1.0);
}

}  // namespace
}  // namespace zyntax
