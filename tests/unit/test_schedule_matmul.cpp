// The packed, register-blocked matrix product schedule (schedule_matmul and
// the matmul_block micro-kernel), checked three ways on many shapes:
//   - the scheduled CIR on the reference executor against the original
//     kernel there (the pass alone, no LLVM);
//   - the cpu device against the reference executor (pass + micro-kernel);
//   - that the schedule really applies where it should, and not where it
//     should not (a product too small, or not of the expected form).
// Sums are multiply-adds in a different grouping than the reference's
// sequential sum, so results agree to 1e-4 of sum |a| |b| (the parity bound
// of long reductions), and NaN exactly where the reference has NaN.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/registry.hpp"
#include "cir/hash.hpp"
#include "cir/passes/schedule_matmul.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "host_plan.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "product_parity.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "runtime/tuner.hpp"

namespace zyntax {
namespace {

using testing::absolute;
using testing::expect_close;
using testing::kernel_of;

struct Form {
  const char* name;
  const char* source;        // `sum` is the product's running sum
  const char* bound_source;  // the same product with |.| inputs and no epilogue: the error scale
  bool batched = false;
  bool b_transposed = false, a_transposed = false;
  int extra_inputs = 0;      // a bias of N elements
  bool b_shared = false;     // batched A, one B for every batch element
};

const char* kPlain =
    "def f(A: tensor[M, K, f32], B: tensor[K, N, f32]) {\n return compute(A, B) {\n @kernel matmul\n"
    " for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j]\n  out[i, j] = sum\n }\n}";
const char* kTransposedB =
    "def f(A: tensor[M, K, f32], B: tensor[N, K, f32]) {\n return compute(A, B) {\n @kernel matmul\n"
    " for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += B[j, k] * A[i, k]\n  out[i, j] = sum\n }\n}";
const char* kTransposedA =
    "def f(A: tensor[K, M, f32], B: tensor[K, N, f32]) {\n return compute(A, B) {\n @kernel matmul\n"
    " for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[k, i] * B[k, j]\n  out[i, j] = sum\n }\n}";
const char* kBatched =
    "def f(A: tensor[G, M, K, f32], B: tensor[G, K, N, f32]) {\n return compute(A, B) {\n @kernel batched_matmul\n"
    " for g in 0..G, i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[g, i, k] * B[g, k, j]\n"
    "  out[g, i, j] = sum\n }\n}";
const char* kBiasRelu =
    "def f(A: tensor[M, K, f32], B: tensor[K, N, f32], bias: tensor[N, f32]) {\n return compute(A, B, bias) {\n"
    " @kernel fused\n for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j]\n"
    "  out[i, j] = relu(sum + bias[j])\n }\n}";

// One B for all batch elements: the batch and row loops are one group of
// rows (a product of batch x M rows), packed a run of rows at a time.
const char* kSharedB =
    "def f(A: tensor[G, M, K, f32], B: tensor[K, N, f32]) {\n return compute(A, B) {\n @kernel batched_matmul\n"
    " for g in 0..G, i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[g, i, k] * B[k, j]\n"
    "  out[g, i, j] = sum\n }\n}";

// A narrower result: the sums in a task's block of f32, rounded once at the store.
const char* kBf16Result =
    "def f(A: tensor[M, K, f32], B: tensor[K, N, f32]) {\n return compute(A, B) {\n @kernel matmul\n"
    " for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j]\n  out[i, j] = bf16(sum)\n }\n}";
const char* kF16Result =
    "def f(A: tensor[M, K, f32], B: tensor[K, N, f32], bias: tensor[N, f32]) {\n return compute(A, B, bias) {\n @kernel matmul\n"
    " for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j]\n  out[i, j] = f16(sum + bias[j])\n }\n}";

const Form kForms[] = {
    {"plain", kPlain, kPlain},
    {"b_transposed", kTransposedB, kTransposedB, false, true},
    {"a_transposed", kTransposedA, kTransposedA, false, false, true},
    {"batched", kBatched, kBatched, true},
    {"bias_relu", kBiasRelu, kPlain, false, false, false, 1},
    {"shared_b", kSharedB, kSharedB, true, false, false, 0, true},
    {"bf16_result", kBf16Result, kPlain},
    {"f16_result_with_bias", kF16Result, kPlain, false, false, false, 1},
};

struct Size {
  int64_t m, k, n;
};

// Odd sizes, K of 1, K over several packed panels, tall, wide and square.
// {24, 37, 53}: whole 8-row blocks with an odd K and N, so a row-major A is
// read in place when two or more threads split the columns. {64, 64, 64} and
// {40, 1100, 96}: whole column panels and rows in one block of A, so a
// row-major B is read in place (the second over three depth blocks).
// {9, 45, 1100}: B wider than a block, packed eight rows at a time.
const Size kSizes[] = {{17, 33, 65}, {127, 1, 200}, {64, 64, 64}, {5, 300, 7}, {100, 600, 37}, {300, 37, 29}, {13, 700, 70}, {24, 37, 53},
                       {40, 1100, 96}, {9, 45, 1100}};

struct Problem {
  std::vector<Tensor> inputs;
  std::map<std::string, int64_t> dims;
};

Problem problem(const Form& f, Size s, int64_t batch, Random& rng) {
  Problem p;
  p.dims = {{"M", s.m}, {"K", s.k}, {"N", s.n}};
  Shape a = f.a_transposed ? Shape{s.k, s.m} : Shape{s.m, s.k};
  Shape b = f.b_transposed ? Shape{s.n, s.k} : Shape{s.k, s.n};
  if (f.batched) {
    a.insert(a.begin(), batch);
    if (!f.b_shared) b.insert(b.begin(), batch);
    p.dims["G"] = batch;
  }
  p.inputs = {rand_normal(rng, DType::F32, a), rand_normal(rng, DType::F32, b)};
  if (f.extra_inputs) p.inputs.push_back(rand_normal(rng, DType::F32, {s.n}));
  return p;
}

std::string sizes_text(Size s, int64_t batch) {
  return "M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) + " N=" + std::to_string(s.n) + " batch=" + std::to_string(batch);
}

class ScheduleMatmul : public ::testing::TestWithParam<Form> {};

// The pass alone: the scheduled kernel on the reference executor, for a few
// thread counts (which change how the work is split into tasks).
TEST_P(ScheduleMatmul, ScheduledKernelMatchesTheOriginalOnTheReference) {
  const Form& f = GetParam();
  cir::Kernel generic = kernel_of(f.source);
  cir::Kernel bound_generic = kernel_of(f.bound_source);
  Random rng(7);
  for (Size s : {kSizes[0], kSizes[2], kSizes[3], kSizes[6], kSizes[7], kSizes[8]}) {
    for (int threads : {1, 2, 3}) {
      Problem p = problem(f, s, 3, rng);
      cir::Kernel k = cir::specialize(generic, p.dims);
      std::optional<cir::Kernel> scheduled = cir::schedule_matmul(k, cir::cpu_matmul_schedule(512, threads));
      ASSERT_TRUE(scheduled.has_value()) << f.name << " " << sizes_text(s, 3);
      Tensor want = ReferenceKernel(k).run(p.inputs, {});
      Tensor got = ReferenceKernel(*scheduled).run(p.inputs, {});
      Tensor scale = ReferenceKernel(cir::specialize(bound_generic, p.dims)).run(absolute(p.inputs, 2), {});
      expect_close(got, want, scale, std::string(f.name) + " " + sizes_text(s, 3) + " threads=" + std::to_string(threads));
    }
  }
}

// The cpu device (schedule, micro-kernel, threads) against the reference.
TEST_P(ScheduleMatmul, CpuDeviceMatchesTheReference) {
  const Form& f = GetParam();
  CompiledCompute compiled(kernel_of(f.source));
  CompiledCompute bound(kernel_of(f.bound_source));
  Device* cpu = device_registry().find("cpu");
  Device* ref = device_registry().find("cpu:reference");
  Random rng(11);
  int variant = 0;
  for (Size s : kSizes) {
    for (int64_t batch : {int64_t{1}, int64_t{3}}) {
      if (!f.batched && batch > 1) continue;
      Problem p = problem(f, s, batch, rng);
      if (variant++ % 3 == 1) {  // specials propagate as in the reference
        p.inputs[0].set(0, Scalar::of_float(NAN, DType::F32));
        p.inputs[1].set(p.inputs[1].numel() - 1, Scalar::of_float(INFINITY, DType::F32));
      }
      std::string what = std::string(f.name) + " " + sizes_text(s, batch);
      CpuPlan plan = testing::host_cpu_plan(compiled.specialize(p.dims)->kernel, 2);
      ASSERT_TRUE(plan.kernel.has_value()) << what << ": " << plan.why_not;
      EXPECT_NE(cir::print(*plan.kernel).find("matmul_block"), std::string::npos) << what << ": not scheduled";
      Tensor want = compiled.launch(*ref, p.inputs, {}, {});
      Tensor got = compiled.launch(*cpu, p.inputs, {}, {});
      Tensor scale = bound.launch(*ref, absolute(p.inputs, 2), {}, {});
      expect_close(got, want, scale, what);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, ScheduleMatmul, ::testing::ValuesIn(kForms),
                         [](const ::testing::TestParamInfo<Form>& i) { return std::string(i.param.name); });

TEST(ScheduleMatmulApplies, NotToProductsTooSmallToGain) {
  cir::Kernel k = kernel_of(kPlain);
  cir::MatMulSchedule s = cir::cpu_matmul_schedule(512, 2);
  EXPECT_FALSE(cir::schedule_matmul(cir::specialize(k, {{"M", 1}, {"K", 500}, {"N", 500}}), s).has_value());
  EXPECT_FALSE(cir::schedule_matmul(cir::specialize(k, {{"M", 3}, {"K", 3}, {"N", 3}}), s).has_value());
  EXPECT_TRUE(cir::schedule_matmul(cir::specialize(k, {{"M", 64}, {"K", 64}, {"N", 64}}), s).has_value());
  // A generic kernel (sizes unknown) keeps its loops.
  EXPECT_FALSE(cir::schedule_matmul(k, s).has_value());
}

// With fewer products than threads, a row-major A of whole row blocks is read
// in place and the tasks split the columns (each packs only its part of B);
// a transposed A, a ragged M or rows a multiple of 4 KiB apart keep packing A.
TEST(ScheduleMatmulApplies, ReadsRowMajorAInPlaceWhenTheTasksSplitColumns) {
  cir::MatMulSchedule s = cir::cpu_matmul_schedule(512, 2);
  auto scheduled = [&](const char* src, int64_t m, int64_t k, int64_t n) {
    std::optional<cir::Kernel> out = cir::schedule_matmul(cir::specialize(kernel_of(src), {{"M", m}, {"K", k}, {"N", n}}), s);
    EXPECT_TRUE(out.has_value());
    return out ? cir::print(*out) : std::string();
  };
  EXPECT_NE(scheduled(kPlain, 256, 256, 256).find("<- A["), std::string::npos);
  EXPECT_EQ(scheduled(kPlain, 256, 256, 256).find("ap%mm"), std::string::npos);
  EXPECT_NE(scheduled(kPlain, 250, 256, 256).find("<- ap%mm["), std::string::npos);
  EXPECT_NE(scheduled(kPlain, 256, 2048, 256).find("<- ap%mm["), std::string::npos);
  EXPECT_NE(scheduled(kTransposedA, 256, 256, 256).find("<- ap%mm["), std::string::npos);
  // A product per task (a batch of them, or one thread), its columns one
  // block of B: A is used once per depth block, so it is read in place, rows
  // 4608 bytes apart included; with more columns it is packed and reused.
  auto batched = [&](int64_t n, int threads) {
    return cir::print(*cir::schedule_matmul(
        cir::specialize(kernel_of(kBatched), {{"G", 4}, {"M", 128}, {"K", 1152}, {"N", n}}), cir::cpu_matmul_schedule(512, threads)));
  };
  EXPECT_NE(batched(784, 2).find("<- A["), std::string::npos);
  EXPECT_NE(batched(784, 1).find("<- A["), std::string::npos);
  EXPECT_NE(batched(1100, 2).find("<- ap%mm["), std::string::npos);
}

// A row-major B of whole column panels is read in place where each task's
// rows are one block of A (every B panel then meets all of its rows while in
// cache); otherwise, or transposed, or with a ragged N, or with rows a
// multiple of 1 KiB apart (its panel would fall into a few cache sets), it
// is packed. A
// short, wide product splits its columns between the tasks, each packing
// only its part of B (and all of a small A), not its rows (each packing all
// of B).
TEST(ScheduleMatmulApplies, ReadsRowMajorBInPlaceWhenRowsAreOneBlock) {
  cir::MatMulSchedule s = cir::cpu_matmul_schedule(512, 2);
  auto scheduled = [&](const char* src, int64_t m, int64_t k, int64_t n) {
    std::optional<cir::Kernel> out = cir::schedule_matmul(cir::specialize(kernel_of(src), {{"M", m}, {"K", k}, {"N", n}}), s);
    EXPECT_TRUE(out.has_value());
    return out ? cir::print(*out) : std::string();
  };
  std::string wide = scheduled(kPlain, 128, 1152, 6272);
  EXPECT_EQ(wide.find("bp%mm"), std::string::npos) << wide;
  EXPECT_NE(wide.find(". B[jc%mm + jp%mm * 32 + pc%mm * 6272] ldb 6272"), std::string::npos) << wide;
  EXPECT_NE(wide.find("let j0%mm: i64 = gn%mm * 196 / 2 * 32"), std::string::npos) << wide;  // the columns split in two
  EXPECT_NE(scheduled(kPlain, 128, 1152, 6270).find("bp%mm"), std::string::npos);        // a ragged last panel
  EXPECT_NE(scheduled(kPlain, 1024, 1024, 1024).find("bp%mm"), std::string::npos);       // rows over several blocks
  EXPECT_NE(scheduled(kTransposedB, 128, 1152, 6272).find("bp%mm"), std::string::npos);
  EXPECT_NE(scheduled(kPlain, 128, 4096, 1024).find("bp%mm"), std::string::npos);  // rows a page apart
  EXPECT_NE(scheduled(kPlain, 128, 4096, 768).find("bp%mm"), std::string::npos);   // 3 KiB apart
  EXPECT_EQ(scheduled(kPlain, 128, 4096, 1056).find("bp%mm"), std::string::npos);  // 4224 bytes apart: in place
}

// The product's last column panel takes a block half as wide where no more
// than half of it is real (N = 65: 2 x 32 + 1; a 16-wide block, the first
// half of its zero-padded panel), and the whole block otherwise (N = 53: 21
// of 32 real). The forms above check the values at N = 65, 37, 70 and 200.
TEST(ScheduleMatmulApplies, TheLastColumnPanelIsHalfABlockWhereHalfOfItIsReal) {
  cir::MatMulSchedule s = cir::cpu_matmul_schedule(512, 2);
  auto scheduled = [&](int64_t n) {
    std::optional<cir::Kernel> out = cir::schedule_matmul(cir::specialize(kernel_of(kPlain), {{"M", 64}, {"K", 100}, {"N", n}}), s);
    EXPECT_TRUE(out.has_value());
    return out ? cir::print(*out) : std::string();
  };
  std::string half = scheduled(65);
  EXPECT_NE(half.find("matmul_block<8x16>"), std::string::npos) << half;
  EXPECT_NE(half.find("matmul_block<8x32>"), std::string::npos) << half;
  EXPECT_EQ(scheduled(53).find("matmul_block<8x16>"), std::string::npos);
  EXPECT_EQ(scheduled(64).find("matmul_block<8x16>"), std::string::npos);
}

// The product's last few columns (at most 8, past the first half of the
// last panel where that is real) as a block of vectors along the rows of
// A's packed panel: one multiply-add per column and k step where a block
// of column vectors takes one per row. B's last panel is packed as wide as
// its real columns where no half-panel block reads it. Not where A is read
// in place (its rows are not adjacent) or too many columns are left.
TEST(ScheduleMatmulApplies, TheLastFewColumnsAreVectorsAlongTheRows) {
  cir::MatMulSchedule s = cir::cpu_matmul_schedule(512, 2);
  auto scheduled = [&](int64_t m, int64_t n) {
    std::optional<cir::Kernel> out = cir::schedule_matmul(cir::specialize(kernel_of(kPlain), {{"M", m}, {"K", 100}, {"N", n}}), s);
    EXPECT_TRUE(out.has_value());
    return out ? cir::print(*out) : std::string();
  };
  std::string one = scheduled(100, 65);  // 2 x 32 + 1
  EXPECT_NE(one.find("matmul_block<1x8> ce%mm[0] ldc 8 valid (1, 8) accumulate false <- bp%mm[jp%mm * 3200] strides (1, 1)"),
            std::string::npos) << one;
  EXPECT_EQ(one.find("matmul_block<8x16>"), std::string::npos) << one;
  std::string past_half = scheduled(100, 53);  // 32 + 16 + 5
  EXPECT_NE(past_half.find("matmul_block<8x16>"), std::string::npos) << past_half;
  EXPECT_NE(past_half.find("matmul_block<5x8> ce%mm[0]"), std::string::npos) << past_half;
  EXPECT_NE(past_half.find("strides (1, 32)"), std::string::npos) << past_half;  // the half block reads the panel 32 wide
  EXPECT_EQ(scheduled(100, 76).find("ce%mm"), std::string::npos);  // 12 columns left: a half block
  EXPECT_EQ(scheduled(64, 65).find("ce%mm"), std::string::npos);   // A read in place

  // The values, on the cpu device, for register blocks of several heights
  // and last-column counts from 1 to 9 (1, 2, 5, 8, 9), alone and past a half panel.
  Device* cpu = device_registry().find("cpu");
  const int lanes = codegen::CpuJit::instance().target().vector_bits / 32, registers = lanes >= 16 ? 32 : 16;
  Random rng(3);
  for (int mr : {2, 8, 14}) {
    if (mr * 2 + 3 > registers) continue;
    for (int64_t left : {1, 2, 5, 8, 9}) {
      for (int64_t n : {2 * 2 * lanes + left, 2 * 2 * lanes + lanes + left}) {
        const int64_t m = 37, k = 70;
        cir::Kernel kernel = cir::specialize(kernel_of(kPlain), {{"M", m}, {"K", k}, {"N", n}});
        std::vector<Tensor> in = {rand_normal(rng, DType::F32, {m, k}), rand_normal(rng, DType::F32, {k, n})};
        TuningChoice choice = *TuningChoice::parse("mr=" + std::to_string(mr) + " nr=" + std::to_string(2 * lanes) + " kc=32");
        std::string what = "mr=" + std::to_string(mr) + " N=" + std::to_string(n);
        Device::Attempt a = cpu->execute_choice(kernel, cir::hash_kernel(kernel), choice, in, {});
        ASSERT_EQ(a.outcome, Device::Outcome::Done) << what;
        Tensor want = ReferenceKernel(kernel).run(in, {});
        expect_close(a.result, want, ReferenceKernel(kernel).run(absolute(in, 2), {}), what);
      }
    }
  }
}

// Compiling prints nothing: the bounds-checked copy of a versioned loop
// the schedule marks for vectors carries no vectoriser hint (its exits keep
// it scalar, and LLVM warned "loop not vectorized" for A's panel copy with
// these choices), and LLVM's warnings and remarks are dropped anyway: they
// are not the kernel author's to act on.
TEST(ScheduleMatmulApplies, CompilingPrintsNoneOfLlvmsHints) {
  cir::Kernel k = cir::specialize(kernel_of(kPlain), {{"M", 384}, {"K", 512}, {"N", 384}});
  for (const char* choice : {"ain=0 mr=12 rows=2", "ain=0 mr=8"}) {
    CpuPlan plan = plan_cpu_kernel(k, 2, codegen::CpuJit::instance().target().vector_bits, *TuningChoice::parse(choice));
    ASSERT_TRUE(plan.kernel.has_value()) << choice;
    ::testing::internal::CaptureStderr();
    std::string object = codegen::CpuJit::instance().emit(*plan.kernel, "obj");
    std::string printed = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(object.empty()) << choice;
    EXPECT_EQ(printed, "") << choice;
  }
}

// A packed row-major B whose block spans its rows (one column group, N no
// wider than a block) is copied a row at a time, one stream; a block of
// part of each row (the columns split between the tasks, or N wider than a
// block) eight rows at a time. The forms above check the values at
// {9, 45, 1100} (eight rows at a time, 5 rows left over) and {100, 600, 37}.
TEST(ScheduleMatmulApplies, BIsPackedEightRowsAtATimeWhereItsBlockIsPartOfEachRow) {
  cir::MatMulSchedule s = cir::cpu_matmul_schedule(512, 2);
  auto scheduled = [&](int64_t m, int64_t k, int64_t n) {
    std::optional<cir::Kernel> out = cir::schedule_matmul(cir::specialize(kernel_of(kPlain), {{"M", m}, {"K", k}, {"N", n}}), s);
    EXPECT_TRUE(out.has_value());
    return out ? cir::print(*out) : std::string();
  };
  EXPECT_NE(scheduled(9, 45, 1100).find("for p0%mm"), std::string::npos);    // wider than a block
  EXPECT_NE(scheduled(128, 4096, 1024).find("for p0%mm"), std::string::npos);  // the columns split in two
  EXPECT_NE(scheduled(1000, 1000, 1000).find("for p0%mm"), std::string::npos);
  std::string whole = scheduled(4095, 300, 257);  // rows split, each task all 257 columns
  EXPECT_NE(whole.find("bp%mm"), std::string::npos) << whole;
  EXPECT_EQ(whole.find("for p0%mm"), std::string::npos) << whole;
}

TEST(ScheduleMatmulApplies, NotToOtherReductions) {
  // A product whose factors both read j is not a matrix product.
  cir::Kernel k = kernel_of(
      "def f(A: tensor[M, K, f32], B: tensor[K, N, f32]) {\n return compute(A, B) {\n @kernel fused\n"
      " for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j] * B[k, j]\n"
      "  out[i, j] = sum\n }\n}");
  EXPECT_FALSE(cir::schedule_matmul(cir::specialize(k, {{"M", 64}, {"K", 64}, {"N", 64}}), cir::cpu_matmul_schedule(512, 2)));
  // A max-reduction is not a sum of products.
  cir::Kernel mx = kernel_of(
      "def f(A: tensor[M, K, f32], B: tensor[K, N, f32]) {\n return compute(A, B) {\n @kernel fused\n"
      " for i in 0..M, j in 0..N:\n  var m = 0.0\n  for k in 0..K:\n   m = max(m, A[i, k] * B[k, j])\n  out[i, j] = m\n }\n}");
  EXPECT_FALSE(cir::schedule_matmul(cir::specialize(mx, {{"M", 64}, {"K", 64}, {"N", 64}}), cir::cpu_matmul_schedule(512, 2)));
}

// The micro-kernel is vector fused multiply-adds of the host's width.
TEST(ScheduleMatmulApplies, MicroKernelUsesVectorFusedMultiplyAdds) {
  cir::Kernel k = cir::specialize(kernel_of(kPlain), {{"M", 256}, {"K", 256}, {"N", 256}});
  CpuPlan plan = testing::host_cpu_plan(k, 2);
  ASSERT_TRUE(plan.kernel.has_value());
  EXPECT_NE(cir::print(*plan.kernel).find("matmul_block<"), std::string::npos);
  std::string asm_text = codegen::CpuJit::instance().emit(*plan.kernel, "asm");
  const std::string& simd = codegen::CpuJit::instance().target().simd;
  if (simd == "avx512") {
    EXPECT_NE(asm_text.find("vfmadd231ps\t%zmm"), std::string::npos);
  } else if (simd == "avx2") {
    EXPECT_NE(asm_text.find("vfmadd231ps\t%ymm"), std::string::npos);
  } else if (simd == "neon") {
    EXPECT_NE(asm_text.find("fmla\tv"), std::string::npos);
  }
}

}  // namespace
}  // namespace zyntax
