// writes_whole_output: which kernels may skip zero-filling their output.
#include <gtest/gtest.h>

#include "cir/output_coverage.hpp"
#include "cir/passes/specialize.hpp"
#include "kernel_source.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

bool covers(const std::string& src, const std::map<std::string, int64_t>& dims) {
  return cir::writes_whole_output(cir::specialize(kernel_of(src), dims));
}

TEST(OutputCoverage, ElementwiseMatmulAndRowKernelsWriteEverything) {
  EXPECT_TRUE(covers("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 2.0\n }\n}",
                     {{"n", 10}}));
  EXPECT_TRUE(covers("def f(A: tensor[M, K, f32], B: tensor[K, N, f32]) {\n return compute(A, B) {\n @kernel matmul\n"
                     " for i in 0..M, j in 0..N:\n  var s = 0.0\n  for k in 0..K:\n   s += A[i, k] * B[k, j]\n  out[i, j] = s\n }\n}",
                     {{"M", 3}, {"K", 4}, {"N", 5}}));
  EXPECT_TRUE(covers("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n"
                     "  for j in 0..c:\n   m = max(m, x[i, j])\n  for j in 0..c:\n   out[i, j] = x[i, j] - m\n }\n}",
                     {{"r", 3}, {"c", 4}}));
}

TEST(OutputCoverage, PartialOrConditionalWritesDoNot) {
  // Under an `if`.
  EXPECT_FALSE(covers("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
                      "  if x[i] > 0.0:\n   out[i] = x[i]\n }\n}",
                      {{"n", 10}}));
  // Not at the loop variable itself.
  EXPECT_FALSE(covers("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..n - 1:\n"
                      "  out[i + 1] = x[i]\n }\n}",
                      {{"n", 10}}));
  // A reduction writes through its accumulators.
  EXPECT_FALSE(covers("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(+)\n for i in 0..n:\n  yield x[i]\n }\n}",
                      {{"n", 10}}));
}

}  // namespace
}  // namespace zyntax
