// gelu, gelu_tanh, sigmoid and silu of f32 values on a device against the
// reference executor, over the whole range: the negative tails where the
// results are tiny or subnormal (gelu(-7) = -8.96e-12, sigmoid(-88.75) =
// 2.9e-39), huge and subnormal arguments, ±0, ±inf (the gelus and silu give
// their limit -0 at -inf) and NaN. Signs must agree, infinities and NaN
// exactly, the rest within `max_ulp`.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_source.hpp"
#include "backends/registry.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"

namespace zyntax::testing {

// Distance in units in the last place between two finite floats.
inline int64_t f32_ulps(float a, float b) {
  int32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  if ((x < 0) != (y < 0)) return std::llabs(static_cast<int64_t>(x & 0x7fffffff)) + std::llabs(static_cast<int64_t>(y & 0x7fffffff));
  return std::llabs(static_cast<int64_t>(x) - static_cast<int64_t>(y));
}

inline void expect_activations_match_reference(Device& device, int64_t max_ulp) {
  std::vector<double> values;
  for (int i = 0; i <= 200000; ++i) values.push_back(-120.0 + 210.0 * i / 200000.0);
  for (double m = 1e-44; m < 3e38; m *= 1.013) {
    values.push_back(m);
    values.push_back(-m);
  }
  for (double v : {0.0, -0.0, 1e-45, -1e-45, -7.0, -5.0, -88.75, -1e9, -1e30, double(NAN), double(INFINITY), -double(INFINITY)})
    values.push_back(v);
  const int64_t n = static_cast<int64_t>(values.size());
  Tensor x = Tensor::empty(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) x.set(i, Scalar::of_float(values[i], DType::F32));
  for (const char* fn : {"gelu", "gelu_tanh", "sigmoid", "silu"}) {
    CompiledCompute c(kernel_of(std::string("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = ") +
                                fn + "(x[i])\n }\n}"));
    Tensor got = c.launch(device, {x}, {}, {});
    Tensor want = c.launch(*device_registry().find("cpu:reference"), {x}, {}, {});
    int64_t worst = 0;
    double worst_at = 0;
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 10; ++i) {
      float g = static_cast<float>(got.get(i).f), w = static_cast<float>(want.get(i).f);
      bool same_class = (std::isnan(g) == std::isnan(w)) && (std::isinf(g) == std::isinf(w)) && std::signbit(g) == std::signbit(w);
      if (!same_class || (std::isinf(w) && g != w)) {
        ADD_FAILURE() << fn << "(" << values[i] << ") on " << device.info().id << ": " << g << ", reference " << w;
        ++failures;
        continue;
      }
      if (std::isnan(w) || std::isinf(w)) continue;
      if (f32_ulps(g, w) > worst) worst = f32_ulps(g, w), worst_at = values[i];
    }
    EXPECT_LE(worst, max_ulp) << fn << " on " << device.info().id << ", worst at " << worst_at;
  }
}

}  // namespace zyntax::testing
