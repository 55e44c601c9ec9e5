// Convolutions run as matrix products (schedule_matmul over an im2col view:
// rows = output channels or pixels, columns = pixels or output channels,
// reduction = input channel x kernel window; at stride 1 in NCHW, the input
// read in place from a padded copy as a sliding window), checked on many shapes:
//   - the scheduled CIR on the reference executor against the original;
//   - the cpu device against the reference executor, with NaN inputs and
//     infinite weights next to the zero padding (where the original skips
//     the term and a plain im2col product would make NaN of inf * 0);
//   - where the schedule applies.
// Sums are regrouped, so results agree to 1e-4 of the same convolution of
// |x|, |w| and |bias| (the parity bound of long reductions).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/registry.hpp"
#include "cir/passes/schedule_matmul.hpp"
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

enum class Layout { NCHW, NHWC };

struct Conv {
  Layout layout = Layout::NCHW;
  int stride = 1, padding = 1;
  bool bias = true, relu = false;
  int dilation = 1;
  bool mirrored = false;  // a true convolution: the window read back to front
  bool bf16_result = false;  // sums rounded to bf16 at the store (no sliding window then)
};

std::string name(const Conv& c) {
  return std::string(c.layout == Layout::NCHW ? "nchw" : "nhwc") + " stride=" + std::to_string(c.stride) +
         " padding=" + std::to_string(c.padding) + (c.bias ? " bias" : "") + (c.relu ? " relu" : "") +
         (c.dilation > 1 ? " dilation=" + std::to_string(c.dilation) : "") + (c.mirrored ? " mirrored" : "") +
         (c.bf16_result ? " bf16" : "");
}

// The convolution in ZynML. NCHW: x[b, ic, h, w], weights [oc, ic, kh, kw];
// NHWC: x[b, h, w, ic], weights [kh, kw, ic, oc].
std::string source(const Conv& c) {
  std::string s = std::to_string(c.stride), p = std::to_string(c.padding), d = std::to_string(c.dilation);
  bool nchw = c.layout == Layout::NCHW;
  std::string src = nchw ? "def f(x: tensor[b, ic, h, w, f32], wt: tensor[oc, ic, kh, kw, f32], bias: tensor[oc, f32]) {\n"
                         : "def f(x: tensor[b, h, w, ic, f32], wt: tensor[kh, kw, ic, oc, f32], bias: tensor[oc, f32]) {\n";
  src += " let oh = (h + 2 * " + p + " - " + d + " * (kh - 1) - 1) / " + s + " + 1\n let ow = (w + 2 * " + p + " - " + d +
         " * (kw - 1) - 1) / " + s + " + 1\n";
  src += " return compute(x, wt, bias) {\n  @kernel conv2d\n";
  src += nchw ? "  for n in 0..b, o in 0..oc:\n   for y in 0..oh, z in 0..ow:\n"
              : "  for n in 0..b, y in 0..oh:\n   for z in 0..ow, o in 0..oc:\n";
  src += std::string("    var sum = ") + (c.bias ? "bias[o]" : "0.0") + "\n";
  src += nchw ? "    for c in 0..ic:\n     for dy in 0..kh, dz in 0..kw:\n" : "    for dy in 0..kh, dz in 0..kw:\n     for c in 0..ic:\n";
  if (c.mirrored) {  // iy = y * s + (kh - 1 - dy) * d - p
    src += "      let iy = y * " + s + " + (kh - 1 - dy) * " + d + " - " + p + "\n      let iz = z * " + s + " + (kw - 1 - dz) * " + d + " - " + p + "\n";
  } else {
    src += "      let iy = y * " + s + " + dy * " + d + " - " + p + "\n      let iz = z * " + s + " + dz * " + d + " - " + p + "\n";
  }
  src += "      if iy >= 0 and iy < h and iz >= 0 and iz < w:\n";
  src += nchw ? "       sum += x[n, c, iy, iz] * wt[o, c, dy, dz]\n" : "       sum += x[n, iy, iz, c] * wt[dy, dz, c, o]\n";
  src += nchw ? "    out[n, o, y, z] = " : "    out[n, y, z, o] = ";
  std::string result = c.relu ? "relu(sum)" : "sum";
  src += (c.bf16_result ? "bf16(" + result + ")" : result) + "\n";
  src += " }\n}";
  return src;
}

struct Shape4 {
  int64_t batch, in_c, h, w, out_c, kh, kw;
};

// Odd channel counts and sizes, 1x1 and non-square windows, batch 1 and 3;
// 61 channels x 3x3 = 549 reduction steps: two depth blocks of 275, which
// split a window (packing starts and stops mid-window).
const Shape4 kShapes[] = {{1, 3, 17, 13, 8, 3, 3},  {2, 5, 9, 11, 17, 3, 3}, {1, 16, 12, 12, 24, 1, 1},
                          {3, 4, 10, 7, 9, 5, 3},   {1, 7, 6, 20, 32, 3, 5}, {1, 32, 15, 15, 16, 3, 3},
                          {1, 61, 9, 10, 12, 3, 3}};

struct Problem {
  std::vector<Tensor> inputs;
  std::map<std::string, int64_t> dims, host_dims;
};

Problem problem(const Conv& c, const Shape4& s, Random& rng) {
  Problem p;
  int64_t oh = (s.h + 2 * c.padding - c.dilation * (s.kh - 1) - 1) / c.stride + 1;
  int64_t ow = (s.w + 2 * c.padding - c.dilation * (s.kw - 1) - 1) / c.stride + 1;
  p.dims = {{"b", s.batch}, {"ic", s.in_c}, {"h", s.h}, {"w", s.w}, {"oc", s.out_c}, {"kh", s.kh}, {"kw", s.kw}};
  p.host_dims = {{"oh", oh}, {"ow", ow}};
  bool nchw = c.layout == Layout::NCHW;
  p.inputs = {rand_normal(rng, DType::F32, nchw ? Shape{s.batch, s.in_c, s.h, s.w} : Shape{s.batch, s.h, s.w, s.in_c}),
              rand_normal(rng, DType::F32, nchw ? Shape{s.out_c, s.in_c, s.kh, s.kw} : Shape{s.kh, s.kw, s.in_c, s.out_c}),
              rand_normal(rng, DType::F32, {s.out_c})};
  return p;
}

std::map<std::string, int64_t> all_dims(const Problem& p) {
  std::map<std::string, int64_t> d = p.dims;
  d.insert(p.host_dims.begin(), p.host_dims.end());
  return d;
}

std::string shape_text(const Shape4& s) {
  return "b=" + std::to_string(s.batch) + " ic=" + std::to_string(s.in_c) + " " + std::to_string(s.h) + "x" +
         std::to_string(s.w) + " oc=" + std::to_string(s.out_c) + " k=" + std::to_string(s.kh) + "x" + std::to_string(s.kw);
}

const Conv kConvs[] = {
    {Layout::NCHW, 1, 1, true, false}, {Layout::NCHW, 2, 1, true, false}, {Layout::NCHW, 1, 0, false, true},
    {Layout::NCHW, 1, 2, false, false}, {Layout::NHWC, 1, 1, true, true},  {Layout::NHWC, 2, 2, false, false},
    {Layout::NCHW, 1, 2, true, false, 2},   {Layout::NCHW, 1, 1, true, false, 1, true},
    {Layout::NCHW, 1, 1, true, true, 1, false, true},
};

class ScheduleConv : public ::testing::TestWithParam<Conv> {};

// The pass alone, for a few thread counts (they change how tasks split the
// work), with the input packed and, where it is a sliding window, read in
// place whatever the share of real pixels.
TEST_P(ScheduleConv, ScheduledKernelMatchesTheOriginalOnTheReference) {
  const Conv& c = GetParam();
  cir::Kernel generic = kernel_of(source(c));
  Random rng(3);
  for (const Shape4& s : {kShapes[0], kShapes[1], kShapes[3], kShapes[5], kShapes[6]}) {
    for (auto [threads, window_use] : {std::pair{1, 0.0}, std::pair{3, 0.0}, std::pair{1, 2.0}, std::pair{3, 2.0}}) {
      Problem p = problem(c, s, rng);
      std::string what = name(c) + " " + shape_text(s) + " threads=" + std::to_string(threads) +
                         (window_use > 1 ? " packed" : " window");
      cir::Kernel k = cir::specialize(generic, all_dims(p));
      cir::MatMulSchedule schedule = cir::cpu_matmul_schedule(512, threads);
      schedule.min_window_use = window_use;
      std::optional<cir::Kernel> scheduled = cir::schedule_matmul(k, schedule);
      ASSERT_TRUE(scheduled.has_value()) << what;
      bool window = cir::print(*scheduled).find("rows ko%mm") != std::string::npos;
      EXPECT_EQ(window, window_use < 1 && c.stride == 1 && c.dilation == 1 && c.layout == Layout::NCHW && !c.bf16_result) << what;
      Tensor want = ReferenceKernel(k).run(p.inputs, {});
      Tensor got = ReferenceKernel(*scheduled).run(p.inputs, {});
      Tensor scale = ReferenceKernel(k).run(absolute(p.inputs), {});
      expect_close(got, want, scale, what);
    }
  }
}

// The cpu device against the reference, with specials: a NaN input, and an
// infinite weight whose taps also fall on the padding.
TEST_P(ScheduleConv, CpuDeviceMatchesTheReference) {
  const Conv& c = GetParam();
  CompiledCompute compiled(kernel_of(source(c)));
  Device* cpu = device_registry().find("cpu");
  Device* ref = device_registry().find("cpu:reference");
  Random rng(5);
  int variant = 0;
  for (const Shape4& s : kShapes) {
    Problem p = problem(c, s, rng);
    std::string what = name(c) + " " + shape_text(s);
    what += add_specials(p.inputs, variant++);
    CpuPlan plan = testing::host_cpu_plan(cir::specialize(compiled.generic(), all_dims(p)), 2);
    ASSERT_TRUE(plan.kernel.has_value()) << what << ": " << plan.why_not;
    EXPECT_NE(cir::print(*plan.kernel).find("matmul_block"), std::string::npos) << what << ": not scheduled";
    Tensor want = compiled.launch(*ref, p.inputs, p.host_dims, {});
    Tensor got = compiled.launch(*cpu, p.inputs, p.host_dims, {});
    Tensor scale = compiled.launch(*ref, absolute(p.inputs), p.host_dims, {});
    expect_close(got, want, scale, what);
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, ScheduleConv, ::testing::ValuesIn(kConvs), [](const ::testing::TestParamInfo<Conv>& i) {
  std::string n = name(i.param);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

// The weights of an NCHW convolution are a row-major A whose reduction steps
// are adjacent: with one image and two threads they are read in place. The
// padding guard goes into the packed input, behind a check that the weights
// are finite.
TEST(ScheduleConvApplies, AsAnIm2colProductWithWeightsInPlace) {
  Conv c;
  Random rng(1);
  Problem p = problem(c, {1, 64, 56, 56, 64, 3, 3}, rng);
  cir::Kernel k = cir::specialize(kernel_of(source(c)), all_dims(p));
  std::optional<cir::Kernel> out = cir::schedule_matmul(k, cir::cpu_matmul_schedule(512, 2));
  ASSERT_TRUE(out.has_value());
  std::string text = cir::print(*out);
  EXPECT_NE(text.find("<- wt["), std::string::npos) << text;
  EXPECT_EQ(text.find("ap%mm"), std::string::npos) << text;
  EXPECT_NE(text.find("fin%mm"), std::string::npos) << text;
}

// At stride 1 the input is a sliding window: no B is packed, the padded
// image is filled once per task and the micro-kernel reads it through the
// window's offsets. A stride or dilation of 2 is no window.
TEST(ScheduleConvApplies, AtStrideOneAsASlidingWindowOverThePaddedInput) {
  for (int threads : {1, 2}) {
    Random rng(1);
    Problem p = problem(Conv{}, {1, 64, 56, 56, 64, 3, 3}, rng);
    std::optional<cir::Kernel> out =
        cir::schedule_matmul(cir::specialize(kernel_of(source(Conv{})), all_dims(p)), cir::cpu_matmul_schedule(512, threads));
    ASSERT_TRUE(out.has_value());
    std::string text = cir::print(*out);
    // 58 padded rows of 57 per channel (a row's zero column past its end is
    // the next row's first); the offset of the last tap, channel 63 at
    // window (2, 2), is 63 * 3306 + 2 * 57 + 2.
    EXPECT_NE(text.find("rows ko%mm[pc%mm..] <= " + std::to_string(63 * 3306 + 2 * 57 + 2)), std::string::npos) << text;
    // The last pixels read one column into the next channel's plane: its
    // first is zeroed whatever part of the image a task fills.
    EXPECT_NE(text.find("xp%mm[cf%mm * 3306 + ys%mm] = 0.0"), std::string::npos) << text;
    EXPECT_EQ(text.find("bp%mm"), std::string::npos) << text;
    EXPECT_NE(text.find("<- wt["), std::string::npos) << text;
  }
  Conv strided;
  strided.stride = 2;
  Random rng(1);
  Problem p = problem(strided, {1, 64, 56, 56, 64, 3, 3}, rng);
  std::optional<cir::Kernel> out =
      cir::schedule_matmul(cir::specialize(kernel_of(source(strided)), all_dims(p)), cir::cpu_matmul_schedule(512, 2));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(cir::print(*out).find("rows ko%mm"), std::string::npos);
}

// The gradient of a convolution's weights, as the op library writes it:
// rows = the window's taps (c, dy, dz), columns = output channels, depth =
// batch x output pixels. A's runs along the depth are the long ones, so its
// panels are copied along the image rows with the padding as each run's
// range; batches of several images and odd sizes split depth blocks
// mid-image and mid-row.
std::string weight_gradient_source(int stride, int padding) {
  std::string s = std::to_string(stride), p = std::to_string(padding);
  return "def f(x: tensor[b, ic, h, w, f32], g: tensor[b, oc, oh, ow, f32], kh: i64, kw: i64) {\n"
         " return compute(x, g) {\n  @kernel conv2d\n  for c in 0..ic, dy in 0..kh:\n   for dz in 0..kw, o in 0..oc:\n"
         "    var sum = 0.0\n    for n in 0..b:\n     for y in 0..oh, z in 0..ow:\n"
         "      let iy = y * " + s + " + dy - " + p + "\n      let iz = z * " + s + " + dz - " + p + "\n"
         "      if iy >= 0 and iy < h and iz >= 0 and iz < w:\n       sum += x[n, c, iy, iz] * g[n, o, y, z]\n"
         "    out[c, dy, dz, o] = sum\n }\n}";
}

TEST(ScheduleConvApplies, ToTheWeightGradientPackingAlongTheImageRows) {
  Device* cpu = device_registry().find("cpu");
  Device* ref = device_registry().find("cpu:reference");
  Random rng(7);
  for (auto [stride, padding] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 0}, std::pair{1, 2}, std::pair{2, 0}}) {
    CompiledCompute compiled(kernel_of(weight_gradient_source(stride, padding)));
    for (const Shape4& s : {kShapes[0], kShapes[1], kShapes[3], kShapes[4], Shape4{3, 8, 31, 29, 16, 3, 3}}) {
      int64_t oh = (s.h + 2 * padding - s.kh) / stride + 1, ow = (s.w + 2 * padding - s.kw) / stride + 1;
      std::vector<Tensor> in = {rand_normal(rng, DType::F32, {s.batch, s.in_c, s.h, s.w}),
                                rand_normal(rng, DType::F32, {s.batch, s.out_c, oh, ow})};
      std::map<std::string, int64_t> host = {{"kh", s.kh}, {"kw", s.kw}};
      std::map<std::string, int64_t> dims = {{"b", s.batch}, {"ic", s.in_c}, {"h", s.h},  {"w", s.w},
                                             {"oc", s.out_c}, {"oh", oh},     {"ow", ow}, {"kh", s.kh}, {"kw", s.kw}};
      std::string what = "stride=" + std::to_string(stride) + " padding=" + std::to_string(padding) + " " + shape_text(s);
      cir::Kernel k = cir::specialize(compiled.generic(), dims);
      for (int threads : {1, 3}) {
        cir::MatMulSchedule schedule = cir::cpu_matmul_schedule(512, threads);
        schedule.kc = 100;  // several depth blocks even at these sizes
        std::optional<cir::Kernel> scheduled = cir::schedule_matmul(k, schedule);
        ASSERT_TRUE(scheduled.has_value()) << what;
        if (ow > s.kw) {  // copied a run at a time into rows of rt%mm, then interleaved into the panel
          EXPECT_NE(cir::print(*scheduled).find("for dv%mm"), std::string::npos) << what << "\n" << cir::print(*scheduled);
          EXPECT_NE(cir::print(*scheduled).find("rt%mm["), std::string::npos) << what;
        }
        expect_close(ReferenceKernel(*scheduled).run(in, {}), ReferenceKernel(k).run(in, {}), ReferenceKernel(k).run(absolute(in), {}),
                     what + " threads=" + std::to_string(threads));
      }
      expect_close(compiled.launch(*cpu, in, host, {}), compiled.launch(*ref, in, host, {}), compiled.launch(*ref, absolute(in), host, {}),
                   what + " on cpu");
    }
  }
}

// Without a guard there is nothing to check; a depthwise convolution (each
// output channel reads only its own input channel) is no matrix product.
TEST(ScheduleConvApplies, NotToDepthwiseConvolutions) {
  cir::Kernel dw = kernel_of(
      "def f(x: tensor[b, c, h, w, f32], wt: tensor[c, kh, kw, f32]) {\n return compute(x, wt) {\n"
      "  @kernel conv2d_depthwise\n  for n in 0..b, ch in 0..c:\n   for y in 0..h - kh + 1, z in 0..w - kw + 1:\n"
      "    var sum = 0.0\n    for dy in 0..kh, dz in 0..kw:\n     sum += x[n, ch, y + dy, z + dz] * wt[ch, dy, dz]\n"
      "    out[n, ch, y, z] = sum\n }\n}");
  cir::Kernel k = cir::specialize(dw, {{"b", 1}, {"c", 32}, {"h", 30}, {"w", 30}, {"kh", 3}, {"kw", 3}});
  EXPECT_FALSE(cir::schedule_matmul(k, cir::cpu_matmul_schedule(512, 2)).has_value());
}

}  // namespace
}  // namespace zyntax
