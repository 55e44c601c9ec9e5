// Loops whose trip count is near or past what hi - lo + step - 1 can hold in
// 64 bits: every device runs them as the reference does (the count taken as
// (hi - lo - 1) / step + 1 in unsigned arithmetic).
#include <gtest/gtest.h>

#include "backends/registry.hpp"
#include "kernel_source.hpp"
#include "runtime/launch.hpp"

namespace zyntax {
namespace {

TEST(LoopTripCounts, StepsAndRangesNearTheLimitRunAsTheReference) {
  // Each adds up the iterations' values (scaled down) of a loop that
  // overflowed the old count: one step of 2^63 - 1; a range of 2^63 - 1
  // by steps of 2^61; a range that starts near -2^63.
  const char* src =
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  var c = 0\n"
      "  for j in 0..16 step 9223372036854775807:\n   c += 1\n"
      "  for j in 0..9223372036854775807 step 2305843009213693952:\n   c += 10\n"
      "  for j in -9223372036854775807..-9223372036854775800 step 3:\n   c += 100\n"
      "  out[i] = x[i] + c\n }\n}";
  CompiledCompute compiled(testing::kernel_of(src));
  Tensor x = Tensor::full(DType::F32, {3}, Scalar::of_float(0.5, DType::F32));
  Tensor want = compiled.launch(*device_registry().find("cpu:reference"), {x}, {}, {});
  ASSERT_EQ(want.get(0).f, 0.5 + 1 + 40 + 300);
  for (const char* id : {"cpu", "cpu:0", "vulkan:0"}) {
    Device* d = device_registry().find(id);
    if (!d) continue;
    Tensor got = compiled.launch(*d, {x}, {}, {});
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(got.get(i).f, want.get(i).f) << id << " element " << i;
  }
}

}  // namespace
}  // namespace zyntax
