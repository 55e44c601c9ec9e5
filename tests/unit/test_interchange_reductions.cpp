// interchange_reductions' jam: the reduction loop unrolled into the vector
// loop of an interchanged reduction (a matrix-vector product, a product
// down each column). Each running value must still take its terms in order, so every
// jam gives the bits of jam 1, for trip counts that the unroll divides and
// ones it does not (fewer than one unrolled step included), and the values
// of the reference executor. Matrices times fewer than four vectors keep
// their reduction loop, and so do sums along rows.
#include <gtest/gtest.h>

#include "backends/reference/reference_executor.hpp"
#include "backends/registry.hpp"
#include "cir/hash.hpp"
#include "cir/passes/interchange_reductions.hpp"
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
// A running product down each column: the reduction's op is not an add.
const char* kColumnProduct =
    "def f(x: tensor[R, C, f32]) {\n return compute(x) {\n @kernel fused\n"
    " for j in 0..C:\n  var m = 1.0\n  for r in 0..R:\n   m = m * (x[r, j] * 0.01 + 1.0)\n  out[j] = m\n }\n}";

// Sums along each row and down each column.
const char* kRowSum =
    "def f(x: tensor[R, C, f32]) {\n return compute(x) {\n @kernel fused\n"
    " for i in 0..R:\n  var s = 0.0\n  for j in 0..C:\n   s += x[i, j]\n  out[i] = s\n }\n}";
const char* kColumnSum =
    "def f(x: tensor[R, C, f32]) {\n return compute(x) {\n @kernel fused\n"
    " for j in 0..C:\n  var s = 0.0\n  for i in 0..R:\n   s += x[i, j]\n  out[j] = s\n }\n}";

// A softmax down each column (its max, its sum of exponentials, each
// element) and a max down each column written as max(m, x); a softmax
// along each row is testing::kRowSoftmax.
const char* kColumnSoftmax =
    "def f(x: tensor[R, C, f32]) {\n return compute(x) {\n @kernel fused\n for j in 0..C:\n  var m = -inf\n"
    "  for i in 0..R:\n   m = max(m, x[i, j])\n  var s = 0.0\n  for i in 0..R:\n   s += exp(x[i, j] - m)\n"
    "  for i in 0..R:\n   out[i, j] = exp(x[i, j] - m) / s\n }\n}";
const char* kColumnMax =
    "def f(x: tensor[R, C, f32]) {\n return compute(x) {\n @kernel fused\n"
    " for j in 0..C:\n  var m = -inf\n  for i in 0..R:\n   m = max(m, x[i, j])\n  out[j] = m\n }\n}";

int vector_bits() { return codegen::CpuJit::instance().target().vector_bits; }

TuningChoice jam(int64_t n) { return *TuningChoice::parse("jam=" + std::to_string(n)); }

// The plan with jam 4 has the unrolled loop (step 4) and the loop for the rest.
TEST(InterchangeReductions, JamUnrollsTheReductionLoopIntoTheVectorLoop) {
  cir::Kernel k = cir::specialize(kernel_of(kMatmul), {{"M", 1}, {"K", 4099}, {"N", 515}});
  CpuPlan jammed = plan_cpu_kernel(k, 2, vector_bits(), jam(4));
  CpuPlan plain = plan_cpu_kernel(k, 2, vector_bits(), jam(1));
  ASSERT_TRUE(jammed.kernel && plain.kernel);
  std::string text = cir::print(*jammed.kernel);
  EXPECT_NE(text.find("0..4096 step 4"), std::string::npos) << text;
  EXPECT_NE(text.find("4096..4099"), std::string::npos) << text;
  EXPECT_EQ(cir::print(*plain.kernel).find("step 4"), std::string::npos);
  CpuPlan column = plan_cpu_kernel(cir::specialize(kernel_of(kColumnProduct), {{"R", 301}, {"C", 1000}}), 2, vector_bits(), jam(4));
  ASSERT_TRUE(column.kernel);
  EXPECT_NE(cir::print(*column.kernel).find("300..301"), std::string::npos) << cir::print(*column.kernel);
}

// A matrix times one, two or three vectors keeps its reduction loop,
// which vectorises as a running sum; from four columns the loop turns.
TEST(InterchangeReductions, FewColumnsKeepTheReductionLoop) {
  for (int64_t n : {1, 2, 3, 4}) {
    CpuPlan plan = plan_cpu_kernel(cir::specialize(kernel_of(kMatmul), {{"M", 1}, {"K", 1000}, {"N", n}}), 2, vector_bits());
    ASSERT_TRUE(plan.kernel);
    EXPECT_EQ(cir::print(*plan.kernel).find("sumacc") != std::string::npos, n >= 4) << n << " columns\n" << cir::print(*plan.kernel);
  }
}

// A row sum reads x[i, j] across rows for adjacent i: it keeps its loop
// along the row, and its rows stay the tasks. A column sum turns, its
// columns split first into a block per thread (whole 64-byte lines), each
// turned inside out, so that it still runs on every thread.
TEST(InterchangeReductions, ARowSumKeepsItsLoopAndAColumnSumTurnsInABlockPerThread) {
  cir::Kernel rows = cir::specialize(kernel_of(kRowSum), {{"R", 4096}, {"C", 1000}});
  std::string text = cir::print(cir::interchange_reductions(rows, 4, 2));
  EXPECT_EQ(text.find("acc%"), std::string::npos) << text;
  EXPECT_NE(text.find("parallel for i in 0..4096"), std::string::npos) << text;
  for (auto [threads, width, blocks] : {std::tuple{2, 512, 2}, std::tuple{3, 336, 3}, std::tuple{1, 1000, 1}}) {
    cir::Kernel columns = cir::specialize(kernel_of(kColumnSum), {{"R", 301}, {"C", 1000}});
    text = cir::print(cir::interchange_reductions(columns, 4, threads));
    EXPECT_NE(text.find("parallel for jt%0 in 0.." + std::to_string(blocks) + " {\n    let j0%1: i64 = jt%0 * " + std::to_string(width)),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("local sacc%2: tensor[" + std::to_string(width) + ", f32]"), std::string::npos) << text;
  }
}

// A column softmax, planned: every phase has the column loop innermost
// (the exponentials' loop, which also stores them, as reuse_row_values
// leaves it, included); its max and sum are arrays of the task's columns.
// A row softmax keeps its loops.
TEST(InterchangeReductions, ASoftmaxDownColumnsTurnsEveryPhase) {
  CpuPlan plan = plan_cpu_kernel(cir::specialize(kernel_of(kColumnSoftmax), {{"R", 4096}, {"C", 1000}}), 2, vector_bits());
  ASSERT_TRUE(plan.kernel);
  std::string text = cir::print(*plan.kernel);
  for (const char* phase : {"for i in 0..4096 {\n      for j%4 in j0%1..min(j0%1 + 512, 1000) {\n        macc%3[j%4 - j0%1] = max(",
                            "for i_1 in 0..4096 {\n      for j%7 in j0%1..min(j0%1 + 512, 1000) {\n        let s%row: f32 = exp(",
                            "for i_2 in 0..4096 {\n      for j%8 in j0%1..min(j0%1 + 512, 1000) {\n        out[i_2, j%8] = out[i_2, j%8] / sacc%6["})
    EXPECT_NE(text.find(phase), std::string::npos) << phase << "\n" << text;
  CpuPlan rows = plan_cpu_kernel(cir::specialize(kernel_of(kRowSoftmax), {{"R", 4096}, {"C", 1000}}), 2, vector_bits());
  ASSERT_TRUE(rows.kernel);
  EXPECT_EQ(cir::print(*rows.kernel).find("acc%"), std::string::npos) << cir::print(*rows.kernel);
  CpuPlan max = plan_cpu_kernel(cir::specialize(kernel_of(kColumnMax), {{"R", 300}, {"C", 1000}}), 2, vector_bits());
  ASSERT_TRUE(max.kernel);
  EXPECT_NE(cir::print(*max.kernel).find("macc%"), std::string::npos) << cir::print(*max.kernel);
}

// On the CPU device against the reference at odd sizes: what turns bit for
// bit (each column still in order), the rest within rounding.
TEST(InterchangeReductions, RowAndColumnReductionsMatchTheReference) {
  Device* cpu = device_registry().find("cpu");
  ASSERT_NE(cpu, nullptr);
  Random rng(23);
  for (auto [r, c] : {std::pair{1, 1}, std::pair{3, 7}, std::pair{37, 1001}, std::pair{1000, 33}, std::pair{2, 4097}}) {
    Tensor x = rand_uniform(rng, DType::F32, {r, c}, -1, 1);
    for (const char* src : {kRowSum, kColumnSum, kColumnSoftmax, kColumnMax, kRowSoftmax}) {
      cir::Kernel k = cir::specialize(kernel_of(src), {{"R", r}, {"C", c}});
      SCOPED_TRACE(std::to_string(r) + "x" + std::to_string(c) + " " + cir::print(k).substr(0, 60));
      Tensor want = ReferenceKernel(k).run({x}, {});
      Device::Attempt got = cpu->execute_choice(k, cir::hash_kernel(k), {}, {x}, {});
      ASSERT_EQ(got.outcome, Device::Outcome::Done);
      EXPECT_EQ(compare_outputs(want, got.result), "");
      // Sums and maxima turned still take each column in order: the
      // reference's bits (exp is the CPU's own, within its ulps).
      if (src == kColumnSum || src == kColumnMax)
        EXPECT_EQ(std::memcmp(want.data(), got.result.data(), want.nbytes()), 0);
    }
  }
}

TEST(InterchangeReductions, EveryJamGivesTheBitsOfNoneAndTheReferenceValues) {
  Device* cpu = device_registry().find("cpu");
  ASSERT_NE(cpu, nullptr);
  Random rng(17);
  std::vector<testing::KernelCase> cases;
  for (auto [m, k, n] : {std::tuple{1, 1, 17}, std::tuple{1, 3, 33}, std::tuple{1, 7, 100}, std::tuple{1, 1029, 515},
                         std::tuple{3, 130, 257}, std::tuple{2, 64, 16}, std::tuple{37, 1001, 1}, std::tuple{5, 300, 3}})
    cases.push_back({cir::specialize(kernel_of(kMatmul), {{"M", m}, {"K", k}, {"N", n}}),
                     {rand_uniform(rng, DType::F32, {m, k}, -1, 1), rand_uniform(rng, DType::F32, {k, n}, -1, 1)}});
  for (auto [r, c] : {std::pair{5, 40}, std::pair{301, 1000}})
    cases.push_back({cir::specialize(kernel_of(kColumnProduct), {{"R", r}, {"C", c}}), {rand_uniform(rng, DType::F32, {r, c}, -5, 5)}});
  for (const testing::KernelCase& c : cases) {
    SCOPED_TRACE(cir::print(c.kernel).substr(0, 120));
    Tensor want = ReferenceKernel(c.kernel).run(c.inputs, {});
    uint64_t key = cir::hash_kernel(c.kernel);
    Device::Attempt base = cpu->execute_choice(c.kernel, key, jam(1), c.inputs, {});
    ASSERT_EQ(base.outcome, Device::Outcome::Done);
    EXPECT_EQ(compare_outputs(want, base.result), "");
    for (int64_t n : {2, 3, 4, 8}) {
      Device::Attempt a = cpu->execute_choice(c.kernel, key, jam(n), c.inputs, {});
      ASSERT_EQ(a.outcome, Device::Outcome::Done) << "jam " << n;
      ASSERT_EQ(a.result.nbytes(), base.result.nbytes());
      EXPECT_EQ(std::memcmp(a.result.data(), base.result.data(), base.result.nbytes()), 0) << "jam " << n;
    }
  }
}

}  // namespace
}  // namespace zyntax
