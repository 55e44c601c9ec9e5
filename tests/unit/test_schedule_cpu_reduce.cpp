// schedule_cpu_reduce: a whole-tensor reduction split into contiguous
// chunks, one per task, each folded in a register and yielded once. The cpu
// device (three threads, so tasks meet in the accumulator at once) against
// the reference executor at odd sizes, for sums, products, min and max over
// floats and integers, a nest of loops, and NaN; the plan's shape; and what
// stays as it is.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/registry.hpp"
#include "cir/passes/schedule_cpu_reduce.hpp"
#include "cir/passes/specialize.hpp"
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

std::string reduce_source(const std::string& op, const std::string& dtype, const std::string& value) {
  return "def f(x: tensor[n, " + dtype + "]) {\n return compute(x) {\n @kernel reduce(" + op + ")\n for i in 0..n:\n  yield " + value +
         "\n }\n}";
}

TEST(ScheduleCpuReduce, ChunksPerTaskFoldedInARegister) {
  cir::Kernel k = cir::specialize(kernel_of(reduce_source("+", "f32", "x[i] * x[i]")), {{"n", 100003}});
  std::optional<cir::Kernel> s = cir::schedule_cpu_reduce(k, 8);
  ASSERT_TRUE(s);
  std::string text = cir::print(*s);
  EXPECT_NE(text.find("parallel for task%r in 0..8 {\n    var yield%p: f64 = f64(0.0)\n"
                      "    for i in task%r * 12501..min(100003, task%r * 12501 + 12501) {\n"
                      "      yield%p = yield%p + f64(x[i] * x[i])\n    }\n    yield yield%p\n"),
            std::string::npos)
      << text;
  // Fewer tasks where chunks would be short; one for a short loop.
  EXPECT_NE(cir::print(*cir::schedule_cpu_reduce(k, 64)).find("parallel for task%r in 0..12 {"), std::string::npos);
  cir::Kernel small = cir::specialize(kernel_of(reduce_source("+", "f32", "x[i]")), {{"n", 100}});
  EXPECT_NE(cir::print(*cir::schedule_cpu_reduce(small, 8)).find("parallel for task%r in 0..1 {"), std::string::npos);
  // f64 partials as wide as an f64 sum: one task, so runs repeat bit for bit.
  cir::Kernel wide = cir::specialize(kernel_of(reduce_source("+", "f64", "x[i]")), {{"n", 100003}});
  EXPECT_NE(cir::print(*cir::schedule_cpu_reduce(wide, 8)).find("parallel for task%r in 0..1 {"), std::string::npos);
}

TEST(ScheduleCpuReduce, LeavesOtherReductionsAsTheyAre) {
  std::string why;
  cir::Kernel arg = cir::specialize(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(argmax)\n"
                                              " for i in 0..n:\n  yield (x[i], i)\n }\n}"),
                                    {{"n", 10}});
  EXPECT_FALSE(cir::schedule_cpu_reduce(arg, 8, 1, &why));
  EXPECT_EQ(why, "a reduce(argmax) kernel: tasks fold with + * min max");
  cir::Kernel rows = cir::specialize(kernel_of("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel reduce(+, axis=1)\n"
                                               " for i in 0..r, j in 0..c:\n  yield x[i, j]\n }\n}"),
                                     {{"r", 4}, {"c", 5}});
  EXPECT_FALSE(cir::schedule_cpu_reduce(rows, 8, 1, &why));
}

struct Case {
  std::string op, dtype, value;
  int64_t n;
};

// The cpu device's result against the reference's: exact for integers and
// for min and max; float sums and products within rounding of their
// partials (f32 ones are folded in f64, so they match to the last bit but
// for a result within an f64 rounding of an f32 boundary).
TEST(ScheduleCpuReduce, CpuDeviceMatchesTheReference) {
  std::unique_ptr<Device> cpu = make_llvm_cpu_device("cpu:reduce", 3);
  device_registry().lend_fallbacks(*cpu);  // where what it cannot run goes
  Device* ref = device_registry().find("cpu:reference");
  Random rng(9);
  std::vector<Case> cases;
  for (int64_t n : {1, 7, 8193, 100003, 300001}) {
    cases.push_back({"+", "f32", "x[i] * x[i]", n});
    cases.push_back({"+", "f64", "x[i]", n});
    cases.push_back({"*", "f32", "1.0 + x[i] * 0.001", n});
    cases.push_back({"min", "f32", "x[i]", n});
    cases.push_back({"max", "f64", "x[i] * 2.0", n});
    cases.push_back({"+", "i32", "i32(x[i] * 100.0)", n});
    cases.push_back({"max", "i64", "i64(x[i] * 1000.0)", n});
  }
  for (const Case& c : cases) {
    std::string what = "reduce(" + c.op + ") of " + c.value + " over " + std::to_string(c.n) + " " + c.dtype;
    std::string in_dtype = c.dtype == "f64" ? "f64" : "f32";
    CompiledCompute compiled(kernel_of(reduce_source(c.op, in_dtype, c.value)));
    CpuPlan plan = testing::host_cpu_plan(cir::specialize(compiled.generic(), {{"n", c.n}}), 3);
    ASSERT_TRUE(plan.kernel) << what << ": " << plan.why_not;
    EXPECT_NE(cir::print(*plan.kernel).find("task%r"), std::string::npos) << what;
    Tensor x = rand_normal(rng, in_dtype == "f64" ? DType::F64 : DType::F32, {c.n});
    Tensor want = compiled.launch(*ref, {x}, {}, {});
    Tensor got = compiled.launch(*cpu, {x}, {}, {});
    ASSERT_EQ(want.dtype(), got.dtype()) << what;
    Scalar w = want.get(0), g = got.get(0);
    if (is_float(want.dtype()) && (c.op == "+" || c.op == "*")) {
      // f32: two units in the last place; f64: the rounding of a sum of n
      // terms below 5 each.
      double bound = want.dtype() == DType::F32 ? 2.5e-7 * std::fabs(w.f) : 1e-13 * 5.0 * static_cast<double>(c.n);
      EXPECT_NEAR(g.f, w.f, bound) << what;
    } else {
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.nbytes()), 0) << what << ": " << g.f << " " << g.i << " vs " << w.f << " " << w.i;
    }
  }
}

// A nest of loops merges into one before it is split, and a NaN anywhere
// wins a max wherever its chunk is.
TEST(ScheduleCpuReduce, NestsAndNaN) {
  std::unique_ptr<Device> cpu = make_llvm_cpu_device("cpu:reduce", 3);
  device_registry().lend_fallbacks(*cpu);  // where what it cannot run goes
  Device* ref = device_registry().find("cpu:reference");
  CompiledCompute compiled(kernel_of("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel reduce(max)\n"
                                     " for i in 0..r, j in 0..c:\n  yield x[i, j]\n }\n}"));
  Random rng(4);
  for (int64_t at : {-1, 0, 77777, 200 * 1001 - 1}) {
    Tensor x = rand_normal(rng, DType::F32, {200, 1001});
    if (at >= 0) x.set(at, Scalar::of_float(NAN, DType::F32));
    Tensor want = compiled.launch(*ref, {x}, {}, {});
    Tensor got = compiled.launch(*cpu, {x}, {}, {});
    if (at >= 0)
      EXPECT_TRUE(std::isnan(got.get(0).f)) << at;
    else
      EXPECT_EQ(got.get(0).f, want.get(0).f);
  }
  CpuPlan plan = testing::host_cpu_plan(cir::specialize(compiled.generic(), {{"r", 200}, {"c", 1001}}), 3);
  ASSERT_TRUE(plan.kernel);
  EXPECT_NE(cir::print(*plan.kernel).find("parallel for task%r in 0..12 {"), std::string::npos) << cir::print(*plan.kernel);
}

}  // namespace
}  // namespace zyntax
