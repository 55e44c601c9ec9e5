// jam_row_sums: a parallel loop of long row sums (a matrix times a vector,
// a row sum) computes several rows in one pass over k. The plan's form,
// what it leaves alone (short rows, too few rows, rows with more than one
// sum), and values on the CPU device against the reference executor and
// against the plan without it (`sumrows=1`), rows that do not fill a group
// included.
#include <gtest/gtest.h>

#include "backends/reference/reference_executor.hpp"
#include "backends/registry.hpp"
#include "cir/hash.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "kernel_source.hpp"
#include "plan/cpu_plan.hpp"
#include "runtime/tensor_ops.hpp"
#include "runtime/tuner.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;
using testing::kRowSoftmax;

const char* const kMatmul = testing::kPlainMatmul;
const char* kRowSum =
    "def f(x: tensor[R, C, f32]) {\n return compute(x) {\n @kernel fused\n"
    " for i in 0..R:\n  var s = 0.0\n  for j in 0..C:\n   s += x[i, j] * x[i, j]\n  out[i] = s\n }\n}";

int vector_bits() { return codegen::CpuJit::instance().target().vector_bits; }

TuningChoice rows_at_once(int64_t n) { return *TuningChoice::parse("sumrows=" + std::to_string(n)); }

// 4099 rows of a matrix-vector product: 512 groups of eight, their sums
// updated in one k loop, and the last three rows in a loop of their own.
TEST(JamRowSums, AMatrixTimesAVectorSumsEightRowsInOneLoop) {
  cir::Kernel k = cir::specialize(kernel_of(kMatmul), {{"M", 4099}, {"K", 1000}, {"N", 1}});
  CpuPlan plan = plan_cpu_kernel(k, 2, vector_bits());
  ASSERT_TRUE(plan.kernel);
  std::string text = cir::print(*plan.kernel);
  EXPECT_NE(text.find("parallel for i%rows in 0..512 {"), std::string::npos) << text;
  EXPECT_NE(text.find("sum%7 = sum%7 + A[i%rows * 8 + 7, k] * B[k, j]"), std::string::npos) << text;
  EXPECT_NE(text.find("parallel for i%rest in 4096..4099 {"), std::string::npos) << text;
  CpuPlan plain = plan_cpu_kernel(k, 2, vector_bits(), rows_at_once(1));
  ASSERT_TRUE(plain.kernel);
  EXPECT_EQ(cir::print(*plain.kernel).find("%rows"), std::string::npos) << cir::print(*plain.kernel);
}

// Rows shorter than 256 stay cached or too short to overlap, fewer than
// two groups of rows leave nothing to gain, and a row with several sums
// (softmax) is not one running sum: all keep their loops.
TEST(JamRowSums, ShortRowsFewRowsAndSeveralSumsAreLeftAlone) {
  auto planned = [](const char* src, int64_t r, int64_t c) {
    CpuPlan plan = plan_cpu_kernel(cir::specialize(kernel_of(src), {{"R", r}, {"C", c}}), 2, vector_bits());
    EXPECT_TRUE(plan.kernel);
    return plan.kernel ? cir::print(*plan.kernel) : "";
  };
  for (auto [r, c, src] : {std::tuple{4096, 255, kRowSum}, std::tuple{15, 4096, kRowSum}, std::tuple{4096, 1000, kRowSoftmax}}) {
    std::string text = planned(src, r, c);
    EXPECT_EQ(text.find("%rows"), std::string::npos) << r << "x" << c << "\n" << text;
  }
  std::string text = planned(kRowSum, 16, 256);
  EXPECT_NE(text.find("parallel for i%rows in 0..2 {"), std::string::npos) << text;
}

// On the CPU device: the reference's values, and the plan without the pass
// within rounding, for every group size, at odd sizes.
TEST(JamRowSums, MatchesTheReferenceAndThePlanWithoutIt) {
  Device* cpu = device_registry().find("cpu");
  ASSERT_NE(cpu, nullptr);
  Random rng(29);
  std::vector<testing::KernelCase> cases;
  for (auto [m, k] : {std::pair{16, 256}, std::pair{37, 1001}, std::pair{1001, 257}, std::pair{4099, 300}})
    cases.push_back({cir::specialize(kernel_of(kMatmul), {{"M", m}, {"K", k}, {"N", 1}}),
                     {rand_uniform(rng, DType::F32, {m, k}, -1, 1), rand_uniform(rng, DType::F32, {k, 1}, -1, 1)}});
  for (auto [r, c] : {std::pair{19, 4097}, std::pair{1003, 300}})
    cases.push_back({cir::specialize(kernel_of(kRowSum), {{"R", r}, {"C", c}}), {rand_uniform(rng, DType::F32, {r, c}, -1, 1)}});
  for (const testing::KernelCase& c : cases) {
    SCOPED_TRACE(cir::print(c.kernel).substr(0, 120));
    Tensor want = ReferenceKernel(c.kernel).run(c.inputs, {});
    uint64_t key = cir::hash_kernel(c.kernel);
    Device::Attempt base = cpu->execute_choice(c.kernel, key, rows_at_once(1), c.inputs, {});
    ASSERT_EQ(base.outcome, Device::Outcome::Done);
    EXPECT_EQ(compare_outputs(want, base.result), "");
    for (int64_t n : {2, 3, 4, 8, 16}) {
      Device::Attempt a = cpu->execute_choice(c.kernel, key, rows_at_once(n), c.inputs, {});
      ASSERT_EQ(a.outcome, Device::Outcome::Done) << n << " rows at once";
      EXPECT_EQ(compare_outputs(want, a.result), "") << n << " rows at once";
      EXPECT_EQ(compare_outputs(base.result, a.result), "") << n << " rows at once";
    }
  }
}

}  // namespace
}  // namespace zyntax
