// schedule_gpu_reduce: a whole-tensor reduction over the GPU's grid. The
// scheduled kernel runs on the reference executor (race-checked, shared
// arrays starting as NaN) and gives the original's result up to the
// reassociation of its fold, for every op, integer and float, one loop or a
// nest, at sizes below, at and above one block and one grid (argmax and
// argmin in one block, exactly, ties and NaNs included); forms it does
// not take are left alone; the GPU plan picks it and its PTX (compare-and-
// swap into the accumulator) passes ptxas.
#include <gtest/gtest.h>

#include <fstream>

#include "cir/passes/schedule_gpu_reduce.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "gpu_targets.hpp"
#include "kernel_source.hpp"
#include "ptxas.hpp"
#include "schedule_parity.hpp"

namespace zyntax {
namespace {

using testing::expect_same_result;
using testing::kernel_of;

std::string full_reduction(const std::string& op, const std::string& dtype) {
  return "def f(x: tensor[n, " + dtype + "]) {\n return compute(x) {\n @kernel reduce(" + op + ")\n for i in 0..n:\n  yield x[i] * 3\n }\n}";
}

std::string arg_reduction(const std::string& op, const std::string& dtype, const std::string& index) {
  return "def f(x: tensor[n, " + dtype + "]) {\n return compute(x) {\n @kernel reduce(" + op + ")\n for i in 0..n:\n  yield (x[i], " + index + ")\n }\n}";
}

// One block: each thread's first best, then the block's best value, then
// the earliest place holding it. Ties everywhere, NaNs (either sign) first.
TEST(ScheduleGpuReduce, ArgReductionsGiveTheFirstExtremeInOneBlock) {
  for (const char* op : {"argmax", "argmin"}) {
    for (const char* dtype : {"f32", "f16", "i32", "u8", "f64"}) {
      cir::Kernel generic = kernel_of(arg_reduction(op, dtype, "i"));
      for (int64_t n : {1, 2, 7, 64, 255, 256, 257, 1000, 5000}) {
        cir::Kernel k = cir::specialize(generic, {{"n", n}});
        for (int threads : {32, 256}) {
          std::string why;
          std::optional<cir::Kernel> s = cir::schedule_gpu_reduce(k, 1, threads, &why);
          ASSERT_TRUE(s) << why;
          std::string what = std::string(op) + " " + dtype + " n=" + std::to_string(n) + " over " + std::to_string(threads);
          for (bool nans : {false, true}) testing::expect_same_arg_result(k, *s, what, nans, 7 + n);
        }
      }
    }
  }
}

// "First" is the loop's order, not the smallest index: here the index runs
// backwards, and the nest's iterations are one loop's.
TEST(ScheduleGpuReduce, ArgReductionsFollowTheLoopsOrderNotTheIndexs) {
  cir::Kernel backwards = cir::specialize(kernel_of(arg_reduction("argmax", "f32", "n - 1 - i")), {{"n", 777}});
  std::optional<cir::Kernel> s = cir::schedule_gpu_reduce(backwards, 1, 64);
  ASSERT_TRUE(s);
  for (bool nans : {false, true}) testing::expect_same_arg_result(backwards, *s, "backwards", nans);
  cir::Kernel nest = cir::specialize(
      kernel_of("def f(m: tensor[r, c, f32]) {\n return compute(m) {\n @kernel reduce(argmin)\n for i in 0..r:\n  for j in 1..c step 2:\n"
                "   yield (m[i, j] + m[i, j - 1], j * r + i)\n }\n}"),
      {{"r", 13}, {"c", 41}});
  s = cir::schedule_gpu_reduce(nest, 1, 32);
  ASSERT_TRUE(s);
  for (bool nans : {false, true}) testing::expect_same_arg_result(nest, *s, "nest", nans);
}

TEST(ScheduleGpuReduce, AnArgReductionOfNothingIsStillAnError) {
  // Scheduled with the size unknown, then run at size 0.
  cir::Kernel generic = kernel_of(arg_reduction("argmax", "f32", "i"));
  std::optional<cir::Kernel> s = cir::schedule_gpu_reduce(generic, 1, 32);
  ASSERT_TRUE(s);
  cir::Kernel k = cir::specialize(generic, {{"n", 0}}), scheduled = cir::specialize(*s, {{"n", 0}});
  std::vector<Tensor> x = {Tensor::zeros(DType::F32, {0})};
  for (const cir::Kernel* kernel : {&k, &scheduled}) {
    try {
      ReferenceKernel(*kernel).run(x, {});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("argmax of an empty range has no index"), std::string::npos) << e.what();
    }
  }
}

TEST(ScheduleGpuReduce, EveryOpAndSizeMatchesTheSerialFold) {
  for (const char* op : {"+", "*", "min", "max"}) {
    for (const char* dtype : {"f32", "i32"}) {
      cir::Kernel generic = kernel_of(full_reduction(op, dtype));
      for (int64_t n : {1, 7, 64, 255, 256, 257, 1000, 5000}) {
        cir::Kernel k = cir::specialize(generic, {{"n", n}});
        for (auto [blocks, threads] : {std::pair<int64_t, int>{1, 32}, {3, 64}, {4, 256}}) {
          std::string why;
          std::optional<cir::Kernel> s = cir::schedule_gpu_reduce(k, blocks, threads, &why);
          ASSERT_TRUE(s) << why;
          expect_same_result(k, *s, std::string(op) + " " + dtype + " n=" + std::to_string(n) + " over " + std::to_string(blocks) + "x" + std::to_string(threads));
        }
      }
    }
  }
}

TEST(ScheduleGpuReduce, FloatSumsFoldInTheAccumulatorsDtype) {
  cir::Kernel k = cir::specialize(kernel_of(full_reduction("+", "f32")), {{"n", 100}});
  std::string text = cir::print(*cir::schedule_gpu_reduce(k, 2, 32));
  EXPECT_NE(text.find("gpu_block.x for block%b in 0..2"), std::string::npos) << text;
  EXPECT_NE(text.find("for i in block%b * 32 + i%t..100 step 64"), std::string::npos) << text;
  EXPECT_NE(text.find("yield%p = yield%p + f64(x[i] * 3.0)"), std::string::npos) << text;
  EXPECT_NE(text.find("let yield%p%all = block_reduce(+, yield%part[0:32])"), std::string::npos) << text;
}

TEST(ScheduleGpuReduce, ANestBecomesOneLoopOverAllItsIterations) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(m: tensor[r, c, f32]) {\n return compute(m) {\n @kernel reduce(max)\n for i in 0..r:\n  for j in 1..c:\n"
                "   yield m[i, j] - m[i, j - 1]\n }\n}"),
      {{"r", 3}, {"c", 201}});
  std::optional<cir::Kernel> s = cir::schedule_gpu_reduce(k, 5, 32);
  ASSERT_TRUE(s);
  std::string text = cir::print(*s);
  EXPECT_NE(text.find("for i%j in block%b * 32 + i%j%t..600 step 160"), std::string::npos) << text;
  expect_same_result(k, *s, "nest");
}

TEST(ScheduleGpuReduce, ArgReductionsPrintAsTheirSteps) {
  cir::Kernel k = cir::specialize(kernel_of(arg_reduction("argmax", "f16", "i")), {{"n", 100}});
  std::string text = cir::print(*cir::schedule_gpu_reduce(k, 1, 32));
  EXPECT_NE(text.find("gpu_block.x for block%b in 0..1"), std::string::npos) << text;
  EXPECT_NE(text.find("let arg%top = block_reduce(max, arg%best_part[0:32])"), std::string::npos) << text;
  EXPECT_NE(text.find("let arg%first = block_reduce(min, arg%key_part[0:32])"), std::string::npos) << text;
  EXPECT_NE(text.find("yield (f16(arg%top), arg%index_part[arg%first - arg%first / 32 * 32])"), std::string::npos) << text;
}

TEST(ScheduleGpuReduce, LeavesOtherFormsAlone) {
  std::string why;
  cir::Kernel arg = cir::specialize(kernel_of(arg_reduction("argmax", "f32", "i")), {{"n", 9}});
  EXPECT_FALSE(cir::schedule_gpu_reduce(arg, 2, 32, &why));
  EXPECT_EQ(why, "an arg reduction folds in one block");
  cir::Kernel any = cir::specialize(
      kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(or)\n for i in 0..n:\n  yield x[i] > 0.0\n }\n}"), {{"n", 9}});
  EXPECT_FALSE(cir::schedule_gpu_reduce(any, 2, 32, &why));
  EXPECT_NE(why.find("reduce(or)"), std::string::npos) << why;
  // One output element per row: the row schedule's.
  cir::Kernel rows = cir::specialize(
      kernel_of("def f(m: tensor[r, c, f32]) {\n return compute(m) {\n @kernel reduce(+, axis=1)\n for i in 0..r, j in 0..c:\n  yield m[i, j]\n }\n}"),
      {{"r", 3}, {"c", 9}});
  EXPECT_FALSE(cir::schedule_gpu_reduce(rows, 2, 32, &why));
  cir::Kernel fused = cir::specialize(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..n:\n  out[i] = x[i]\n }\n}"),
                                      {{"n", 9}});
  EXPECT_FALSE(cir::schedule_gpu_reduce(fused, 2, 32, &why));
  EXPECT_EQ(why, "not a reduce kernel");
}

TEST(ScheduleGpuReduce, ThePlanUsesTheGridAndItsPtxAssembles) {
  std::vector<cir::Kernel> planned;
  std::vector<std::string> names;
  for (const char* op : {"+", "max"}) {
    for (auto [n, blocks] : {std::pair<int64_t, unsigned>{10, 1}, {1 << 20, 512}, {1 << 26, 1024}}) {
      GpuPlan plan = gpu_plan(cir::specialize(kernel_of(full_reduction(op, "f32")), {{"n", n}}), testing::test_gpu_target());
      ASSERT_TRUE(plan.kernel) << plan.why_not;
      EXPECT_EQ(plan.schedule, GpuSchedule::GridReduction);
      EXPECT_EQ(gpu_launch_blocks(plan, 100000), blocks) << n;
      planned.push_back(*plan.kernel);
      names.push_back(std::string(op[0] == '+' ? "sum" : "max") + std::to_string(planned.size()));
    }
  }
  // argmax and argmin: one block, whatever the size.
  for (const char* op : {"argmax", "argmin"}) {
    for (int64_t n : {10, 1 << 26}) {
      GpuPlan plan = gpu_plan(cir::specialize(kernel_of(arg_reduction(op, "f32", "i")), {{"n", n}}), testing::test_gpu_target());
      ASSERT_TRUE(plan.kernel) << plan.why_not;
      EXPECT_EQ(plan.schedule, GpuSchedule::GridReduction);
      EXPECT_EQ(gpu_launch_blocks(plan, 100000), 1u) << n;
      planned.push_back(*plan.kernel);
      names.push_back(op + std::to_string(planned.size()));
    }
  }
  std::vector<const cir::Kernel*> ptrs;
  for (const cir::Kernel& k : planned) ptrs.push_back(&k);
  codegen::PtxModule m = codegen::NvptxCompiler::instance().compile(ptrs, names, *codegen::parse_nvptx_arch("sm_80"));
  EXPECT_NE(m.ptx.find("atom.global.cas.b64"), std::string::npos);  // the f64 sum's accumulator
  EXPECT_NE(m.ptx.find("atom.global.cas.b32"), std::string::npos);  // the f32 max's
  std::string ptxas = testing::find_ptxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas";
  std::string file = ::testing::TempDir() + "/grid_reduce.ptx";
  std::ofstream(file) << m.ptx;
  std::string log;
  EXPECT_EQ(testing::run_ptxas(ptxas, file, "sm_80", &log), 0) << log;
}

}  // namespace
}  // namespace zyntax
