// gpu_row_registers: a GPU block per row with each thread's share of the
// row in registers. The op library's row kernels and softmax at odd sizes
// (rows that the threads do not divide, rows shorter than the block) give
// the result of the schedule they come from on the reference executor;
// softmax's row is loaded once, into a thread-private array, by unrolled
// loops whose loads ptxas sees side by side (eight 4-byte loads a thread for
// a row of 2048, no local memory); rows longer than a thread may keep, and
// rows one loop reads, are not kept.
#include <gtest/gtest.h>

#include "cir/passes/collapse_parallel_loops.hpp"
#include "cir/passes/gpu_row_registers.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/schedule_gpu_rows.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "kernel_source.hpp"
#include "op_library_kernels.hpp"
#include "ptxas.hpp"
#include "schedule_parity.hpp"

namespace zyntax {
namespace {

using testing::expect_same_result;
using testing::kernel_of;

const char* kSoftmax =
    "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n"
    "  for j in 0..c:\n   m = max(m, x[i, j])\n  var s = 0.0\n  for j in 0..c:\n   s += exp(x[i, j] - m)\n"
    "  let inv = 1.0 / s\n  for j in 0..c:\n   out[i, j] = exp(x[i, j] - m) * inv\n }\n}";

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(GpuRowRegisters, OpLibraryRowKernelsGiveTheirSchedulesResult) {
  Session session;
  int kept = 0;
  for (const auto& [name, generic] : testing::op_library_kernels(session)) {
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{3, 37}, {1, 300}, {5, 1}, {2, 64}, {4, 65}}) {
      std::map<std::string, int64_t> dims;
      for (const cir::DimParam& d : generic.dims) dims[d.name] = dims.empty() ? rows : n;
      cir::Kernel k = cir::specialize(generic, dims);
      k = cir::collapse_parallel_loops(cir::scalarize_tiles(k, nullptr).value_or(k));
      for (int threads : {32, 256}) {
        std::optional<cir::Kernel> s = cir::schedule_gpu_rows(k, threads);
        if (!s) continue;
        cir::Kernel r = cir::gpu_row_registers(*s);
        kept += cir::print(r).find("%row: tensor[") != std::string::npos;
        expect_same_result(*s, r, name + " at " + std::to_string(rows) + "x" + std::to_string(n) + ", " + std::to_string(threads) + " threads");
      }
    }
  }
  EXPECT_GT(kept, 0);
}

TEST(GpuRowRegisters, SoftmaxLoadsItsRowOnceAtOddSizes) {
  cir::Kernel generic = kernel_of(kSoftmax);
  for (auto [r, c] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {2, 63}, {2, 64}, {2, 65}, {1, 1000}, {7, 129}}) {
    cir::Kernel k = cir::specialize(generic, {{"r", r}, {"c", c}});
    for (int threads : {32, 128, 256}) {
      std::string what = std::to_string(r) + "x" + std::to_string(c) + " by " + std::to_string(threads);
      cir::Kernel rows = *cir::schedule_gpu_rows(k, threads);
      cir::Kernel kept = cir::gpu_row_registers(rows);
      std::string text = cir::print(kept);
      int64_t per_thread = (c + threads - 1) / threads;
      if (per_thread > cir::kMostRowElements) {
        EXPECT_EQ(text, cir::print(rows)) << what << ": more than a thread keeps";
        continue;
      }
      EXPECT_NE(text.find("local x%row: tensor[" + std::to_string(threads) + ", " + std::to_string(per_thread) + ", f32]"), std::string::npos)
          << what << "\n" << text;
      EXPECT_EQ(count(text, "= x[i, "), 1) << what << ": one load of the row\n" << text;
      EXPECT_EQ(count(text, "unrolled(" + std::to_string(per_thread) + ")"), 3) << what << "\n" << text;
      EXPECT_EQ(text.find("if j") != std::string::npos, c % threads != 0) << what << ": a guard where the threads do not divide the row\n" << text;
      expect_same_result(k, kept, what);
    }
  }
}

TEST(GpuRowRegisters, ARowOf2048IsEightLoadsAThreadInRegisters) {
  cir::Kernel k = cir::specialize(kernel_of(kSoftmax), {{"r", 64}, {"c", 2048}});
  cir::Kernel kept = cir::gpu_row_registers(*cir::schedule_gpu_rows(k, 256));
  testing::expect_ptx_assembles({kept}, {"softmax_rows"}, "row_registers", [](const std::string& ptx) {
    EXPECT_EQ(count(ptx, "ld.global.nc.f32"), 8) << ptx;
    EXPECT_EQ(count(ptx, ".local"), 0) << ptx;
  });
}

TEST(GpuRowRegisters, LongRowsAndRowsReadOnceAreNotKept) {
  cir::Kernel k = cir::specialize(kernel_of(kSoftmax), {{"r", 2}, {"c", 256 * 17}});
  cir::Kernel rows = *cir::schedule_gpu_rows(k, 256);
  EXPECT_EQ(cir::print(cir::gpu_row_registers(rows)), cir::print(rows)) << "17 elements a thread";
  cir::Kernel sum = cir::specialize(kernel_of("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n"
                                              "  var s = 0.0\n  for j in 0..c:\n   s += x[i, j]\n  out[i] = s\n }\n}"),
                                    {{"r", 3}, {"c", 100}});
  cir::Kernel sum_rows = *cir::schedule_gpu_rows(sum, 32);
  cir::Kernel unrolled = cir::gpu_row_registers(sum_rows);
  std::string text = cir::print(unrolled);
  EXPECT_EQ(text.find("%row: tensor["), std::string::npos) << text;
  EXPECT_NE(text.find("unrolled(4)"), std::string::npos) << text;
  expect_same_result(sum, unrolled, "row sum");
}

}  // namespace
}  // namespace zyntax
