// Tile programs as the GPU plan scalarizes them, for the tests of the
// passes that follow (fuse_product_epilogues, map_in_place).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "cir/passes/freeze_invariant_vars.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "schedule_parity.hpp"

namespace zyntax::testing {

// `body` (in a loop over h, on tiles A[h]: [n, d] and B[h]: [m, d]) with
// tile products as dot products and its unchanging tile shapes frozen.
inline cir::Kernel scalarized_tiles(const std::string& body, int64_t n, int64_t m, int64_t d) {
  cir::Kernel k = cir::specialize(kernel_of("def f(A: tensor[bh, n, d, f32], B: tensor[bh, m, d, f32]) {\n"
                                            " return compute(A, B) {\n  @kernel fused\n  for h in 0..bh:\n" +
                                            body + "\n }\n}"),
                                  {{"bh", 2}, {"n", n}, {"m", m}, {"d", d}, {"A.d0", 2}, {"A.d1", n}, {"A.d2", d}, {"B.d0", 2}, {"B.d1", m}, {"B.d2", d}});
  std::string why;
  std::optional<cir::Kernel> loops = cir::scalarize_tiles(k, &why, cir::ProductOrder::DotProducts);
  EXPECT_TRUE(loops) << why;
  return cir::freeze_invariant_vars(loops.value_or(k));
}

// Whether two kernels give bit-identical results on the reference for the same random inputs.
inline void expect_identical_results(const cir::Kernel& before, const cir::Kernel& after) {
  Random rng(5);
  auto [inputs, scalars] = inputs_for(before, rng);
  Tensor x = ReferenceKernel(before).run(inputs, scalars), y = ReferenceKernel(after).run(inputs, scalars);
  EXPECT_EQ(x.shape(), y.shape());
  for (int64_t i = 0; i < x.numel() && x.shape() == y.shape(); ++i) EXPECT_EQ(x.get_f64(i), y.get_f64(i)) << "element " << i;
}

// `after` printed, once the reference has given it exactly `before`'s result.
inline std::string checked_text(const cir::Kernel& before, const cir::Kernel& after) {
  expect_identical_results(before, after);
  return cir::print(after);
}

}  // namespace zyntax::testing
