// A scheduled kernel against the kernel it came from, both on the
// reference executor, on random inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cir/printer.hpp"
#include "backends/reference/reference_executor.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax::testing {

// Inputs for a specialised kernel: floats from N(0, 1), integers (ids,
// targets) in [0, 3), scalars 0.5 or 1.
inline std::pair<std::vector<Tensor>, std::map<std::string, Scalar>> inputs_for(const cir::Kernel& k, Random& rng) {
  std::vector<Tensor> inputs;
  std::map<std::string, Scalar> scalars;
  for (const cir::Param& p : k.params) {
    if (p.role == cir::ParamRole::Scalar) {
      scalars[p.name] = is_float(p.type.dtype) ? Scalar::of_float(0.5, p.type.dtype) : Scalar::from_int(1, p.type.dtype);
      continue;
    }
    if (p.role != cir::ParamRole::Input) continue;
    Shape shape;
    for (const cir::Expr& e : p.type.shape) shape.push_back(e.as<cir::IntImm>()->value);
    inputs.push_back(is_float(p.type.dtype) ? rand_normal(rng, p.type.dtype, shape)
                                            : rand_uniform(rng, DType::F64, shape, 0, 3).astype(p.type.dtype));
  }
  return {inputs, scalars};
}

// The scheduled kernel gives the original's result (NaN where it has NaN),
// within `tolerance` of the result's scale.
inline void expect_same_result(const cir::Kernel& original, const cir::Kernel& scheduled, const std::string& what, uint64_t seed = 7,
                               double tolerance = 2e-5) {
  Random rng(seed);
  auto [inputs, scalars] = inputs_for(original, rng);
  Tensor want = ReferenceKernel(original).run(inputs, scalars).astype(DType::F64);
  Tensor got = ReferenceKernel(scheduled).run(inputs, scalars).astype(DType::F64);
  ASSERT_EQ(want.shape(), got.shape()) << what;
  // Within f32 rounding of the result's scale (a reordered sum may cancel).
  double scale = 1;
  for (int64_t i = 0; i < want.numel(); ++i)
    if (std::isfinite(want.get(i).f)) scale = std::max(scale, std::fabs(want.get(i).f));
  for (int64_t i = 0; i < want.numel(); ++i) {
    double w = want.get(i).f, g = got.get(i).f;
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << what << " element " << i;
      continue;
    }
    if (std::isinf(w)) {
      EXPECT_EQ(g, w) << what << " element " << i;
      continue;
    }
    ASSERT_NEAR(g, w, tolerance * scale) << what << " element " << i << "\n" << cir::print(scheduled);
  }
}

// For argmax/argmin: the same indices, exactly, on inputs full of ties
// (values drawn from {0, 1, 2}) and, where `nans` and floats, a NaN at a
// few places (the first NaN must win) or none.
inline void expect_same_arg_result(const cir::Kernel& original, const cir::Kernel& scheduled, const std::string& what, bool nans,
                                   uint64_t seed = 7) {
  Random rng(seed);
  std::vector<Tensor> inputs;
  for (const cir::Param& p : original.params) {
    if (p.role != cir::ParamRole::Input) continue;
    Shape shape;
    for (const cir::Expr& e : p.type.shape) shape.push_back(e.as<cir::IntImm>()->value);
    Tensor t = rand_uniform(rng, DType::F64, shape, 0, 3).astype(DType::I64).astype(p.type.dtype);
    if (nans && is_float(p.type.dtype) && t.numel() > 2) {
      t.set(t.numel() * 2 / 3, Scalar::of_float(NAN, p.type.dtype));
      t.set(t.numel() / 3, Scalar::of_float(-NAN, p.type.dtype));
    }
    inputs.push_back(t);
  }
  Tensor want = ReferenceKernel(original).run(inputs, {});
  Tensor got = ReferenceKernel(scheduled).run(inputs, {});
  ASSERT_EQ(want.shape(), got.shape()) << what;
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_EQ(got.get(i).as_int64(), want.get(i).as_int64()) << what << " element " << i << "\n" << cir::print(scheduled);
}

}  // namespace zyntax::testing
