// reuse_row_values: a row value computed in a reducing loop and again in the
// writing loop is kept in the output by the first and read back by the second.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cir/passes/reuse_row_values.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

const char* kSoftmax =
    "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n"
    "  for j in 0..c:\n   m = max(m, x[i, j])\n  var s = 0.0\n  for j in 0..c:\n   s += exp(x[i, j] - m)\n"
    "  let inv = 1.0 / s\n  for j in 0..c:\n   out[i, j] = exp(x[i, j] - m) * inv\n }\n}";

// `k` and its rewrite `r` compute the same bits on the reference executor,
// from random rows with one special value at `at`.
void same_bits(const cir::Kernel& k, const cir::Kernel& r, Shape shape, int64_t at, double special) {
  Random rng(static_cast<uint64_t>(at));
  Tensor x = rand_normal(rng, DType::F32, shape);
  x.set(at, Scalar::of_float(special, DType::F32));
  Tensor want = ReferenceKernel(k).run({x}, {});
  Tensor got = ReferenceKernel(r).run({x}, {});
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.nbytes()), 0);
}

TEST(ReuseRowValues, SoftmaxComputesExpOnceWithIdenticalResults) {
  cir::Kernel k = cir::specialize(kernel_of(kSoftmax), {{"r", 5}, {"c", 37}});
  cir::Kernel r = cir::reuse_row_values(k);
  std::string text = cir::print(r);
  EXPECT_NE(text.find("out[i, j_2] * inv"), std::string::npos) << text;
  size_t exps = 0;
  for (size_t at = text.find("exp("); at != std::string::npos; at = text.find("exp(", at + 1)) ++exps;
  EXPECT_EQ(exps, 1u) << text;

  same_bits(k, r, {5, 37}, 3, NAN);
}

// An f32 row summed in f64 (the reduction's accumulator once a sum block is
// fused into its consumer): the output keeps the f32 value, the sum widens it.
TEST(ReuseRowValues, WidenedSumKeepsTheValueBeforeItIsWidened) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n"
                "  for j in 0..c:\n   m = max(m, x[i, j])\n  var s = f64(0.0)\n  for j in 0..c:\n   s += f64(exp(x[i, j] - m))\n"
                "  for j in 0..c:\n   out[i, j] = exp(x[i, j] - m) / f32(s)\n }\n}"),
      {{"r", 4}, {"c", 29}});
  cir::Kernel r = cir::reuse_row_values(k);
  std::string text = cir::print(r);
  EXPECT_NE(text.find("s = s + f64(s%row)"), std::string::npos) << text;
  EXPECT_NE(text.find("out[i, j_2] / f32(s)"), std::string::npos) << text;

  same_bits(k, r, {4, 29}, 7, INFINITY);
}

TEST(ReuseRowValues, NotWhenWhatTheValueReadsChangesBetweenTheLoops) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = 0.0\n"
                "  var s = 0.0\n  for j in 0..c:\n   s += exp(x[i, j] - m)\n  m = 1.0\n"
                "  for j in 0..c:\n   out[i, j] = exp(x[i, j] - m) / s\n }\n}"),
      {{"r", 2}, {"c", 3}});
  EXPECT_EQ(cir::print(cir::reuse_row_values(k)).find("%row"), std::string::npos);
}

TEST(ReuseRowValues, NotWhenTheWritingLoopComputesSomethingElse) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var s = 0.0\n"
                "  for j in 0..c:\n   s += exp(x[i, j])\n  for j in 0..c:\n   out[i, j] = x[i, j] / s\n }\n}"),
      {{"r", 2}, {"c", 3}});
  EXPECT_EQ(cir::print(cir::reuse_row_values(k)).find("%row"), std::string::npos);
}

}  // namespace
}  // namespace zyntax
