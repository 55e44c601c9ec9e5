// Fusion of compute blocks as programs meet them (fusion/block_fusion,
// fusion/run_plan, interp/compute_runner's pending blocks): whole programs
// run with fusion on and off on every device here, their saved results
// compared bit for bit, and each reason a pair is not fused said by
// --explain-fusion.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <unistd.h>

#include "backends/registry.hpp"
#include "cir/storage_buffers.hpp"
#include "driver/session.hpp"
#include "cir/passes/schedule_matmul.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "cir/register_pressure.hpp"
#include "fusion/run_plan.hpp"
#include "gpu_targets.hpp"
#include "interp/host_interpreter.hpp"
#include "kernel_source.hpp"
#include "lower/check_program.hpp"
#include "plan/gpu_plan.hpp"
#include "plan/kernel_support.hpp"
#include "program_run.hpp"

namespace zyntax {
namespace {

using Run = testing::ProgramRun;

std::unique_ptr<Run> run(const std::string& src, const std::string& device, bool fusion) {
  RunOptions o;
  o.device = device;
  o.fusion = fusion;
  o.explain_fusion = &std::cerr;  // any stream: the run's own takes its place
  return testing::run_program(src, o);
}

std::vector<std::string> devices() {
  std::vector<std::string> d = {"cpu:reference", "cpu"};
  if (device_registry().find("vulkan:0")) d.push_back("vulkan:0");
  return d;
}

std::string bytes_of(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// `src` fails on every device, fused and not, with the same located error
// and nothing printed.
void fails_the_same_fused_and_not(const std::string& src) {
  for (const std::string& device : devices()) {
    auto fused = run(src, device, true);
    auto unfused = run(src, device, false);
    EXPECT_FALSE(fused->ok);
    EXPECT_FALSE(unfused->ok);
    EXPECT_EQ(fused->errors(), unfused->errors()) << device;
    EXPECT_TRUE(contains(fused->errors(), "p.zynml:")) << fused->errors();
    EXPECT_EQ(fused->out.str(), "");
  }
}

// `src` saves its results as OUT/NAME.npy: on every device, fused and not,
// the same bytes; returns the explanation of the fused run on the reference.
std::string same_fused_and_not(const std::string& src, const std::vector<std::string>& saved) {
  std::string explained;
  for (const std::string& device : devices()) {
    std::map<std::string, std::string> results[2];
    for (bool fusion : {false, true}) {
      std::filesystem::path dir = std::filesystem::temp_directory_path() / ("zyntax_fusion_" + std::to_string(getpid()));
      std::filesystem::create_directories(dir);
      std::string program = src;
      for (size_t at; (at = program.find("OUT/")) != std::string::npos;) program.replace(at, 4, dir.string() + "/");
      auto r = run(program, device, fusion);
      EXPECT_TRUE(r->ok) << device << " fusion " << fusion << ": " << r->errors();
      for (const std::string& name : saved) results[fusion][name] = bytes_of(dir / (name + ".npy"));
      std::filesystem::remove_all(dir);
      if (fusion && device == "cpu:reference") explained = r->explain.str();
    }
    for (const std::string& name : saved) {
      EXPECT_FALSE(results[0][name].empty()) << device << ": " << name;
      EXPECT_EQ(results[0][name], results[1][name]) << device << ": " << name << " differs with fusion";
    }
  }
  return explained;
}

TEST(BlockFusion, AChainOfElementwiseBlocksRunsAsOneKernelWithTheSameBits) {
  std::string why = same_fused_and_not(
      "let x = rand([37, 19])\nlet bias = rand([19])\n"
      "let a = compute(x, bias) {\n  @kernel elementwise\n  for i in 0..37, j in 0..19:\n    out[i, j] = x[i, j] * 2.5 + bias[j]\n}\n"
      "let b = compute(a) {\n  for i in 0..37, j in 0..19:\n    let t = tanh(a[i, j])\n    out[i, j] = t * t - a[i, j]\n}\n"
      "let c = compute(b, x) {\n  @kernel elementwise\n  for i in 0..37, j in 0..19:\n    out[i, j] = b[i, j] * x[i, j] + exp(-b[i, j])\n}\n"
      "save(c, \"OUT/c.npy\")\n",
      {"c"});
  EXPECT_TRUE(contains(why, "the blocks at lines 3, 8, 13 run as one kernel, a+b+c")) << why;
}

TEST(BlockFusion, NarrowIntermediatesKeepTheirRounding) {
  // f16 and i8 results rounded and saturated inside the fused kernel as in memory.
  std::string why = same_fused_and_not(
      "let x = rand([5, 33]) * 300.0 - 150.0\n"
      "let a = compute(x) {\n  @kernel elementwise\n  for i in 0..5, j in 0..33:\n    out[i, j] = f16(x[i, j] / 3.0)\n}\n"
      "let b = compute(a, x) {\n  @kernel elementwise\n  for i in 0..5, j in 0..33:\n    out[i, j] = i8(f32(a[i, j]) * 3.0 - x[i, j] + x[i, j] / 2.0)\n}\n"
      "let c = compute(b) {\n  @kernel elementwise\n  for i in 0..5, j in 0..33:\n    out[i, j] = f32(b[i, j]) * 0.5\n}\n"
      "save(c, \"OUT/c.npy\")\n",
      {"c"});
  EXPECT_TRUE(contains(why, "run as one kernel, a+b+c")) << why;
}

TEST(BlockFusion, ChainsInsideFunctionsAndLoopsFuse) {
  std::string why = same_fused_and_not(
      "def step(x: tensor[n, f32]) {\n  let a = compute(x) {\n    @kernel elementwise\n    for i in 0..n:\n      out[i] = x[i] + 1.0\n  }\n"
      "  let b = compute(a) {\n    @kernel elementwise\n    for i in 0..n:\n      out[i] = a[i] * a[i]\n  }\n  return b\n}\n"
      "var v = rand([101])\nfor k in 0..3 {\n  v = step(v)\n}\nsave(v, \"OUT/v.npy\")\n",
      {"v"});
  EXPECT_TRUE(contains(why, "run as one kernel, a+b")) << why;
}

// Each pair that does not fuse, and why; the results are the same either way.
struct Refusal {
  const char* name;
  const char* second;  // the second block (reads `a`), after `let a = ...` below
  const char* why;
};

class BlockFusionRefuses : public ::testing::TestWithParam<Refusal> {};

TEST_P(BlockFusionRefuses, AndSaysWhy) {
  const Refusal& r = GetParam();
  std::string src = std::string("let x = rand([24])\nlet idx = astype(rand([24]) * 20.0, i64)\n") +
                    "let a = compute(x) {\n  @kernel elementwise\n  for i in 0..24:\n    out[i] = x[i] * 3.0\n}\n" + r.second +
                    "save(b, \"OUT/b.npy\")\n";
  std::string why = same_fused_and_not(src, {"b"});
  EXPECT_TRUE(contains(why, r.why)) << why;
  EXPECT_FALSE(contains(why, "run as one kernel")) << why;
}

INSTANTIATE_TEST_SUITE_P(
    Reasons, BlockFusionRefuses,
    ::testing::Values(
        Refusal{"read_by_host", "print(a[3])\nlet b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + 1.0\n}\n", ""},
        Refusal{"read_later", "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + 1.0\n}\nprint(sum(a))\n",
                "'a' is also read by host code"},
        Refusal{"shifted_index", "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] - a[23 - i]\n}\n",
                "the consumer reads it at an index that is not a loop over its whole axis"},
        Refusal{"fewer_elements", "let b = compute(a) {\n  for i in 0..20:\n    out[i] = a[i]\n}\n",
                "the consumer reads it at an index that is not a loop over its whole axis"},
        Refusal{"under_a_condition", "let b = compute(a, x) {\n  for i in 0..24:\n    if x[i] > 0.5:\n      out[i] = a[i]\n}\n",
                "the consumer reads it under a condition"},
        Refusal{"in_a_select", "let b = compute(a, x) {\n  for i in 0..24:\n    out[i] = select(x[i] > 0.5, a[i], 0.0)\n}\n",
                "the consumer reads it under a condition"},
        Refusal{"sizes_only", "let b = compute(a, x) {\n  for i in 0..24:\n    out[i] = x[i]\n}\n", "the consumer only takes its sizes"},
        Refusal{"annotations", "let b = compute(a) {\n  @workgroup(64)\n  for i in 0..24:\n    out[i] = a[i]\n}\n",
                "their annotations differ"},
        Refusal{"device", "let b = compute(a) {\n  @device(\"cpu:reference\")\n  for i in 0..24:\n    out[i] = a[i]\n}\n",
                "it names its device"}),
    [](const ::testing::TestParamInfo<Refusal>& i) { return std::string(i.param.name); });

// Reductions: computed by rows inside the blocks that read them.
TEST(BlockFusion, ASoftmaxOfFourBlocksRunsAsOneRowKernel) {
  std::string why = same_fused_and_not(
      "let x = randn([37, 29]) * 4.0\n"
      "let m = compute(x) {\n  @kernel reduce(max, axis=1)\n  for i in 0..37, j in 0..29:\n    yield x[i, j]\n}\n"
      "let e = compute(x, m) {\n  @kernel elementwise\n  for i in 0..37, j in 0..29:\n    out[i, j] = exp(x[i, j] - m[i])\n}\n"
      "let s = compute(e) {\n  @kernel reduce(+, axis=1)\n  for i in 0..37, j in 0..29:\n    yield e[i, j]\n}\n"
      "let y = compute(e, s) {\n  @kernel elementwise\n  for i in 0..37, j in 0..29:\n    out[i, j] = e[i, j] / s[i]\n}\n"
      "save(y, \"OUT/y.npy\")\n",
      {"y"});
  EXPECT_TRUE(contains(why, "the blocks at lines 2, 7, 12, 17 run as one kernel, m+e+s+y")) << why;
}

TEST(BlockFusion, ProducersFeedReductionsAndBroadcasts) {
  // An element-wise producer into a reduction (its prologue), read whole by
  // a later block's loops at a broadcast: an RMS norm of rows, of an
  // integer-valued input so that its sums are exact.
  std::string why = same_fused_and_not(
      "let x = astype(astype(randn([23, 17]) * 8.0, i32), f32)\n"
      "let sq = compute(x) {\n  @kernel elementwise\n  for i in 0..23, j in 0..17:\n    out[i, j] = x[i, j] * x[i, j]\n}\n"
      "let ss = compute(sq) {\n  @kernel reduce(+, axis=1)\n  for i in 0..23, j in 0..17:\n    yield sq[i, j]\n}\n"
      "let y = compute(x, ss) {\n  for i in 0..23, j in 0..17:\n    out[i, j] = x[i, j] / sqrt(ss[i] / 17.0 + 1e-5)\n}\n"
      "save(y, \"OUT/y.npy\")\n",
      {"y"});
  EXPECT_TRUE(contains(why, "run as one kernel, sq+ss+y")) << why;
  // A reduction over the first axis is not one of rows: computed first.
  std::string columns = same_fused_and_not(
      "let x = rand([23, 17])\n"
      "let cs = compute(x) {\n  @kernel reduce(max, axis=0)\n  for i in 0..23, j in 0..17:\n    yield x[i, j]\n}\n"
      "let y = compute(x, cs) {\n  for i in 0..23, j in 0..17:\n    out[i, j] = x[i, j] - cs[j]\n}\n"
      "save(y, \"OUT/y.npy\")\n",
      {"y"});
  EXPECT_TRUE(contains(columns, "not fused: line 2 into line 7")) << columns;
  std::string running = same_fused_and_not(
      "let x = rand([24])\nlet a = compute(x) {\n  @kernel elementwise\n  for i in 0..24:\n    out[i] = x[i] * 3.0\n}\n"
      "let b = compute(a) {\n  var s = 0.0\n  for i in 0..24:\n    s += a[i]\n    out[i] = s\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(running, "run as one kernel, a+b")) << running;
}

TEST(BlockFusion, ReductionsThatAreNotRowsAreComputedFirst) {
  std::string arg = same_fused_and_not(
      "let x = rand([6, 9])\n"
      "let k = compute(x) {\n  @kernel reduce(argmax, axis=1)\n  for i in 0..6, j in 0..9:\n    yield (x[i, j], j)\n}\n"
      "let y = compute(k) {\n  for i in 0..6:\n    out[i] = k[i] * 2\n}\nsave(y, \"OUT/y.npy\")\n",
      {"y"});
  EXPECT_TRUE(contains(arg, "the producer is an arg or logical reduction")) << arg;
}

TEST(BlockFusion, ReadsThatCannotBeInlinedSayWhy) {
  // The diagonal of a producer: one loop over both of its axes.
  std::string diagonal = same_fused_and_not(
      "let x = rand([8, 8])\nlet a = compute(x) {\n  @kernel elementwise\n  for i in 0..8, j in 0..8:\n    out[i, j] = x[i, j] + 1.0\n}\n"
      "let b = compute(a) {\n  for i in 0..8:\n    out[i] = a[i, i]\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(diagonal, "the consumer reads it with one loop on two axes")) << diagonal;
  // A row sum read inside another row sum's loop: computed first; the rest fuses.
  std::string nested = same_fused_and_not(
      "let x = astype(astype(randn([8, 8]) * 4.0, i32), f32)\n"
      "let t = compute(x) {\n  @kernel reduce(+, axis=1)\n  for i in 0..8, j in 0..8:\n    yield x[i, j]\n}\n"
      "let s = compute(x, t) {\n  @kernel reduce(+, axis=1)\n  for i in 0..8, j in 0..8:\n    yield x[i, j] * t[j]\n}\n"
      "let y = compute(x, s) {\n  for i in 0..8, j in 0..8:\n    out[i, j] = x[i, j] - s[i]\n}\nsave(y, \"OUT/y.npy\")\n",
      {"y"});
  EXPECT_TRUE(contains(nested, "not fused: line 2 into line 12: the consumer reads it inside another reduction's loop")) << nested;
  EXPECT_TRUE(contains(nested, "the blocks at lines 7, 12 run as one kernel, s+y")) << nested;
}

// Producers and runs the rules turn away, each with its reason.
TEST(BlockFusion, EveryOtherRefusalSaysWhy) {
  struct Program {
    const char* src;
    const char* why;
  };
  const Program programs[] = {
      {"let x = rand([24])\nlet a = compute(x) {\n  var s = 0.0\n  for i in 0..24:\n    s += x[i]\n    out[i] = s\n}\n"
       "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] * 2.0\n}\nsave(b, \"OUT/b.npy\")\n",
       "the producer is not a nest of parallel loops"},
      {"let x = rand([24])\nlet a = compute(x) {\n  for i in 0..24:\n    out[i] = 1.0\n    out[i] = out[i] + x[i]\n}\n"
       "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] * 2.0\n}\nsave(b, \"OUT/b.npy\")\n",
       "the producer reads or writes its result elsewhere"},
      {"let x = rand([24])\nlet a = compute(x) {\n  for i in 0..24:\n    var v = x[i]\n    out[i, 0] = v\n}\n"
       "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i, 0] * 2.0\n}\nsave(b, \"OUT/b.npy\")\n",
       "the producer stores at an index that is not its loop variables"},
      {"let x = rand([16, 16])\nlet a = compute(x) {\n  @kernel elementwise\n  for i in 0..16, j in 0..16:\n"
       "    out[i, j] = tanh(exp(x[i, j]) + 1.0) * 2.0 - 1.0\n}\n"
       "let b = compute(a, x) {\n  for i in 0..16, j in 0..16:\n    var s = 0.0\n    for k in 0..16:\n      s += a[i, k] * x[k, j]\n"
       "    out[i, j] = s\n}\nsave(b, \"OUT/b.npy\")\n",
       "the consumer reads each element again in a loop over another axis"},
  };
  for (const Program& p : programs) {
    std::string why = same_fused_and_not(p.src, {"b"});
    EXPECT_TRUE(contains(why, p.why)) << p.src << "\n" << why;
    EXPECT_FALSE(contains(why, "run as one kernel")) << why;
  }
}

// The remaining reasons a producer is not taken in, each reached by a
// program as a user would write it; the results are the same either way.
TEST(BlockFusion, EachRemainingRefusalIsReachedAndSaid) {
  const std::string head = "let x = rand([24])\nlet x2 = rand([6, 4])\nlet x3 = rand([3, 4, 5])\n"
                           "let idx = astype(arange(0, 24) * 5, i64) % 24\n";
  // A producer the rules cannot recompute (a var and a condition), so it moves.
  const std::string moved24 = "let a = compute(x) {\n  for i in 0..24:\n    var v = x[i]\n    if v > 0.5:\n      v = 0.5\n    out[i] = v\n}\n";
  const std::string moved6x4 =
      "let a = compute(x2) {\n  for i in 0..6, j in 0..4:\n    var v = x2[i, j]\n    if v > 0.5:\n      v = 0.5\n    out[i, j] = v\n}\n";
  struct Program {
    std::string src;
    const char* why;
  };
  const Program programs[] = {
      {"let a = compute(x, idx) {\n  out = zeros(24)\n  for i in 0..24:\n    out[idx[i]] += x[i]\n}\n"
       "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + 1.0\n}\n",
       "the producer cannot move: it updates its result atomically"},
      {"let a = compute(x) {\n  for i in 0..24:\n    barrier()\n    out[i] = x[i] * 2.0\n}\n"
       "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + 1.0\n}\n",
       "the producer cannot move: it synchronises threads"},
      {moved24 + "let b = compute(a) {\n  @kernel reduce(+)\n  for i in 0..24:\n    yield a[i]\n}\n", "the consumer is a reduction"},
      {moved24 + "let b = compute(a) {\n  var s = 0.0\n  for i in 0..24:\n    s += a[i]\n    out[i] = s\n}\n",
       "the consumer is not a nest of parallel loops"},
      {moved24 + "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + a[23 - i]\n}\n", "the consumer reads it at several indices"},
      {moved24 + "let b = compute(a) {\n  for i in 0..20:\n    out[i] = a[i]\n}\n", "the consumer's loops do not cover the producer's elements"},
      {moved6x4 + "let b = compute(a) {\n  for i in 0..6:\n    out[i] = a[i, 0]\n}\n",
       "the consumer reads it at an index that is not its loop variables"},
      {moved6x4 + "let b = compute(a) {\n  for i in 0..6, j in 0..4, k in 0..2:\n    out[i, j, k] = a[i, j]\n}\n",
       "the consumer's loops and the element it reads do not match one to one"},
      {moved6x4 + "let s = compute(a) {\n  @kernel reduce(+, axis=1)\n  for i in 0..6, j in 0..4:\n    yield a[i, j]\n}\n"
                  "let b = compute(x2, s) {\n  for i in 0..6, j in 0..4:\n    out[i, j] = x2[i, j] / s[i]\n}\n",
       "the consumer reads it inside a reduction's row"},
      {"let a = compute(x) {\n  @kernel reduce(+)\n  for i in 0..24:\n    yield x[i]\n}\n"
       "let b = compute(a, x) {\n  for i in 0..24:\n    out[i] = x[i] / a\n}\n",
       "the producer does not reduce rows of parallel loops"},
      {"let a = compute(x3) {\n  @kernel reduce(+, axis=1)\n  for i in 0..3, j in 0..4, k in 0..5:\n    yield x3[i, j, k]\n}\n"
       "let b = compute(a) {\n  for i in 0..3, k in 0..5:\n    out[i, k] = a[i, k] * 2.0\n}\n",
       "the producer yields to elements that are not its rows"},
      {"let a = compute(x) {\n  for i in 0..24:\n    out[i] = x[i] + out[i]\n}\n"
       "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + 1.0\n}\n",
       "the producer reads its own result"},
      {"let a = compute(x2) {\n  for i in 0..4:\n    out[i, i] = x2[i, i] * 2.0\n}\n"
       "let b = compute(a) {\n  for i in 0..4:\n    out[i] = a[i, i] + 1.0\n}\n",
       "the producer's loops and its element do not match one to one"},
  };
  for (const Program& p : programs) {
    std::string why = same_fused_and_not(head + p.src + "save(b, \"OUT/b.npy\")\n", {"b"});
    EXPECT_TRUE(contains(why, p.why)) << p.src << "\n" << why;
  }
  // More producers than one kernel takes: the first ones are computed first.
  std::string chain = "let a0 = rand([8])\n";
  for (int k = 1; k <= 66; ++k)
    chain += "let a" + std::to_string(k) + " = compute(a" + std::to_string(k - 1) + ") {\n  for i in 0..8:\n    out[i] = a" +
             std::to_string(k - 1) + "[i] * 0.5 + 1.0\n}\n";
  // (On the CPU alone: 66 kernels unfused take a while to build for a GPU.)
  auto fused = run(chain + "print(a66)\n", "cpu", true);
  auto unfused = run(chain + "print(a66)\n", "cpu", false);
  ASSERT_TRUE(fused->ok && unfused->ok) << fused->errors() << unfused->errors();
  EXPECT_EQ(fused->out.str(), unfused->out.str());
  EXPECT_TRUE(contains(fused->explain.str(), "too many producers in one kernel")) << fused->explain.str();
}

TEST(BlockFusion, AnExpensiveProducerReadManyTimesIsStored) {
  std::string why = same_fused_and_not(
      "let x = rand([16, 16])\n"
      "let a = compute(x) {\n  for i in 0..16, j in 0..16:\n"
      "    out[i, j] = sin(cos(sin(cos(x[i, j] * 2.0 + 1.0) * 3.0 + 2.0) * 4.0 + 3.0) * 5.0 + 4.0) * tanh(exp(x[i, j]) + log(x[i, j] + 1.0))"
      " + sqrt(x[i, j]) * erf(x[i, j] - 0.5) + sigmoid(x[i, j] * 7.0) - gelu(x[i, j] * 3.0) + atan(x[i, j]) * asin(x[i, j] * 0.5)\n}\n"
      "let b = compute(a) {\n  for i in 0..16, j in 0..16:\n    var s = 0.0\n    for k in 0..16:\n      s += a[i, k] * a[k, j]\n"
      "    out[i, j] = s + a[i, j] + a[j, i] + a[i, i] + a[j, j] + a[i, j] * a[j, i]\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(why, "recomputing it costs more than storing it")) << why;
}

TEST(BlockFusion, ProducersThatCannotMoveSayWhy) {
  // A producer that stores conditionally, one that scatters, one that reads its own result.
  std::string cond = same_fused_and_not(
      "let x = rand([24])\nlet a = compute(x) {\n  for i in 0..24:\n    if x[i] > 0.5:\n      out[i] = x[i]\n}\n"
      "let b = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + 1.0\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(cond, "the producer does not end by storing its element")) << cond;
  std::string scatter = same_fused_and_not(
      "let x = rand([24])\nlet idx = astype(rand([24]) * 20.0, i64)\n"
      "let a = compute(x, idx) {\n  out = zeros(24)\n  for i in 0..24:\n    out[idx[i]] += x[i]\n}\n"
      "let b = compute(a) {\n  for i in 0..20:\n    out[i] = a[i] + 1.0\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(scatter, "not fused")) << scatter;
  EXPECT_FALSE(contains(scatter, "run as one kernel")) << scatter;
}

// The fused product and epilogue is still a product to the schedules: the
// CPU's packed, register-blocked one and the GPU's tiled one take it.
TEST(BlockFusion, AProductWithItsEpilogueKeepsItsSchedules) {
  cir::Kernel product = testing::kernel_of(
      "def f(x: tensor[m, k, f32], w: tensor[k, n, f32]) {\n return compute(x, w) {\n  for i in 0..m, j in 0..n:\n   var s = 0.0\n"
      "   for kk in 0..k:\n    s += x[i, kk] * w[kk, j]\n   out[i, j] = s\n }\n}");
  cir::Kernel relu = testing::kernel_of(
      "def f(h: tensor[m, n, f32], b: tensor[n, f32]) {\n return compute(h, b) {\n  for i in 0..m, j in 0..n:\n"
      "   out[i, j] = max(h[i, j] + b[j], 0.0)\n }\n}");
  fusion::RunPlan plan = fusion::plan_run({{&product, "h", 2, false, {}}, {&relu, "y", 9, false, {}}});
  ASSERT_EQ(plan.launches.size(), 1u);
  const cir::Kernel& fused = plan.launches[0].kernel;
  cir::Kernel at = cir::specialize(fused, {{"m", 256}, {"k", 192}, {"n", 320}});
  EXPECT_TRUE(cir::schedule_matmul(at, cir::cpu_matmul_schedule(256, 2)).has_value()) << cir::print(at);
  GpuPlan gpu = gpu_plan(at, testing::test_gpu_target());
  ASSERT_TRUE(gpu.kernel) << gpu.why_not;
  EXPECT_EQ(gpu.schedule, GpuSchedule::TiledMatmul) << cir::print(at);
}

// A block that maps each element of a matrix product becomes the product's
// epilogue: the product keeps its loops, schedule and summation order (the
// same bits), its result never goes to memory.
TEST(BlockFusion, ElementwiseBlocksAfterAProductAreItsEpilogue) {
  const std::string product =
      "let x = rand([33, 33])\nlet bias = rand([33])\nlet p = compute(x) {\n  for i in 0..33, j in 0..33:\n    var s = 0.0\n"
      "    for k in 0..33:\n      s += x[i, k] * x[k, j]\n    out[i, j] = s\n}\n";
  std::string relu = same_fused_and_not(
      product + "let b = compute(p, bias) {\n  @kernel elementwise\n  for i in 0..33, j in 0..33:\n"
                "    let t = p[i, j] + bias[j]\n    out[i, j] = max(t, 0.0) * t\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(relu, "the blocks at lines 3, 10 run as one kernel, p+b")) << relu;
  // Two maps, the second narrowing to f16: one kernel, each rounding kept.
  std::string two = same_fused_and_not(
      product + "let c = compute(p, x) {\n  for i in 0..33, j in 0..33:\n    out[i, j] = tanh(p[i, j]) + x[i, j]\n}\n"
                "let b = compute(c) {\n  for i in 0..33, j in 0..33:\n    out[i, j] = f16(c[i, j] * 3.0)\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(two, "run as one kernel, p+c+b")) << two;
  // A consumer that does more than map each element keeps the product apart.
  std::string more = same_fused_and_not(
      product + "let b = compute(p) {\n  for i in 0..33, j in 0..33:\n    var v = p[i, j]\n    if v > 8.0:\n      v = 8.0\n"
                "    out[i, j] = v\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(more, "the producer has loops of its own (a product keeps its schedule), and the consumer does more than map each "
                             "of its elements")) << more;
  EXPECT_FALSE(contains(more, "run as one kernel")) << more;
  // A row reduction read with the product: never computed inside the
  // product's loops, whichever the consumer reads first.
  const std::string rows = "let r = compute(x) {\n  @kernel reduce(+, axis=1)\n  for i in 0..33, j in 0..33:\n    yield x[i, j]\n}\n";
  std::string product_first = same_fused_and_not(
      product + rows + "let b = compute(p, r) {\n  for i in 0..33, j in 0..33:\n    out[i, j] = p[i, j] / r[i]\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(product_first, "not fused: line 10 into line 15: the consumer became a product's epilogue")) << product_first;
  EXPECT_TRUE(contains(product_first, "run as one kernel, p+b")) << product_first;
  std::string rows_first = same_fused_and_not(
      product + rows + "let b = compute(p, r) {\n  for i in 0..33, j in 0..33:\n    out[i, j] = r[i] * p[i, j]\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(rows_first, "not fused: line 3 into line 15: the producer has loops of its own (a product keeps its schedule), and the "
                                   "consumer computes rows of reductions")) << rows_first;
  EXPECT_TRUE(contains(rows_first, "run as one kernel, r+b")) << rows_first;
}

TEST(BlockFusion, AScatterTakesTheProducerOfWhatItAdds) {
  // Each a[i] computed once, where the scatter reads it (indices distinct,
  // so the sums are deterministic).
  std::string why = same_fused_and_not(
      "let x = rand([24])\nlet idx = astype(arange(0, 24) * 5, i64) % 24\n"
      "let a = compute(x) {\n  @kernel elementwise\n  for i in 0..24:\n    out[i] = x[i] * 3.0\n}\n"
      "let b = compute(a, idx) {\n  out = zeros(24)\n  for i in 0..24:\n    out[idx[i]] += a[i]\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(why, "run as one kernel, a+b")) << why;
}

// Host code between blocks that reads none of their results and has no
// effect runs first; the blocks still fuse and see its values.
TEST(BlockFusion, QuietHostCodeBetweenBlocksRunsFirst) {
  std::string why = same_fused_and_not(
      "let x = rand([40])\nlet d = 64\n"
      "let a = compute(x) {\n  @kernel elementwise\n  for i in 0..40:\n    out[i] = x[i] * 2.0\n}\n"
      "let scale = 1.0 / sqrt(float(d))\nvar shift = max(x) * 0.5\nshift = shift + scale + x.shape[0]\n"
      "let b = compute(a) {\n  @kernel elementwise\n  for i in 0..40:\n    out[i] = a[i] * scale + shift\n}\n"
      "save(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(why, "the blocks at lines 3, 11 run as one kernel, a+b")) << why;
}

// Host code with an effect, or that reads a pending result, computes what
// is pending there; host code that rebinds what a pending block read does
// not change what it computes (it took its inputs and numbers when met).
TEST(BlockFusion, HostCodeThatMustSeeTheBlocksComputesThem) {
  const char* a = "let x = rand([40])\nvar s = 2.0\nlet a = compute(x) {\n  for i in 0..40:\n    out[i] = x[i] * s\n}\n";
  const char* b = "let b = compute(a) {\n  for i in 0..40:\n    out[i] = a[i] + s\n}\nsave(b, \"OUT/b.npy\")\n";
  struct Between {
    const char* code;
    const char* why;  // of --explain-fusion, where it says
  };
  const Between cases[] = {
      {"print(\"between\")\n", "pending blocks computed at line 7: print() has an effect"},
      {"let t0 = time()\n", "time() has an effect"},
      {"let r = rand([2])\n", "rand() has an effect"},
      {"let m = a[0]\n", "pending blocks computed at line 7: host code reads 'a'"},
      {"x[2] = 5.0\n", "pending blocks computed at line 7: host code writes into a tensor"},
  };
  for (const Between& c : cases) {
    std::string why = same_fused_and_not(std::string(a) + c.code + b, {"b"});
    EXPECT_FALSE(contains(why, "run as one kernel")) << c.code << why;
    EXPECT_TRUE(contains(why, c.why)) << c.code << why;
  }
  for (const char* rebinds : {"s = 3.0\n", "let x = zeros(40)\n", "let x = zeros(40)\ns = 7.0\n"}) {
    std::string why = same_fused_and_not(std::string(a) + rebinds + b, {"b"});
    EXPECT_TRUE(contains(why, "the blocks at lines 3, ")) << rebinds << why;
  }
  // A user's function named like a quiet builtin: each statement as written.
  std::string shadowed = same_fused_and_not(
      "def sqrt(v) {\n  print(\"called\")\n  return v\n}\n" + std::string(a) + "let r = sqrt(4.0)\n" + b, {"b"});
  EXPECT_FALSE(contains(shadowed, "run as one kernel")) << shadowed;
}

// Names bound again between blocks: each block reads what its names meant
// when it was met, fused or not.
TEST(BlockFusion, BlocksThatRebindANameStillFuse) {
  std::string twice = same_fused_and_not(
      "let x = rand([24])\nlet a = compute(x) {\n  for i in 0..24:\n    out[i] = x[i] * 3.0\n}\n"
      "let a = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + 1.0\n}\n"
      "let b = compute(x) {\n  for i in 0..24:\n    out[i] = x[i] * 2.0\n}\nsave(b, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(twice, "the blocks at lines 2, 6 run as one kernel")) << twice;
  std::string before = same_fused_and_not(
      "let x = rand([24])\nlet c = rand([24])\nlet a = compute(x, c) {\n  for i in 0..24:\n    out[i] = x[i] * c[i]\n}\n"
      "let c = compute(a) {\n  for i in 0..24:\n    out[i] = a[i] + 1.0\n}\nsave(c, \"OUT/b.npy\")\n",
      {"b"});
  EXPECT_TRUE(contains(before, "the blocks at lines 3, 7 run as one kernel")) << before;
}

// A host statement that fails between blocks reports after what the blocks
// before it report, as when each runs as written.
TEST(BlockFusion, AFailingHostStatementBetweenBlocksReportsInOrder) {
  const char* block_fails_first =
      "let x = astype(arange(0, 8), i32)\nlet a = compute(x) {\n  for i in 0..8:\n    out[i] = 7 / (x[i] - 5)\n}\n"
      "let k = 1 / (len(x) - 8)\nlet b = compute(a) {\n  for i in 0..8:\n    out[i] = a[i] * 2\n}\nprint(b)\n";
  const char* host_fails =
      "let x = astype(arange(0, 8), i32)\nlet a = compute(x) {\n  for i in 0..8:\n    out[i] = 7 / (x[i] + 1)\n}\n"
      "let k = 1 / (len(x) - 8)\nlet b = compute(a) {\n  for i in 0..8:\n    out[i] = a[i] * 2\n}\nprint(b)\n";
  for (const char* src : {block_fails_first, host_fails}) fails_the_same_fused_and_not(src);
}

// A function called from the C++ and Python APIs (Interpreter::call) runs
// its blocks as `zyntax run` does: fused, without the top level running.
TEST(BlockFusion, FunctionsCalledFromTheApisFuse) {
  Session session;
  LoadedModule* m = session.load_text(
      "lib.zynml",
      "def f(x: tensor[n, f32]) {\n  let a = compute(x) {\n    for i in 0..n:\n      out[i] = x[i] * 2.0\n  }\n"
      "  let b = compute(a) {\n    for i in 0..n:\n      out[i] = a[i] + 1.0\n  }\n  return b\n}\nprint(\"top level\")\n");
  ASSERT_TRUE(m && check_program(session, *m)) << session.diags().render_all();
  std::ostringstream out, explain;
  RunOptions o;
  o.out = &out;
  o.device = "cpu";
  o.explain_fusion = &explain;
  Interpreter interp(session, o);
  Tensor x = Tensor::zeros(DType::F32, {5});
  for (int64_t i = 0; i < 5; ++i) x.set(i, Scalar::of_float(0.5 * double(i), DType::F32));
  CallArgs args;
  args.positional = {Value::of_tensor(x)};
  args.positional_spans = {Span{}};
  Value y = interp.call(*m, "f", args);
  ASSERT_EQ(y.kind, Value::Kind::Tensor);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(y.tensor.get(i).as_double(), double(i) + 1.0);
  EXPECT_TRUE(contains(explain.str(), "the blocks at lines 2, 6 run as one kernel, a+b")) << explain.str();
  EXPECT_EQ(out.str(), "");
}

// A fused kernel binds every input of its blocks: on a GPU that may bind
// fewer storage buffers, the blocks run as two kernels instead.
TEST(BlockFusion, AFusionBeyondTheDevicesBufferLimitIsNotMade) {
  cir::Kernel a = testing::kernel_of(
      "def f(x: tensor[n, f32], y: tensor[n, f32]) {\n return compute(x, y) {\n  for i in 0..n:\n   out[i] = x[i] * y[i]\n }\n}");
  cir::Kernel b = testing::kernel_of(
      "def f(a: tensor[n, f32], z: tensor[n, f32], w: tensor[n, f32]) {\n return compute(a, z, w) {\n  for i in 0..n:\n"
      "   out[i] = a[i] + z[i] * w[i]\n }\n}");
  EXPECT_EQ(cir::gpu_storage_buffers(a, GpuApi::Vulkan), 4);  // x, y, out, status
  EXPECT_EQ(cir::gpu_storage_buffers(b, GpuApi::Vulkan), 5);
  std::vector<fusion::RunBlock> blocks = {{&a, "a", 2, false, {}}, {&b, "b", 7, false, {}}};
  EXPECT_EQ(fusion::plan_run(blocks).launches.size(), 1u);  // no limit: one kernel of x, y, z, w
  GpuTarget gpu;
  gpu.api = GpuApi::Vulkan;
  gpu.arch = "small";
  gpu.max_storage_buffers = 6;
  fusion::RunPlan fits = fusion::plan_run(blocks, &gpu);
  ASSERT_EQ(fits.launches.size(), 1u);
  EXPECT_EQ(cir::gpu_storage_buffers(fits.launches[0].kernel, GpuApi::Vulkan), 6);
  gpu.max_storage_buffers = 5;
  fusion::RunPlan split = fusion::plan_run(blocks, &gpu);
  ASSERT_EQ(split.launches.size(), 2u);
  ASSERT_FALSE(split.explanations.empty());
  EXPECT_EQ(split.explanations[0],
            "not fused: line 2 into line 7: the fused kernel would bind 6 storage buffers (its tensors, a reduction's accumulators, the "
            "status of its checks), more than the 5 a kernel may bind on vulkan small");
  // A reduction's accumulators count too, as each shader language binds them.
  cir::Kernel r = testing::kernel_of(
      "def f(x: tensor[m, n, f32]) {\n return compute(x) {\n  @kernel reduce(argmax, axis=1)\n  for i in 0..m, j in 0..n:\n"
      "   yield (x[i, j], j)\n }\n}");
  EXPECT_EQ(cir::gpu_storage_buffers(r, GpuApi::Vulkan), 6);  // x, out, index, best, seen, status
  EXPECT_EQ(cir::gpu_storage_buffers(r, GpuApi::WebGpu), 5);  // the output is the index
}

// CUDA passes every pointer, scalar and size as a kernel parameter, within
// a budget of bytes (4 KiB): a fusion that would pass it is not made, and a
// kernel beyond it runs elsewhere.
TEST(BlockFusion, AFusionBeyondTheDevicesParameterBytesIsNotMade) {
  cir::Kernel a = testing::kernel_of(
      "def f(x: tensor[n, f32], y: tensor[n, f32]) {\n return compute(x, y) {\n  for i in 0..n:\n   out[i] = x[i] * y[i]\n }\n}");
  cir::Kernel b = testing::kernel_of(
      "def f(a: tensor[n, f32], z: tensor[n, f32], w: tensor[n, f32]) {\n return compute(a, z, w) {\n  for i in 0..n:\n"
      "   out[i] = a[i] + z[i] * w[i]\n }\n}");
  EXPECT_EQ(cir::gpu_parameter_bytes(a), 8 * 5);  // x, y, out, n, status
  EXPECT_EQ(cir::gpu_parameter_bytes(b), 8 * 6);
  GpuTarget gpu = testing::nvidia_target("sm_80");
  EXPECT_EQ(gpu.max_parameter_bytes, 4096);
  std::vector<fusion::RunBlock> blocks = {{&a, "a", 2, false, {}}, {&b, "b", 7, false, {}}};
  fusion::RunPlan fits = fusion::plan_run(blocks, &gpu);
  ASSERT_EQ(fits.launches.size(), 1u);
  EXPECT_EQ(cir::gpu_parameter_bytes(fits.launches[0].kernel), 8 * 7);  // x, y, z, w, out, n, status
  gpu.max_parameter_bytes = 48;
  fusion::RunPlan split = fusion::plan_run(blocks, &gpu);
  ASSERT_EQ(split.launches.size(), 2u);
  ASSERT_FALSE(split.explanations.empty());
  EXPECT_EQ(split.explanations[0],
            "not fused: line 2 into line 7: the fused kernel would take 56 bytes of parameters (a pointer per tensor, its scalars and "
            "sizes), more than the 48 a kernel may take on cuda sm_80");
  // A kernel that takes more than the device allows runs on the host.
  gpu.max_parameter_bytes = 40;
  EXPECT_FALSE(gpu_support(a, gpu).why_not);
  EXPECT_EQ(gpu_support(b, gpu).why_not.value_or(""),
            "it would take 48 bytes of parameters (a pointer per tensor, its scalars and sizes), more than the 40 a kernel may take on "
            "cuda sm_80");
}

// A fused kernel whose threads would hold more registers than the device
// gives a thread (so that it would spill to memory) is not made where the
// consumer alone stays within them.
TEST(BlockFusion, AFusionBeyondTheDevicesRegistersIsNotMade) {
  cir::Kernel a = testing::kernel_of(
      "def f(x: tensor[n, f32], y: tensor[n, f32]) {\n return compute(x, y) {\n  for i in 0..n:\n   let p = x[i] * y[i]\n"
      "   let q = x[i] + y[i]\n   let r = x[i] - y[i]\n   out[i] = p * q + r * (p - q) + tanh(r) * p\n }\n}");
  cir::Kernel b = testing::kernel_of(
      "def f(a: tensor[n, f32], z: tensor[n, f32]) {\n return compute(a, z) {\n  for i in 0..n:\n   out[i] = a[i] * z[i] + a[i]\n }\n}");
  a = cir::specialize(a, {{"n", 4096}});
  b = cir::specialize(b, {{"n", 4096}});
  GpuTarget gpu = testing::nvidia_target("sm_80");
  EXPECT_EQ(gpu.max_registers_per_thread, 255);
  std::vector<fusion::RunBlock> blocks = {{&a, "a", 2, false, {}}, {&b, "b", 7, false, {}}};
  fusion::RunPlan fits = fusion::plan_run(blocks, &gpu);
  ASSERT_EQ(fits.launches.size(), 1u);
  int64_t fused = cir::estimated_registers(*gpu_plan(fits.launches[0].kernel, gpu).kernel);
  int64_t alone = cir::estimated_registers(*gpu_plan(b, gpu).kernel);
  ASSERT_GT(fused, alone);
  gpu.max_registers_per_thread = static_cast<int>(alone);
  fusion::RunPlan split = fusion::plan_run(blocks, &gpu);
  ASSERT_EQ(split.launches.size(), 2u);
  ASSERT_FALSE(split.explanations.empty());
  EXPECT_EQ(split.explanations[0], "not fused: line 2 into line 7: the fused kernel would hold about " + std::to_string(fused) +
                                       " registers per thread, more than the " + std::to_string(alone) +
                                       " a thread has on cuda sm_80 (it would spill to memory)");
  // A consumer already beyond the budget alone runs as it would: fused.
  gpu.max_registers_per_thread = static_cast<int>(alone) - 1;
  EXPECT_EQ(fusion::plan_run(blocks, &gpu).launches.size(), 1u);
}

// A fused kernel the device's GPU plan cannot take, where the consumer's
// plan can, is not made: here private memory too small for the registers
// in which the row schedule keeps a row that the fused kernel reads twice
// (by the fused maximum and by the sum) and the sum alone reads once.
TEST(BlockFusion, AFusionTheDevicesPlanCannotTakeIsNotMade) {
  cir::Kernel m = testing::kernel_of(
      "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n  @kernel reduce(max, axis=1)\n  for i in 0..r, j in 0..c:\n   yield x[i, j]\n }\n}");
  cir::Kernel d = testing::kernel_of(
      "def f(x: tensor[r, c, f32], m: tensor[r, f32]) {\n return compute(x, m) {\n  for i in 0..r:\n   var s = 0.0\n"
      "   for j in 0..c:\n    s += exp(x[i, j] - m[i])\n   out[i] = s\n }\n}");
  m = cir::specialize(m, {{"r", 64}, {"c", 1024}});
  d = cir::specialize(d, {{"r", 64}, {"c", 1024}});
  GpuTarget gpu = testing::nvidia_target("sm_80");
  std::vector<fusion::RunBlock> blocks = {{&m, "m", 3, false, {}}, {&d, "d", 9, false, {}}};
  fusion::RunPlan fits = fusion::plan_run(blocks, &gpu);
  ASSERT_EQ(fits.launches.size(), 1u);
  EXPECT_EQ(gpu_plan(fits.launches[0].kernel, gpu).schedule, GpuSchedule::Rows);
  gpu.private_memory_per_thread = 16;
  ASSERT_FALSE(gpu_plan(fits.launches[0].kernel, gpu).kernel);
  ASSERT_TRUE(gpu_plan(d, gpu).kernel);
  fusion::RunPlan split = fusion::plan_run(blocks, &gpu);
  ASSERT_EQ(split.launches.size(), 2u);
  ASSERT_FALSE(split.explanations.empty());
  EXPECT_EQ(split.explanations[0].rfind("not fused: line 3 into line 9: the fused kernel would not run on cuda sm_80 (", 0), 0u)
      << split.explanations[0];
}

TEST(BlockFusion, OffRunsEveryBlockAsWritten) {
  auto r = run("let x = rand([8])\nlet a = compute(x) {\n  for i in 0..8:\n    out[i] = x[i] + 1.0\n}\n"
               "let b = compute(a) {\n  for i in 0..8:\n    out[i] = a[i] * 2.0\n}\nprint(sum(b) > 0.0)\n",
               "cpu", false);
  ASSERT_TRUE(r->ok) << r->errors();
  EXPECT_EQ(r->explain.str(), "");
  EXPECT_EQ(r->out.str(), "true\n");
}

// A check failing inside a fused kernel reports as the unfused program
// does: the block it belongs to, its line and caret.
TEST(BlockFusion, ErrorsInFusedKernelsNameTheirOwnBlock) {
  const char* producer_fails =
      "let x = astype(arange(0, 8), i32)\nlet a = compute(x) {\n  for i in 0..8:\n    out[i] = 7 / (x[i] - 5)\n}\n"
      "let b = compute(a) {\n  for i in 0..8:\n    out[i] = a[i] * 2\n}\nprint(b)\n";
  const char* consumer_fails =
      "let x = rand([8])\nlet y = rand([4])\nlet a = compute(x) {\n  for i in 0..8:\n    out[i] = x[i] + 1.0\n}\n"
      "let b = compute(a, y) {\n  for i in 0..8:\n    out[i] = a[i] * y[i]\n}\nprint(b)\n";
  for (const char* src : {producer_fails, consumer_fails}) fails_the_same_fused_and_not(src);
}

// A layer per function, the common style: the blocks of several calls are
// pending together and fuse; each call's host numbers stay its own.
TEST(BlockFusion, BlocksInDifferentFunctionsFuse) {
  std::string why = same_fused_and_not(
      "def scale(x: tensor[n, f32], s: float) {\n  let y = compute(x) {\n    @kernel elementwise\n    for i in 0..n:\n"
      "      out[i] = x[i] * s + 1.0\n  }\n  return y\n}\n"
      "def act(x: tensor[n, f32]) -> tensor[n, f32] {\n  return compute(x) {\n    for i in 0..n:\n      out[i] = tanh(x[i])\n  }\n}\n"
      "let x = rand([1001])\nlet h = scale(x, 2.0)\nlet g = act(h)\nlet y = scale(g, -0.5)\nsave(y, \"OUT/y.npy\")\n",
      {"y"});
  EXPECT_TRUE(contains(why, "the blocks at lines 2, 10, 2 run as one kernel")) << why;
}

// A host loop that never reads its blocks' results: they fuse across
// iterations (up to a bound on what waits), and compute when read.
TEST(BlockFusion, BlocksFuseAcrossLoopIterations) {
  std::string why = same_fused_and_not(
      "var v = rand([7, 9])\nfor k in 0..4 {\n  v = compute(v) {\n    for i in 0..7, j in 0..9:\n      out[i, j] = v[i, j] * 0.5 + f32(k)\n  }\n}\n"
      "var w = rand([3])\nfor k in 0..300 {\n  w = compute(w) {\n    for i in 0..3:\n      out[i] = w[i] * 0.99 + 0.01\n  }\n}\n"
      "save(v, \"OUT/v.npy\")\nsave(w, \"OUT/w.npy\")\n",
      {"v", "w"});
  EXPECT_TRUE(contains(why, "run as one kernel, v+v+v+v")) << why;
}

// A block whose result nothing reads still runs, and its checks: its error
// is reported where the unfused program reports it.
TEST(BlockFusion, UnreadBlocksStillRunTheirChecks) {
  fails_the_same_fused_and_not(
      "let x = astype(arange(0, 8), i32)\nlet a = compute(x) {\n  for i in 0..8:\n    out[i] = 7 / (x[i] - 5)\n}\n"
      "let b = compute(x) {\n  for i in 0..8:\n    out[i] = x[i] * 2\n}\nprint(b)\n");
  fails_the_same_fused_and_not(
      "def f(x: tensor[n, i32]) {\n  compute(x) {\n    for i in 0..n:\n      out[i] = 7 / (x[i] - 5)\n  }\n  return 1\n}\n"
      "let x = astype(arange(0, 8), i32)\nlet k = f(x)\n");
  // Shapes are checked when a block is met, before what is pending runs.
  fails_the_same_fused_and_not(
      "let x = rand([8])\nlet y = rand([5])\nlet a = compute(x) {\n  for i in 0..8:\n    out[i] = x[i] + 1.0\n}\n"
      "def g(p: tensor[n, f32], q: tensor[n, f32]) {\n  return compute(p, q) {\n    for i in 0..n:\n      out[i] = p[i] * q[i]\n  }\n}\n"
      "let b = g(a, y)\nprint(b)\n");
}

}  // namespace
}  // namespace zyntax
