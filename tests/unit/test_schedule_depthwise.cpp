// Depthwise convolutions (and any running sum under a nest of loops and a
// guard) are turned inside out so the pixel loop is innermost
// (interchange_reductions), and the zero-padding guard becomes that loop's
// range (partition_guarded_loops). Checked on many shapes:
//   - the two passes on the reference executor against the original, bit for
//     bit: each output still takes its terms in the same order and skips the
//     same ones;
//   - the cpu device against the reference executor, with a NaN input and an
//     infinite weight next to the padding;
//   - the shape of the result: no test left in the innermost loop where the
//     guard is a range of it, the test kept where it is not (stride 2).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/registry.hpp"
#include "cir/passes/interchange_reductions.hpp"
#include "cir/passes/partition_guarded_loops.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "host_plan.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "product_parity.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::absolute;
using testing::add_specials;
using testing::expect_close;
using testing::kernel_of;

struct Depthwise {
  bool nhwc = false;
  int stride = 1, padding = 1;
  bool bias = true, relu = false;
};

std::string name(const Depthwise& d) {
  return std::string(d.nhwc ? "nhwc" : "nchw") + " stride=" + std::to_string(d.stride) +
         " padding=" + std::to_string(d.padding) + (d.bias ? " bias" : "") + (d.relu ? " relu" : "");
}

// NCHW: x[b, c, h, w], weights [c, kh, kw]; NHWC: x[b, h, w, c], weights [kh, kw, c].
std::string source(const Depthwise& d) {
  std::string s = std::to_string(d.stride), p = std::to_string(d.padding);
  std::string src = d.nhwc ? "def f(x: tensor[b, h, w, c, f32], wt: tensor[kh, kw, c, f32], bias: tensor[c, f32]) {\n"
                           : "def f(x: tensor[b, c, h, w, f32], wt: tensor[c, kh, kw, f32], bias: tensor[c, f32]) {\n";
  src += " let oh = (h + 2 * " + p + " - kh) / " + s + " + 1\n let ow = (w + 2 * " + p + " - kw) / " + s + " + 1\n";
  src += " return compute(x, wt, bias) {\n  @kernel conv2d_depthwise\n";
  src += d.nhwc ? "  for n in 0..b, y in 0..oh:\n   for z in 0..ow, ch in 0..c:\n"
                : "  for n in 0..b, ch in 0..c:\n   for y in 0..oh, z in 0..ow:\n";
  src += std::string("    var sum = ") + (d.bias ? "bias[ch]" : "0.0") + "\n";
  src += "    for dy in 0..kh, dz in 0..kw:\n";
  src += "     let iy = y * " + s + " + dy - " + p + "\n     let iz = z * " + s + " + dz - " + p + "\n";
  src += "     if iy >= 0 and iy < h and iz >= 0 and iz < w:\n";
  src += d.nhwc ? "      sum += x[n, iy, iz, ch] * wt[dy, dz, ch]\n" : "      sum += x[n, ch, iy, iz] * wt[ch, dy, dz]\n";
  src += d.nhwc ? "    out[n, y, z, ch] = " : "    out[n, ch, y, z] = ";
  src += d.relu ? "relu(sum)\n" : "sum\n";
  src += " }\n}";
  return src;
}

struct Shape {
  int64_t batch, channels, h, w, kh, kw;
};

// Odd sizes, 1x1 and non-square windows, a window wider than the image, batch 1 and 3.
const Shape kShapes[] = {{1, 3, 17, 13, 3, 3}, {2, 5, 9, 11, 3, 3}, {1, 16, 12, 12, 1, 1},
                         {3, 4, 10, 7, 5, 3},  {1, 7, 6, 20, 3, 5}, {1, 33, 15, 15, 3, 3},
                         {1, 2, 4, 3, 5, 5}};

struct Problem {
  std::vector<Tensor> inputs;
  std::map<std::string, int64_t> dims, host_dims;
  std::map<std::string, int64_t> all() const {
    std::map<std::string, int64_t> d = dims;
    d.insert(host_dims.begin(), host_dims.end());
    return d;
  }
};

// Nothing when the window does not fit (no output).
std::optional<Problem> problem(const Depthwise& d, const Shape& s, Random& rng) {
  int64_t oh = (s.h + 2 * d.padding - s.kh) / d.stride + 1, ow = (s.w + 2 * d.padding - s.kw) / d.stride + 1;
  if (s.h + 2 * d.padding < s.kh || s.w + 2 * d.padding < s.kw) return std::nullopt;
  Problem p;
  p.dims = {{"b", s.batch}, {"c", s.channels}, {"h", s.h}, {"w", s.w}, {"kh", s.kh}, {"kw", s.kw}};
  p.host_dims = {{"oh", oh}, {"ow", ow}};
  p.inputs = {rand_normal(rng, DType::F32, d.nhwc ? ::zyntax::Shape{s.batch, s.h, s.w, s.channels}
                                                  : ::zyntax::Shape{s.batch, s.channels, s.h, s.w}),
              rand_normal(rng, DType::F32, d.nhwc ? ::zyntax::Shape{s.kh, s.kw, s.channels}
                                                  : ::zyntax::Shape{s.channels, s.kh, s.kw}),
              rand_normal(rng, DType::F32, {s.channels})};
  return p;
}

std::string shape_text(const Shape& s) {
  return "b=" + std::to_string(s.batch) + " c=" + std::to_string(s.channels) + " " + std::to_string(s.h) + "x" +
         std::to_string(s.w) + " k=" + std::to_string(s.kh) + "x" + std::to_string(s.kw);
}

// Bit for bit, NaN where NaN.
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int reported = 0;
  for (int64_t e = 0; e < want.numel() && reported < 5; ++e) {
    double g = got.get(e).f, w = want.get(e).f;
    if (std::isnan(w) ? !std::isnan(g) : g != w) {
      ADD_FAILURE() << what << ": element " << e << " is " << g << ", the reference has " << w;
      ++reported;
    }
  }
}

const Depthwise kForms[] = {
    {false, 1, 1, true, false}, {false, 2, 1, true, false}, {false, 1, 0, false, true},
    {false, 1, 2, false, false}, {true, 1, 1, true, true},   {true, 2, 2, false, false},
};

class ScheduleDepthwise : public ::testing::TestWithParam<Depthwise> {};

TEST_P(ScheduleDepthwise, PassesKeepTheReferenceResultBitForBit) {
  const Depthwise& d = GetParam();
  cir::Kernel generic = kernel_of(source(d));
  Random rng(3);
  int variant = 0;
  for (const Shape& s : kShapes) {
    std::optional<Problem> p = problem(d, s, rng);
    if (!p) continue;
    std::string what = name(d) + " " + shape_text(s) + add_specials(p->inputs, variant++);
    cir::Kernel k = cir::specialize(generic, p->all());
    cir::Kernel scheduled = cir::partition_guarded_loops(cir::interchange_reductions(k));
    EXPECT_NE(cir::print(scheduled).find("sumacc%"), std::string::npos) << what << ": not interchanged";
    expect_same(ReferenceKernel(scheduled).run(p->inputs, {}), ReferenceKernel(k).run(p->inputs, {}), what);
  }
}

TEST_P(ScheduleDepthwise, CpuDeviceMatchesTheReference) {
  const Depthwise& d = GetParam();
  CompiledCompute compiled(kernel_of(source(d)));
  Device* cpu = device_registry().find("cpu");
  Device* ref = device_registry().find("cpu:reference");
  Random rng(5);
  int variant = 0;
  for (const Shape& s : kShapes) {
    std::optional<Problem> p = problem(d, s, rng);
    if (!p) continue;
    std::string what = name(d) + " " + shape_text(s) + add_specials(p->inputs, variant++);
    Tensor want = compiled.launch(*ref, p->inputs, p->host_dims, {});
    Tensor got = compiled.launch(*cpu, p->inputs, p->host_dims, {});
    Tensor scale = compiled.launch(*ref, absolute(p->inputs), p->host_dims, {});
    expect_close(got, want, scale, what);
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, ScheduleDepthwise, ::testing::ValuesIn(kForms),
                         [](const ::testing::TestParamInfo<Depthwise>& i) {
                           std::string n = name(i.param);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

std::string planned(const Depthwise& d, const Shape& s) {
  Random rng(1);
  std::optional<Problem> p = problem(d, s, rng);
  CpuPlan plan = testing::host_cpu_plan(cir::specialize(kernel_of(source(d)), p->all()), 2);
  EXPECT_TRUE(plan.kernel.has_value()) << plan.why_not;
  return plan.kernel ? cir::print(*plan.kernel) : "";
}

// Stride 1 NCHW, a batch of one whose channels the tasks share: the pixel
// loop goes inside the kernel row (dy) and outside the short window column
// loop (dz); where the window lies wholly inside the image (1 <= z < 55) the
// dz loop has its whole constant range, so it unrolls and z is innermost over
// plain loads; the two border pixels keep the cut range. The row's padding
// is the dy range.
TEST(ScheduleDepthwiseShape, PixelLoopSplitWhereTheWindowIsWhole) {
  std::string text = planned({false, 1, 1, true, false}, {1, 32, 56, 56, 3, 3});
  EXPECT_NE(text.find("parallel for n%ch in 0..32 {\n    let n: i64 = n%ch / 32\n    let ch: i64 = n%ch % 32\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("for dy in max(0, 1 - y)..min(3, 57 - y) {\n"
                      "        for z%2%s0 in 0..1 {\n"
                      "          for dz%s0 in max(0, 1 - z%2%s0)..min(3, 57 - z%2%s0) {"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("for z%2%s1 in 1..55 {\n          for dz%s1 in 0..3 {\n"
                      "            sumacc%0[z%2%s1] = sumacc%0[z%2%s1] + x[n, ch, dy + y - 1, dz%s1 + z%2%s1 - 1] * "
                      "wt[ch, dy, dz%s1]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("for z%2%s2 in 55..56 {"), std::string::npos) << text;
}

// Stride 2: the window's columns are a range of dz, so it becomes dz's range,
// but that range is whole where 2z - 1 >= 0, a step of 2 in z: no split.
TEST(ScheduleDepthwiseShape, StrideTwoCutsTheWindowWithoutSplitting) {
  std::string text = planned({false, 2, 1, true, false}, {1, 8, 15, 15, 3, 3});
  EXPECT_NE(text.find("for dy in max(0, 1 - y * 2)..min(3, 16 - y * 2) {\n        for z%2 in 0..8 {\n"
                      "          for dz in max(0, 1 - z%2 * 2)..min(3, 16 - z%2 * 2) {"),
            std::string::npos)
      << text;
}

// NHWC: the guard does not read the channel loop, so it stays innermost
// under the whole window, tested once per window position.
TEST(ScheduleDepthwiseShape, ChannelLoopInnermostInNhwc) {
  std::string text = planned({true, 1, 1, true, false}, {1, 16, 9, 9, 3, 3});
  EXPECT_NE(text.find("for dz in max(0, 1 - z)..min(3, 10 - z) {\n          for ch%2 in 0..16 {"), std::string::npos)
      << text;
}

// A let nobody reads would be dropped by inlining, and with it a read the
// reference checks: the nest is not inlined. Turned statement by statement
// instead, the let stays, its read with it, and the reference still
// reports the index out of range.
TEST(ScheduleDepthwiseShape, UnreadLetKeepsItsRead) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[n, k, f32]) {\n return compute(x) {\n  @kernel fused\n  for i in 0..n, j in 0..k:\n"
                "   var s = 0.0\n   for t in 0..k:\n    let unused = x[i + t, j]\n    s += x[i, t]\n   out[i, j] = s\n }\n}"),
      {{"n", 4}, {"k", 5}});
  cir::Kernel turned = cir::interchange_reductions(k);
  std::string text = cir::print(turned);
  EXPECT_NE(text.find("let unused: f32 = x[i + t, j%"), std::string::npos) << text;
  Random rng(1);
  Tensor x = rand_uniform(rng, DType::F32, {4, 5}, -1, 1);
  EXPECT_THROW(ReferenceKernel(k).run({x}, {}), std::exception);
  EXPECT_THROW(ReferenceKernel(turned).run({x}, {}), std::exception);
}

// partition_guarded_loops alone: the part of a guard free of the loop is
// tested once outside it; a part that is no unit-step range stays inside, a
// part that is one becomes the loop's range.
TEST(PartitionGuardedLoops, UniformGuardIsTestedOnceAndStridedGuardStays) {
  cir::Kernel k = cir::specialize(
      kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n  @kernel fused\n  for i in 0..n:\n"
                "   var s = 0.0\n   for j in 0..n:\n    if i > 2 and j * 2 < n:\n     s += x[j]\n   out[i] = s\n }\n}"),
      {{"n", 9}});
  std::string text = cir::print(cir::partition_guarded_loops(k));
  EXPECT_NE(text.find("if i > 2 {\n      for j in 0..9 {\n        if j * 2 < 9 {"), std::string::npos) << text;
  cir::Kernel u = cir::specialize(
      kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n  @kernel fused\n  for i in 0..n:\n"
                "   var s = 0.0\n   for j in 0..n:\n    if i > 2 and j >= i:\n     s += x[j]\n   out[i] = s\n }\n}"),
      {{"n", 9}});
  std::string moved = cir::print(cir::partition_guarded_loops(u));
  EXPECT_NE(moved.find("if i > 2 {\n      for j in max(0, i)..9 {\n        s = s + x[j]"), std::string::npos) << moved;
}

}  // namespace
}  // namespace zyntax
