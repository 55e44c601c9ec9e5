// Shared by the matrix-product schedule tests: the error scale of a product
// (the same product of |inputs|) and the comparison against the reference.
// Sums are regrouped by the schedule, so results agree to 1e-4 of the sum
// of |terms| (the parity bound of long reductions), and NaN and infinities
// exactly where the reference has them.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/dtype.hpp"
#include "support/scalar.hpp"

namespace zyntax::testing {

// |t| for the first `count` tensors (all by default).
inline std::vector<Tensor> absolute(const std::vector<Tensor>& ts, size_t count = std::numeric_limits<size_t>::max()) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < ts.size() && i < count; ++i) {
    Tensor t = ts[i].clone();
    for (int64_t e = 0; e < t.numel(); ++e) t.set(e, Scalar::of_float(std::fabs(t.get(e).f), DType::F32));
    out.push_back(t);
  }
  return out;
}

// |got - want| <= 1e-4 * scale + 1e-6 element-wise, plus one unit in the
// last place of a result narrower than f32 (two f32 sums a little apart may
// round to neighbouring bf16 or f16 values); NaN and infinities exactly
// where want has them.
inline void expect_close(const Tensor& got, const Tensor& want, const Tensor& scale, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int mantissa = want.dtype() == DType::BF16 ? 7 : want.dtype() == DType::F16 ? 10 : 0;
  int reported = 0;
  for (int64_t e = 0; e < want.numel() && reported < 5; ++e) {
    double g = got.get(e).f, w = want.get(e).f, bound = 1e-4 * scale.get(e).f + 1e-6;
    if (mantissa) bound += std::ldexp(std::fabs(w), -mantissa);
    bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= bound;
    if (!ok) {
      ADD_FAILURE() << what << ": element " << e << " is " << g << ", the reference has " << w << " (bound " << bound << ")";
      ++reported;
    }
  }
}

// Inputs from N(0, 1) in the dtypes of a specialised kernel's inputs.
inline std::vector<Tensor> random_inputs(const cir::Kernel& k, Random& rng) {
  std::vector<Tensor> in;
  for (const cir::Param& p : k.params) {
    if (p.role != cir::ParamRole::Input) continue;
    Shape shape;
    for (const cir::Expr& e : p.type.shape) shape.push_back(e.as<cir::IntImm>()->value);
    in.push_back(rand_normal(rng, p.type.dtype, shape));
  }
  return in;
}

// An f32 tensor's elements rounded to TF32, as matrix units read them.
inline Tensor rounded_to_tf32(const Tensor& t) {
  Tensor r = t.clone();
  for (int64_t i = 0; i < r.numel(); ++i) r.data_as<float>()[i] = round_to_tf32(t.data_as<float>()[i]);
  return r;
}

// Variant 1 puts a NaN in the middle of the input (inputs[0]), variant 2 an
// infinite first weight (inputs[1], whose taps also fall on any padding);
// returns what to add to the case's description.
inline std::string add_specials(std::vector<Tensor>& inputs, int variant) {
  switch (variant % 3) {
    case 1: inputs[0].set(inputs[0].numel() / 2, Scalar::of_float(NAN, DType::F32)); return " (NaN input)";
    case 2: inputs[1].set(0, Scalar::of_float(INFINITY, DType::F32)); return " (inf weight)";
    default: return "";
  }
}

}  // namespace zyntax::testing
