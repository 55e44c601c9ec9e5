// The accuracy the f32 math of the GPU backends is held to, against the
// reference executor (the C library): the arguments (random across the
// whole f32 range, [-10, 10], [-1, 1], near 1, and the special values) and
// each function's bound in ulp. Shared by the Vulkan test
// (test_shader_f32_math.cpp) and the WebGPU cases (tests/webgpu/make_cases).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace zyntax::testing {

struct F32MathCase {
  const char* name;
  const char* expr;  // of x, y and z
  double ulp;        // the bound, plus
  double growth;     // this many ulp per unit of |log2| of the result (exp of a rounded argument: pow, gelu_tanh)
};

inline const std::vector<F32MathCase>& f32_math_cases() {
  static const std::vector<F32MathCase> all = {
      {"sin", "sin(x[i])", 4, 0},         {"cos", "cos(x[i])", 4, 0},         {"tan", "tan(x[i])", 4, 0},
      {"asin", "asin(x[i])", 4, 0},       {"acos", "acos(x[i])", 4, 0},       {"atan", "atan(x[i])", 4, 0},
      {"sinh", "sinh(x[i])", 4, 0},       {"cosh", "cosh(x[i])", 4, 0},       {"tanh", "tanh(x[i])", 4, 0},
      {"exp", "exp(x[i])", 4, 0},         {"exp2", "exp2(x[i])", 4, 0},       {"log", "log(x[i])", 4, 0},
      {"log2", "log2(x[i])", 4, 0},       {"log10", "log10(x[i])", 4, 0},     {"atan2", "atan2(x[i], y[i])", 4, 0},
      {"sigmoid", "sigmoid(x[i])", 4, 0}, {"silu", "silu(x[i])", 4, 0},       {"gelu", "gelu(x[i])", 6, 0},
      {"erf", "erf(x[i])", 8, 0},         {"gelu_tanh", "gelu_tanh(x[i])", 4, 2}, {"pow", "pow(x[i], y[i])", 4, 2},
      {"fma", "fma(x[i], y[i], z[i])", 0, 0}, {"fmod", "x[i] % y[i]", 0, 0},
  };
  return all;
}

// x, y and z: the same values in three orders.
inline std::vector<std::vector<float>> f32_math_arguments() {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<float> x;
  for (int i = 0; i < 4000; ++i) x.push_back(static_cast<float>((unit(rng) < 0.5 ? -1 : 1) * std::exp2(-149 + 277 * unit(rng))));
  for (int i = 0; i < 2000; ++i) x.push_back(static_cast<float>(-10 + 20 * unit(rng)));
  for (int i = 0; i < 1000; ++i) x.push_back(static_cast<float>(-1 + 2 * unit(rng)));
  for (int i = 0; i < 500; ++i) x.push_back(static_cast<float>(1 + 2e-3 * (unit(rng) - 0.5)));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, std::nanf(""), 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, 88.72f, 89.0f, -88.75f, -103.0f, 1e-10f, -1e-7f,
                  1e-45f, -1e-45f, 1.1754944e-38f, 3.4028235e38f, -1.41e8f, 1e4f, 0.78539819f, 1.5707964f, 3.1415927f, 1e30f, -1e30f,
                  2.4142137f, 0.41421357f, 0.99999994f, 1.0000001f})
    x.push_back(v);
  std::vector<float> y = x, z = x;
  std::shuffle(y.begin(), y.end(), rng);
  std::shuffle(z.begin(), z.end(), rng);
  return {x, y, z};
}

// Why `got` is not within the case's bound of the reference's `want`, or "".
// Results the reference has below the normal range (not zero) may come back
// as any value there, flushed to either zero included, as devices may flush
// subnormals.
inline std::string f32_math_disagreement(const F32MathCase& c, float got, float want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? "" : "NaN on one side only";
  if (std::isinf(want) || std::isinf(got)) return got == want ? "" : "infinities differ";
  const float smallest_normal = std::numeric_limits<float>::min();
  if (want != 0 && std::fabs(want) < smallest_normal && std::fabs(got) < smallest_normal) return "";  // flushed, to either zero
  if (std::signbit(got) != std::signbit(want)) return "signs differ";
  int32_t g, w;
  std::memcpy(&g, &got, 4);
  std::memcpy(&w, &want, 4);
  double ulps = std::fabs(static_cast<double>(g) - static_cast<double>(w));
  double bound = c.ulp + c.growth * (want == 0 ? 0.0 : std::fabs(std::log2(std::fabs(static_cast<double>(want)))));
  if (ulps <= bound) return "";
  return std::to_string(static_cast<int64_t>(ulps)) + " ulp off (bound " + std::to_string(static_cast<int64_t>(bound)) + ")";
}

}  // namespace zyntax::testing
