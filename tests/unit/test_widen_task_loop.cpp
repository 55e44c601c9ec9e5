// widen_task_loop: an outer parallel loop of too few iterations for the
// threads merges with the parallel loop inside it (whole, or in blocks when
// that loop is innermost), and the kernel computes exactly what it did.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/registry.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/passes/widen_task_loop.hpp"
#include "cir/printer.hpp"
#include "backends/cpu/cpu_device.hpp"
#include "host_plan.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

// Rows of a batch less their maximum: a row loop that holds loops.
const char* kRowShift =
    "def f(x: tensor[b, r, c, f32]) {\n return compute(x) {\n @kernel fused\n for n in 0..b, i in 0..r:\n"
    "  var m = -inf\n  for j in 0..c:\n   m = max(m, x[n, i, j])\n"
    "  for j in 0..c:\n   out[n, i, j] = x[n, i, j] - m\n }\n}";

// An element-wise map: its inner loop is innermost.
const char* kAffine =
    "def f(x: tensor[b, c, f32]) {\n return compute(x) {\n @kernel fused\n for n in 0..b, j in 0..c:\n"
    "  out[n, j] = x[n, j] * 2.0 + 1.0\n }\n}";

void expect_same_results(const cir::Kernel& before, const cir::Kernel& after, const Shape& shape) {
  Random rng(7);
  Tensor x = rand_normal(rng, DType::F32, shape);
  Tensor want = ReferenceKernel(before).run({x}, {});
  Tensor got = ReferenceKernel(after).run({x}, {});
  ASSERT_EQ(want.nbytes(), got.nbytes());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.nbytes()), 0) << cir::print(after);
}

TEST(WidenTaskLoop, RowLoopMergesWholeWithABatchOfOne) {
  cir::Kernel k = cir::specialize(kernel_of(kRowShift), {{"b", 1}, {"r", 5}, {"c", 7}});
  cir::Kernel w = cir::widen_task_loop(k, 8);
  std::string text = cir::print(w);
  EXPECT_NE(text.find("parallel for n%i in 0..5 {\n    let n: i64 = n%i / 5\n    let i: i64 = n%i % 5\n"),
            std::string::npos)
      << text;
  expect_same_results(k, w, {1, 5, 7});
}

// A let between the loops moves into the merged loop, after the outer
// variable it reads.
TEST(WidenTaskLoop, LetsBetweenTheLoopsMoveInside) {
  cir::Kernel k = cir::specialize(kernel_of(kAffine), {{"b", 2}, {"c", 300}});
  auto outer = k.body[0].as<cir::For>();
  cir::Expr n = cir::Var::make("n", cir::Type::scalar(DType::I64));
  cir::Block body = {cir::make_let("base", cir::simplify(n * cir::i64(300))), outer->body[0]};
  k.body = {cir::make_for(outer->var, outer->lo, outer->hi, outer->step, body, outer->loop_kind)};
  cir::Kernel w = cir::widen_task_loop(k, 8);
  std::string text = cir::print(w);
  EXPECT_NE(text.find("parallel for n%j in 0..10 {\n    let n: i64 = n%j / 5\n    let base: i64 = n * 300\n"
                      "    parallel for j in n%j % 5 * 64..min(300, n%j % 5 * 64 + 64) {"),
            std::string::npos)
      << text;
  expect_same_results(k, w, {2, 300});
}

// Two images of three rows merge into six iterations, still short of eight,
// but the merged body is no single loop: widening stops there.
TEST(WidenTaskLoop, StopsWhereTheBodyIsNoSingleParallelLoop) {
  cir::Kernel k = cir::specialize(kernel_of(kRowShift), {{"b", 2}, {"r", 3}, {"c", 7}});
  cir::Kernel w = cir::widen_task_loop(k, 8);
  std::string text = cir::print(w);
  EXPECT_NE(text.find("parallel for n%i in 0..6 {"), std::string::npos) << text;
  expect_same_results(k, w, {2, 3, 7});
}

// Three rows of 37 for eight tasks: four blocks of 12 (a multiple of the
// block of 4) per row, the last one cut at 37.
TEST(WidenTaskLoop, InnermostLoopMergesInBlocks) {
  cir::Kernel k = cir::specialize(kernel_of(kAffine), {{"b", 3}, {"c", 37}});
  cir::Kernel w = cir::widen_task_loop(k, 8, 4);
  std::string text = cir::print(w);
  EXPECT_NE(text.find("parallel for n%j in 0..12 {\n    let n: i64 = n%j / 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("parallel for j in n%j % 4 * 12..min(37, n%j % 4 * 12 + 12) {"), std::string::npos) << text;
  expect_same_results(k, w, {3, 37});
}

TEST(WidenTaskLoop, LeftAloneWhereThereIsEnoughWorkOrNoWayToSplit) {
  cir::Kernel enough = cir::specialize(kernel_of(kRowShift), {{"b", 8}, {"r", 3}, {"c", 7}});
  EXPECT_EQ(cir::print(cir::widen_task_loop(enough, 8)), cir::print(enough));
  // A row shorter than one block cannot be split.
  cir::Kernel narrow = cir::specialize(kernel_of(kAffine), {{"b", 1}, {"c", 60}});
  EXPECT_EQ(cir::print(cir::widen_task_loop(narrow, 8)), cir::print(narrow));
  // An inner range that depends on the outer variable is not a fixed number
  // of iterations per outer one.
  cir::Kernel triangle = cir::specialize(
      kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..2:\n"
                "  for j in 0..i + 3:\n   out[i * 4 + j] = x[i * 4 + j] + 1.0\n }\n}"),
      {{"x.d0", 8}});
  EXPECT_EQ(cir::print(cir::widen_task_loop(triangle, 8)), cir::print(triangle));
  // A reduce kernel's tasks each keep a partial result.
  cir::Kernel sum = cir::specialize(
      kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(+)\n for i in 0..n:\n"
                "  yield x[i]\n }\n}"),
      {{"n", 3}});
  EXPECT_EQ(cir::print(cir::widen_task_loop(sum, 8)), cir::print(sum));
}

// The CPU device on three threads plans the widened loop and computes what
// the reference does, at odd sizes.
TEST(WidenTaskLoop, CpuDeviceMatchesTheReferenceForABatchOfOne) {
  std::unique_ptr<Device> cpu = make_llvm_cpu_device("cpu:widen", 3);
  device_registry().lend_fallbacks(*cpu);  // where what it cannot run goes
  Device* ref = device_registry().find("cpu:reference");
  Random rng(11);
  struct Case {
    const char* source;
    Shape shape;
    const char* merged;
  };
  for (const Case& c : {Case{kRowShift, {1, 7, 33}, "parallel for n%i in 0..7"},
                        Case{kRowShift, {1, 37, 5}, "parallel for n%i in 0..37"},
                        Case{kAffine, {1, 1031}, "parallel for n%j in 0..17"},
                        Case{kAffine, {2, 777}, "parallel for n%j in 0..14"}}) {
    CompiledCompute compiled(kernel_of(c.source));
    std::map<std::string, int64_t> dims = {{"b", c.shape[0]}};
    if (c.shape.size() == 3) dims.insert({{"r", c.shape[1]}, {"c", c.shape[2]}});
    else dims.insert({"c", c.shape[1]});
    CpuPlan plan = testing::host_cpu_plan(cir::specialize(compiled.generic(), dims), 3);
    ASSERT_TRUE(plan.kernel.has_value()) << plan.why_not;
    EXPECT_NE(cir::print(*plan.kernel).find(c.merged), std::string::npos) << cir::print(*plan.kernel);
    Tensor x = rand_normal(rng, DType::F32, c.shape);
    Tensor want = compiled.launch(*ref, {x}, {}, {});
    Tensor got = compiled.launch(*cpu, {x}, {}, {});
    ASSERT_EQ(want.nbytes(), got.nbytes());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.nbytes()), 0) << shape_str(c.shape);
  }
}

}  // namespace
}  // namespace zyntax
