// cir::count_flops on kernels lowered from ZynML: a matrix product's 2mnk,
// an element-wise map's operations per element, and unknown where a tile's
// size depends on a loop.
#include <gtest/gtest.h>

#include "cir/flop_count.hpp"
#include "cir/passes/specialize.hpp"
#include "driver/session.hpp"
#include "lower/check_program.hpp"

namespace zyntax {
namespace {

cir::Kernel lowered(const std::string& src, const std::map<std::string, int64_t>& dims) {
  Session session;
  LoadedModule* m = session.load_text("k.zynml", src);
  std::vector<CheckedKernel> kernels;
  EXPECT_TRUE(m && check_program(session, *m, &kernels)) << session.diags().render_all();
  return cir::specialize(kernels.at(0).kernel, dims);
}

TEST(CirFlopCount, MatrixProductIsTwoMnk) {
  cir::Kernel k = lowered(R"(
def mm(a: tensor[m, k, f32], b: tensor[k, n, f32]) {
    return compute(a, b) {
        @kernel matmul
        for i in 0..m, j in 0..n:
            let mut s = 0.0
            for p in 0..k:
                s += a[i, p] * b[p, j]
            out[i, j] = s
    }
})", {{"m", 3}, {"k", 5}, {"n", 7}});
  EXPECT_EQ(cir::count_flops(k), 2.0 * 3 * 5 * 7);
}

TEST(CirFlopCount, ElementwiseCountsEachFloatOperation) {
  cir::Kernel k = lowered(R"(
def f(x: tensor[n, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = exp(x[i]) * 2.0 + x[i]
    }
})", {{"n", 10}});
  EXPECT_EQ(cir::count_flops(k), 30.0);  // exp, *, + per element
}

TEST(CirFlopCount, IntegerIndexArithmeticIsNotCounted) {
  cir::Kernel k = lowered(R"(
def f(x: tensor[n, i64]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i] * 3 + 1
    }
})", {{"n", 10}});
  EXPECT_EQ(cir::count_flops(k), 0.0);
}

}  // namespace
}  // namespace zyntax
