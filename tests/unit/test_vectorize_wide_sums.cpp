// cir/passes/vectorize_wide_sums: a serial innermost loop that adds f32
// values into an f64 sum is vectorised at the f32 width; others are not.
#include <gtest/gtest.h>

#include "cir/passes/vectorize_wide_sums.hpp"
#include "cir/printer.hpp"
#include "kernel_source.hpp"

namespace zyntax {
namespace {

const cir::For* innermost(const cir::Block& b) {
  for (const cir::Stmt& s : b)
    if (const cir::For* f = s.as<cir::For>()) {
      const cir::For* inner = innermost(f->body);
      return inner ? inner : f;
    }
  return nullptr;
}

// Two vectors of the f32 width: four accumulator registers in flight.
TEST(VectorizeWideSums, AnF64SumOfF32ValuesTakesTwiceTheF32Width) {
  cir::Kernel k = testing::kernel_of(
      "def f(x: tensor[n, m, f32]) {\n return compute(x) {\n  for i in 0..n:\n   var s: f64 = 0.0\n   for j in 0..m:\n"
      "    s += f64(exp(x[i, j]))\n   out[i] = f32(s)\n }\n}");
  cir::Kernel v = cir::vectorize_wide_sums(k, 256);
  const cir::For* f = innermost(v.body);
  ASSERT_NE(f, nullptr) << cir::print(v);
  EXPECT_EQ(f->loop_kind, cir::LoopKind::Vectorized) << cir::print(v);
  EXPECT_EQ(f->factor, 16);
}

TEST(VectorizeWideSums, SumsAsWideAsTheirValuesAreLeftAlone) {
  cir::Kernel k = testing::kernel_of(
      "def f(x: tensor[n, m, f32]) {\n return compute(x) {\n  for i in 0..n:\n   var s = 0.0\n   for j in 0..m:\n"
      "    s += exp(x[i, j])\n   out[i] = s\n }\n}");
  cir::Kernel v = cir::vectorize_wide_sums(k, 256);
  EXPECT_EQ(cir::print(v), cir::print(k));
}

}  // namespace
}  // namespace zyntax
