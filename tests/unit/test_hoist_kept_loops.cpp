// hoist_kept_loops: a reduce kernel's kept loops go outside its reduced
// ones as parallel loops; each output element receives its values in the
// same order, so the reference gives the same bits before and after.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cir/passes/hoist_kept_loops.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "gpu_targets.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

void expect_identical(const cir::Kernel& a, const cir::Kernel& b, const std::vector<Tensor>& inputs) {
  Tensor x = ReferenceKernel(a).run(inputs, {}), y = ReferenceKernel(b).run(inputs, {});
  ASSERT_EQ(x.shape(), y.shape());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.nbytes()), 0) << cir::print(b);
}

TEST(HoistKeptLoops, ColumnReductionsBecomeAParallelLoopOverColumns) {
  Random rng(5);
  Tensor m = rand_normal(rng, DType::F32, {37, 11});
  m.set(40, Scalar::of_float(NAN, DType::F32));
  for (const char* op : {"+", "min", "argmax"}) {
    bool arg = std::string(op) == "argmax";
    cir::Kernel k = cir::specialize(kernel_of(std::string("def f(m: tensor[r, c, f32]) {\n return compute(m) {\n @kernel reduce(") + op +
                                              ", axis=0)\n for i in 0..r, j in 0..c:\n  yield " + (arg ? "(m[i, j], i)" : "m[i, j]") + "\n }\n}"),
                                    {{"r", 37}, {"c", 11}});
    cir::Kernel h = cir::hoist_kept_loops(k);
    std::string text = cir::print(h);
    EXPECT_NE(text.find("  parallel for j in 0..11 {\n    for i in 0..37 {"), std::string::npos) << text;
    expect_identical(k, h, {m});
  }
}

TEST(HoistKeptLoops, AMiddleAxisKeepsTheOuterAndInnerLoopsParallel) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[a, r, c, f32]) {\n return compute(x) {\n @kernel reduce(+, axis=1)\n for h in 0..a, i in 0..r, j in 0..c:\n"
                "  yield x[h, i, j] * x[h, i, j]\n }\n}"),
      {{"a", 3}, {"r", 50}, {"c", 7}});
  cir::Kernel h = cir::hoist_kept_loops(k);
  std::string text = cir::print(h);
  EXPECT_NE(text.find("parallel for h in 0..3 {\n    parallel for j in 0..7 {\n      for i in 0..50 {"), std::string::npos) << text;
  Random rng(6);
  expect_identical(k, h, {rand_normal(rng, DType::F32, {3, 50, 7})});
  // On the GPU: one thread per output element, in collapsed order.
  GpuPlan plan = gpu_plan(k, testing::test_gpu_target());
  ASSERT_TRUE(plan.kernel) << plan.why_not;
  EXPECT_EQ(plan.schedule, GpuSchedule::Threads);
}

TEST(HoistKeptLoops, LeavesKernelsInOrderOrOfOtherFormsAlone) {
  // Already kept-outside: the same kernel back.
  cir::Kernel rows = cir::specialize(
      kernel_of("def f(m: tensor[r, c, f32]) {\n return compute(m) {\n @kernel reduce(+, axis=1)\n for i in 0..r, j in 0..c:\n  yield m[i, j]\n }\n}"),
      {{"r", 3}, {"c", 4}});
  EXPECT_EQ(cir::print(cir::hoist_kept_loops(rows)), cir::print(rows));
  // Not a reduce kernel.
  cir::Kernel fused = cir::specialize(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..n:\n  out[i] = x[i]\n }\n}"),
                                      {{"n", 4}});
  EXPECT_EQ(cir::print(cir::hoist_kept_loops(fused)), cir::print(fused));
}

}  // namespace
}  // namespace zyntax
