// schedule_gpu_rows: one GPU block per row. The scheduled kernel runs on the
// reference executor (GPU loops as serial loops, shared arrays starting as
// NaN) and must give the original kernel's result up to the reassociation
// of its folds (argmax and argmin: exactly, ties and NaNs included), for the
// op library's row kernels and hand-written ones, at odd sizes and block
// sizes; where the form does not hold the kernel is left alone; the GPU rules
// of the verifier; the PTX of the scheduled op library passes ptxas.
#include <gtest/gtest.h>

#include <cmath>

#include "cir/passes/collapse_parallel_loops.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/schedule_gpu_rows.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "cir/verifier.hpp"
#include "gpu_targets.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "op_library_kernels.hpp"
#include "schedule_parity.hpp"
#include "ptxas.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;
using testing::expect_same_result;
using testing::op_library_kernels;

// Sizes for a kernel's dims: all `n`, except that the first dim (the rows)
// takes `rows`.
std::map<std::string, int64_t> sizes(const cir::Kernel& k, int64_t rows, int64_t n) {
  std::map<std::string, int64_t> dims;
  for (const cir::DimParam& d : k.dims) dims[d.name] = dims.empty() ? rows : n;
  return dims;
}

// The op library's kernels that walk along rows (reduce_sum_axis sums down
// the middle axis: a thread per output reads side by side instead).
const std::set<std::string> kRowKernels = {
    "softmax", "softmax_backward", "rms_norm", "rms_norm_backward_input", "rms_norm_inverse", "layer_norm", "layer_norm_stats",
    "layer_norm_backward_input", "conv2d_backward_bias", "matmul_bt",
    "cross_entropy_count", "cross_entropy_rows", "cross_entropy_mean", "cross_entropy_grad", "attention_delta",
};

TEST(ScheduleGpuRows, OpLibraryRowKernelsMatchTheReference) {
  Session session;
  std::set<std::string> scheduled;
  for (const auto& [name, generic] : op_library_kernels(session)) {
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{3, 37}, {1, 300}, {5, 1}, {2, 64}, {4, 65}}) {
      cir::Kernel k = cir::specialize(generic, sizes(generic, rows, n));
      k = cir::collapse_parallel_loops(cir::scalarize_tiles(k, nullptr).value_or(k));
      for (int threads : {32, 256}) {
        std::optional<cir::Kernel> s = cir::schedule_gpu_rows(k, threads);
        if (!s) continue;
        scheduled.insert(name);
        expect_same_result(k, *s, name + " at " + std::to_string(rows) + "x" + std::to_string(n) + ", " + std::to_string(threads) + " threads");
      }
    }
  }
  EXPECT_EQ(scheduled, kRowKernels);
}

const char* kSoftmax =
    "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n"
    "  for j in 0..c:\n   m = max(m, x[i, j])\n  var s = 0.0\n  for j in 0..c:\n   s += exp(x[i, j] - m)\n"
    "  let inv = 1.0 / s\n  for j in 0..c:\n   out[i, j] = exp(x[i, j] - m) * inv\n }\n}";

TEST(ScheduleGpuRows, SoftmaxFoldsThroughBlockReductionsAtOddSizes) {
  cir::Kernel generic = kernel_of(kSoftmax);
  // Scheduled generic (sizes known only at run time), then specialised.
  std::optional<cir::Kernel> scheduled_generic = cir::schedule_gpu_rows(generic, 64);
  ASSERT_TRUE(scheduled_generic);
  std::string text = cir::print(*scheduled_generic);
  EXPECT_NE(text.find("gpu_block.x for i in 0..r"), std::string::npos) << text;
  EXPECT_NE(text.find("block_reduce(max, m%part[0:64])"), std::string::npos) << text;
  EXPECT_NE(text.find("block_reduce(+, s%part[0:64])"), std::string::npos) << text;
  EXPECT_NE(text.find("for j in j%t..c step 64"), std::string::npos) << text;
  for (auto [r, c] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {2, 63}, {2, 64}, {2, 65}, {1, 1000}, {7, 129}}) {
    std::map<std::string, int64_t> dims = {{"r", r}, {"c", c}};
    cir::Kernel k = cir::specialize(generic, dims);
    expect_same_result(k, cir::specialize(*scheduled_generic, dims), "generic at " + std::to_string(r) + "x" + std::to_string(c));
    for (int threads : {32, 128, 256})
      expect_same_result(k, *cir::schedule_gpu_rows(k, threads), std::to_string(r) + "x" + std::to_string(c) + " by " + std::to_string(threads));
  }
}

TEST(ScheduleGpuRows, IntegerAndConditionalFolds) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[r, c, i32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var s = 0\n  var hi = -1000\n"
                "  var odd = 0\n  for j in 0..c:\n   s += x[i, j]\n   hi = max(hi, x[i, j] * 3)\n   if x[i, j] % 2 == 1:\n    odd += 1\n"
                "  for j in 0..c:\n   out[i, j] = s * 100 + hi + odd\n }\n}"),
      {{"r", 4}, {"c", 77}});
  std::optional<cir::Kernel> s = cir::schedule_gpu_rows(k, 32);
  ASSERT_TRUE(s);
  std::string text = cir::print(*s);
  EXPECT_NE(text.find("block_reduce(+, odd%part[0:32])"), std::string::npos) << text;
  expect_same_result(k, *s, "integer folds");
}

TEST(ScheduleGpuRows, BarriersOrderTheOutputBetweenThreads) {
  // The row is written by all threads, then its first element again by one.
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var s = 0.0\n"
                "  for j in 0..c:\n   s += x[i, j]\n  for j in 0..c:\n   out[i, j] = x[i, j] - s\n  out[i, 0] = s\n }\n}"),
      {{"r", 3}, {"c", 100}});
  std::optional<cir::Kernel> s = cir::schedule_gpu_rows(k, 32);
  ASSERT_TRUE(s);
  std::string text = cir::print(*s);
  size_t loop = text.find("out[i, j_1] = x[i, j_1] - s"), barrier = text.find("barrier(block)"), once = text.find("out[i, 0] = s");
  ASSERT_NE(barrier, std::string::npos) << text;
  EXPECT_LT(loop, barrier) << text;
  EXPECT_LT(barrier, once) << text;
  expect_same_result(k, *s, "write the row, then its first element");
}

TEST(ScheduleGpuRows, RowStoresAreMadeByOneThread) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var s = 0.0\n"
                "  for j in 0..c:\n   s += x[i, j]\n  out[i] = s\n }\n}"),
      {{"r", 6}, {"c", 50}});
  std::optional<cir::Kernel> s = cir::schedule_gpu_rows(k, 32);
  ASSERT_TRUE(s);
  EXPECT_NE(cir::print(*s).find("gpu_thread.x for once%t in 0..1 {\n      out[i] = s"), std::string::npos) << cir::print(*s);
  expect_same_result(k, *s, "row sums");
}

TEST(ScheduleGpuRows, ReduceKernelRowsYieldOnceAfterTheBlockReduction) {
  for (const char* op : {"+", "max", "min", "*"}) {
    cir::Kernel k = cir::collapse_parallel_loops(cir::specialize(
        kernel_of(std::string("def f(m: tensor[a, r, c, f32]) {\n return compute(m) {\n @kernel reduce(") + op +
                  ", axis=2)\n for h in 0..a, i in 0..r, j in 0..c:\n  yield m[h, i, j] * 0.75 + 0.5\n }\n}"),
        {{"a", 2}, {"r", 3}, {"c", 133}}));
    std::string why;
    std::optional<cir::Kernel> s = cir::schedule_gpu_rows(k, 64, &why);
    ASSERT_TRUE(s) << op << ": " << why << "\n" << cir::print(k);
    std::string text = cir::print(*s);
    EXPECT_NE(text.find("var yield%p: f" + std::string(op[0] == '+' || op[0] == '*' ? "64" : "32")), std::string::npos) << text;
    EXPECT_NE(text.find("gpu_thread.x for once%t in 0..1 {\n      yield[h, i] yield%p%all"), std::string::npos) << text;
    expect_same_result(k, *s, std::string("reduce(") + op + ")");
  }
}

std::string arg_rows(const std::string& op, const std::string& dtype) {
  return "def f(m: tensor[r, c, " + dtype + "]) {\n return compute(m) {\n @kernel reduce(" + op +
         ", axis=1)\n for i in 0..r, j in 0..c:\n  yield (m[i, j], j)\n }\n}";
}

// A row's argmax or argmin over the block's threads: the first extreme of
// each row, ties and NaNs included, at rows shorter and longer than a block.
TEST(ScheduleGpuRows, ArgReductionsGiveEachRowsFirstExtreme) {
  for (const char* op : {"argmax", "argmin"}) {
    for (const char* dtype : {"f32", "bf16", "i64"}) {
      cir::Kernel generic = kernel_of(arg_rows(op, dtype));
      for (auto [rows, n] : {std::pair<int64_t, int64_t>{3, 37}, {1, 300}, {5, 1}, {2, 64}, {4, 65}, {2, 1500}}) {
        cir::Kernel k = cir::collapse_parallel_loops(cir::specialize(generic, {{"r", rows}, {"c", n}}));
        for (int threads : {32, 256}) {
          std::string why;
          std::optional<cir::Kernel> s = cir::schedule_gpu_rows(k, threads, &why);
          ASSERT_TRUE(s) << why << "\n" << cir::print(k);
          std::string what = std::string(op) + " " + dtype + " " + std::to_string(rows) + "x" + std::to_string(n) + ", " + std::to_string(threads);
          for (bool nans : {false, true}) testing::expect_same_arg_result(k, *s, what, nans, 11 + n);
        }
      }
    }
  }
}

TEST(ScheduleGpuRows, ArgReductionRowsCompileToPtx) {
  std::vector<cir::Kernel> planned;
  std::vector<std::string> names;
  for (const char* op : {"argmax", "argmin"}) {
    for (const char* dtype : {"f32", "f16", "i32", "f64"}) {
      GpuPlan plan = gpu_plan(cir::specialize(kernel_of(arg_rows(op, dtype)), {{"r", 8}, {"c", 50257}}), testing::test_gpu_target());
      ASSERT_TRUE(plan.kernel) << plan.why_not;
      EXPECT_EQ(plan.schedule, GpuSchedule::Rows) << op << " " << dtype;
      EXPECT_EQ(gpu_launch_blocks(plan, 1000), 8u);
      planned.push_back(*plan.kernel);
      names.push_back(std::string(op) + "_" + dtype);
    }
  }
  testing::expect_ptx_assembles(planned, names, "arg_rows", [](const std::string& ptx) {
    EXPECT_NE(ptx.find("shfl.sync.bfly"), std::string::npos);
    EXPECT_NE(ptx.find("bar.sync"), std::string::npos);
  });
}

TEST(ScheduleGpuRows, LeavesOtherFormsAlone) {
  std::string why;
  // Two iterations write one element.
  cir::Kernel overlap = kernel_of(
      "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n"
      "  for j in 0..c:\n   out[i, j / 2] = x[i, j]\n }\n}");
  EXPECT_FALSE(cir::schedule_gpu_rows(overlap, 32, &why));
  EXPECT_NE(why.find("across rows rather than along them"), std::string::npos) << why;
  // A var carried from one iteration to the next.
  cir::Kernel carried = kernel_of(
      "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var s = 0.0\n"
      "  for j in 0..c:\n   s = s + x[i, j]\n   out[i, j] = s\n }\n}");
  EXPECT_FALSE(cir::schedule_gpu_rows(carried, 32, &why));
  EXPECT_NE(why.find("neither a fold nor independent"), std::string::npos) << why;
  // A matrix product reads b down its columns.
  cir::Kernel matmul = cir::collapse_parallel_loops(cir::specialize(
      kernel_of("def f(a: tensor[m, k, f32], b: tensor[k, n, f32]) {\n return compute(a, b) {\n @kernel fused\n"
                " for i in 0..m, j in 0..n:\n  var s = 0.0\n  for p in 0..k:\n   s += a[i, p] * b[p, j]\n  out[i, j] = s\n }\n}"),
      {{"m", 4}, {"k", 64}, {"n", 5}}));
  EXPECT_FALSE(cir::schedule_gpu_rows(matmul, 32, &why));
  EXPECT_NE(why.find("across rows"), std::string::npos) << why;
  // A var updated by something that is not a fold step.
  cir::Kernel decay = kernel_of(
      "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var s = 0.0\n"
      "  for j in 0..c:\n   s = s * 0.5 + x[i, j]\n  for j in 0..c:\n   out[i, j] = s\n }\n}");
  EXPECT_FALSE(cir::schedule_gpu_rows(decay, 32, &why));
  EXPECT_NE(why.find("neither a fold nor independent"), std::string::npos) << why;
  // A fold whose var is read inside the loop.
  cir::Kernel reads_acc = kernel_of(
      "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var s = 0.0\n"
      "  for j in 0..c:\n   s += x[i, j] * s\n  for j in 0..c:\n   out[i, j] = s\n }\n}");
  EXPECT_FALSE(cir::schedule_gpu_rows(reads_acc, 32, &why));
  // Element-wise: no inner loop to share out.
  cir::Kernel add = kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..n:\n  out[i] = x[i] + 1.0\n }\n}");
  EXPECT_FALSE(cir::schedule_gpu_rows(add, 32, &why));
  EXPECT_EQ(why, "no inner loop to share out");
}

// gpu_block for b in 0..1 { shared a[4]; gpu_thread for t in 0..3 { a[t] = 1 }; let s = block_reduce(+, a[0:4]); out[b] = s }
cir::Kernel partly_written_array() {
  cir::Kernel k;
  k.name = "k";
  k.params = {{cir::ParamRole::Output, "out", cir::Type::tensor(DType::F32, {cir::i64(1)})}};
  cir::Expr b = cir::Var::make("b", cir::Type::scalar(DType::I64)), t = cir::Var::make("t", cir::Type::scalar(DType::I64));
  cir::Block thread = {cir::make_store("a", {cir::AxisSel::at(t)}, cir::FloatImm::make(1.0))};
  cir::Block block = {cir::make_allocate("a", cir::Type::tensor(DType::F32, {cir::i64(4)}), cir::MemorySpace::Shared),
                      cir::make_for("t", cir::i64(0), cir::i64(3), cir::i64(1), thread, cir::LoopKind::GpuThread),
                      cir::make_block_reduce("s", ReduceOp::Sum, "a", cir::i64(4)),
                      cir::make_store("out", {cir::AxisSel::at(b)}, cir::Var::make("s", cir::Type::scalar(DType::F32)))};
  k.body = {cir::make_for("b", cir::i64(0), cir::i64(1), cir::i64(1), block, cir::LoopKind::GpuBlock)};
  return k;
}

TEST(ScheduleGpuRows, SharedArraysStartUndefinedOnTheReference) {
  cir::Kernel k = partly_written_array();
  ASSERT_TRUE(cir::verify(k).empty()) << cir::verify(k)[0];
  EXPECT_TRUE(std::isnan(ReferenceKernel(k).run({}, {}).get(0).f));
}

// gpu_block for b in 0..2 { shared a[4]; gpu_thread for t in 0..4 { a[t] = t }; [barrier]
//   gpu_thread for u in 0..4 { out[b, u] = a[3 - u] } }
cir::Kernel reversal(bool with_barrier) {
  cir::Kernel k;
  k.name = "k";
  k.params = {{cir::ParamRole::Output, "out", cir::Type::tensor(DType::F32, {cir::i64(2), cir::i64(4)})}};
  auto var = [](const char* n) { return cir::Var::make(n, cir::Type::scalar(DType::I64)); };
  cir::Type a_type = cir::Type::tensor(DType::F32, {cir::i64(4)});
  cir::Block writes = {cir::make_store("a", {cir::AxisSel::at(var("t"))}, cir::Cast::make(DType::F32, var("t")))};
  cir::Block reads = {cir::make_store("out", {cir::AxisSel::at(var("b")), cir::AxisSel::at(var("u"))},
                                      cir::make_access("a", a_type, {cir::AxisSel::at(cir::i64(3) - var("u"))}))};
  cir::Block block = {cir::make_allocate("a", a_type, cir::MemorySpace::Shared),
                      cir::make_for("t", cir::i64(0), cir::i64(4), cir::i64(1), writes, cir::LoopKind::GpuThread)};
  if (with_barrier) block.push_back(cir::make_barrier());
  block.push_back(cir::make_for("u", cir::i64(0), cir::i64(4), cir::i64(1), reads, cir::LoopKind::GpuThread));
  k.body = {cir::make_for("b", cir::i64(0), cir::i64(2), cir::i64(1), block, cir::LoopKind::GpuBlock)};
  return k;
}

// The serial run of a schedule proves the parallel one only if no two
// threads touch one element between barriers: the reference checks it.
TEST(ScheduleGpuRows, TheReferenceFindsDataRacesBetweenThreads) {
  EXPECT_EQ(ReferenceKernel(reversal(true)).run({}, {}).get(1).f, 2.0);
  try {
    ReferenceKernel(reversal(false)).run({}, {});
    ADD_FAILURE() << "no race reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data race in the GPU schedule: thread 0 reads element 3 of a, which thread 3 wrote since the last barrier"),
              std::string::npos)
        << e.what();
  }
}

TEST(ScheduleGpuRows, VerifierKeepsBarriersWhereEveryThreadReachesThem) {
  cir::Kernel k = partly_written_array();
  cir::Block block = k.body[0].as<cir::For>()->body;
  cir::Block thread = block[1].as<cir::For>()->body;
  thread.push_back(cir::make_barrier());
  block[1] = cir::make_for("t", cir::i64(0), cir::i64(3), cir::i64(1), thread, cir::LoopKind::GpuThread);
  cir::Kernel in_thread = k;
  in_thread.body = {cir::make_for("b", cir::i64(0), cir::i64(1), cir::i64(1), block, cir::LoopKind::GpuBlock)};
  std::vector<std::string> problems = cir::verify(in_thread);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("barrier inside a GPU thread loop"), std::string::npos) << problems[0];

  // Without the block loop: thread loop and block_reduce outside a block.
  cir::Kernel no_block = k;
  no_block.body = k.body[0].as<cir::For>()->body;
  no_block.body[3] = cir::make_store("out", {cir::AxisSel::at(cir::i64(0))}, cir::Var::make("s", cir::Type::scalar(DType::F32)));
  std::string all;
  for (const std::string& p : cir::verify(no_block)) all += p + "\n";
  EXPECT_NE(all.find("GPU thread loop 't' is not inside a GPU block loop"), std::string::npos) << all;
  EXPECT_NE(all.find("block_reduce 's' is not inside a GPU block loop"), std::string::npos) << all;
}

// The GPU plan picks the row schedule for the op library's row kernels with
// every size 300 (the products are tiled), and their PTX assembles with
// warp shuffles and barriers.
TEST(ScheduleGpuRows, OpLibraryRowKernelsCompileToPtx) {
  Session session;
  std::vector<cir::Kernel> planned;
  std::vector<std::string> names;
  for (const auto& [name, generic] : op_library_kernels(session)) {
    GpuPlan plan = gpu_plan(cir::specialize(generic, sizes(generic, 300, 300)), testing::test_gpu_target());
    ASSERT_TRUE(plan.kernel) << name << ": " << plan.why_not;
    // Products the row schedule would take are tiled instead.
    bool product = name.rfind("matmul", 0) == 0;
    EXPECT_EQ(plan.schedule == GpuSchedule::Rows, kRowKernels.count(name) > 0 && !product) << name << " is scheduled as " << gpu_schedule_name(plan.schedule);
    if (product) {
      EXPECT_EQ(plan.schedule, GpuSchedule::TiledMatmul) << name;
    }
    if (plan.schedule != GpuSchedule::Rows) continue;
    EXPECT_EQ(plan.block_threads, 256) << name;
    // A block per row, up to the most asked for: the whole-tensor folds have
    // one row, the matrices 300, the products of two sizes 90000.
    bool two_sizes = name == "matmul_bt" || name == "attention_delta" || name == "conv2d_backward_bias";
    unsigned want = name == "cross_entropy_count" || name == "cross_entropy_mean" ? 1u : two_sizes ? 1000u : 300u;
    EXPECT_EQ(gpu_launch_blocks(plan, 1000), want) << name;
    planned.push_back(*plan.kernel);
    names.push_back(name);
  }
  testing::expect_ptx_assembles(planned, names, "rows", [](const std::string& ptx) {
    EXPECT_NE(ptx.find("shfl.sync.bfly"), std::string::npos);
    EXPECT_NE(ptx.find("bar.sync"), std::string::npos);
    EXPECT_NE(ptx.find(".shared"), std::string::npos);
  });
}

}  // namespace
}  // namespace zyntax
