// group_thread_elements: in the GPU plan each thread of an element-wise
// kernel takes 16 bytes of consecutive elements (4 f32, 8 bf16), which the
// PTX loads and stores as vectors on the read-only path; the planned kernel
// gives the original's result on the reference executor, 1-D and 2-D with a
// broadcast operand; counts the width does not divide, reductions and rows
// with inner loops keep their form.
#include <gtest/gtest.h>

#include "cir/passes/group_thread_elements.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "gpu_targets.hpp"
#include "kernel_source.hpp"
#include "ptxas.hpp"
#include "schedule_parity.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

const char* kRelu = "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = relu(x[i])\n }\n}";
const char* kScaleBias =
    "def f(x: tensor[m, n, f32], b: tensor[n, f32]) {\n return compute(x, b) {\n @kernel elementwise\n for i in 0..m, j in 0..n:\n"
    "  out[i, j] = x[i, j] * 2.0 + b[j]\n }\n}";
const char* kSquareBf16 =
    "def f(x: tensor[n, bf16]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * x[i]\n }\n}";

cir::Kernel planned(const char* src, std::map<std::string, int64_t> dims) {
  GpuPlan plan = gpu_plan(cir::specialize(kernel_of(src), dims), testing::test_gpu_target());
  EXPECT_TRUE(plan.kernel) << plan.why_not;
  return plan.kernel ? *plan.kernel : cir::Kernel{};
}

TEST(GroupThreadElements, EachThreadTakesSixteenBytesOfConsecutiveElements) {
  for (int64_t n : {4, 8, 1000, 4096}) {
    cir::Kernel original = cir::specialize(kernel_of(kRelu), {{"n", n}});
    cir::Kernel k = planned(kRelu, {{"n", n}});
    EXPECT_NE(cir::print(k).find("parallel for i%g in 0.." + std::to_string(n / 4) + " {\n    unrolled(4) for i%u in 0..4"), std::string::npos)
        << cir::print(k);
    testing::expect_same_result(original, k, "relu at " + std::to_string(n));
  }
  for (auto [m, n] : {std::pair<int64_t, int64_t>{3, 4}, {7, 12}, {33, 20}}) {
    cir::Kernel original = cir::specialize(kernel_of(kScaleBias), {{"m", m}, {"n", n}});
    cir::Kernel k = planned(kScaleBias, {{"m", m}, {"n", n}});
    EXPECT_NE(cir::print(k).find("unrolled(4)"), std::string::npos) << cir::print(k);
    testing::expect_same_result(original, k, "scale and bias at " + std::to_string(m) + "x" + std::to_string(n));
  }
  cir::Kernel bf16 = planned(kSquareBf16, {{"n", 64}});
  EXPECT_NE(cir::print(bf16).find("unrolled(8)"), std::string::npos) << cir::print(bf16);
  testing::expect_same_result(cir::specialize(kernel_of(kSquareBf16), {{"n", 64}}), bf16, "bf16 square");
}

TEST(GroupThreadElements, KeepsWhatItCannotGroup) {
  // Counts the width does not divide.
  for (int64_t n : {1, 3, 1001}) EXPECT_EQ(cir::print(planned(kRelu, {{"n", n}})).find("unrolled"), std::string::npos) << n;
  // A row per iteration (an inner loop), and a reduction.
  cir::Kernel rows = cir::specialize(
      kernel_of("def f(x: tensor[m, n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..m:\n  var s = 0.0\n"
                "  for j in 0..n:\n   s += x[i, j]\n  out[i] = s\n }\n}"),
      {{"m", 8}, {"n", 8}});
  EXPECT_EQ(cir::print(cir::group_thread_elements(rows, 4)), cir::print(rows));
  cir::Kernel sum = cir::specialize(
      kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(sum)\n for i in 0..n:\n  yield x[i]\n }\n}"), {{"n", 64}});
  EXPECT_EQ(cir::print(cir::group_thread_elements(sum, 4)), cir::print(sum));
}

TEST(GroupThreadElements, LoadsAndStoresSixteenBytesAtATimeInPtx) {
  std::vector<cir::Kernel> kernels = {planned(kRelu, {{"n", 4096}}), planned(kSquareBf16, {{"n", 4096}})};
  testing::expect_ptx_assembles(kernels, {"relu", "square"}, "grouped", [](const std::string& ptx) {
    // bf16 elements move as 32-bit pairs.
    for (const char* op : {"ld.global.nc.v4.f32", "st.global.v4.f32", "ld.global.nc.v4.u32", "st.global.v4.b32"})
      EXPECT_NE(ptx.find(op), std::string::npos) << op << "\n" << ptx;
  });
}

}  // namespace
}  // namespace zyntax
