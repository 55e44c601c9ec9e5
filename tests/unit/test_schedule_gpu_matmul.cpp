// schedule_gpu_matmul: a matrix product tiled through shared memory with
// thread-private accumulators. On the reference executor (race-checked,
// shared arrays starting as NaN) the scheduled kernel gives the original's
// result within the rounding of its fused multiply-adds (same products, same
// order), for plain, transposed, batched, biased and epilogue products and a
// padded convolution (its guard kept as a mask) at odd sizes, in both tile
// shapes; the plan picks it for large products and its PTX passes ptxas; the
// verifier holds thread-private arrays to their rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cir/passes/schedule_gpu_matmul.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "cir/verifier.hpp"
#include "gpu_targets.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "ptxas.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

struct Product {
  const char* name;
  const char* source;
};

const Product kProducts[] = {
    {"plain", "def f(a: tensor[m, k, f32], b: tensor[k, n, f32]) {\n return compute(a, b) {\n @kernel matmul\n for i in 0..m, j in 0..n:\n"
              "  var s = 0.0\n  for p in 0..k:\n   s += a[i, p] * b[p, j]\n  out[i, j] = s\n }\n}"},
    {"transposed_a", "def f(a: tensor[k, m, f32], b: tensor[k, n, f32]) {\n return compute(a, b) {\n @kernel matmul\n for i in 0..m, j in 0..n:\n"
                     "  var s = 0.0\n  for p in 0..k:\n   s += a[p, i] * b[p, j]\n  out[i, j] = s\n }\n}"},
    {"bias_relu", "def f(a: tensor[m, k, f32], b: tensor[n, k, f32], c: tensor[n, f32]) {\n return compute(a, b, c) {\n @kernel matmul\n"
                  " for i in 0..m, j in 0..n:\n  var s = c[j]\n  for p in 0..k:\n   s += a[i, p] * b[j, p]\n  out[i, j] = max(s * 0.5, 0.0)\n }\n}"},
    {"batched", "def f(a: tensor[h, m, k, f32], b: tensor[h, k, n, f32]) {\n return compute(a, b) {\n @kernel matmul\n"
                " for g in 0..h, i in 0..m, j in 0..n:\n  var s = 0.0\n  for p in 0..k:\n   s += a[g, i, p] * b[g, p, j]\n  out[g, i, j] = s\n }\n}"},
    // A padded 2-D convolution (NCHW, 3x3, padding 1): rows are the output
    // channels (m), columns the output positions (n x n), depth (k, 3, 3).
    {"conv2d_padded", "def f(x: tensor[k, n, n, f32], w: tensor[m, k, kh, kw, f32]) {\n return compute(x, w) {\n @kernel conv2d\n"
                      " for o in 0..m, y in 0..n, z in 0..n:\n  var s = 0.0\n  for c in 0..k, r in 0..kh, q in 0..kw:\n"
                      "   if y + r - 1 >= 0 and y + r - 1 < n and z + q - 1 >= 0 and z + q - 1 < n:\n"
                      "    s += w[o, c, r, q] * x[c, y + r - 1, z + q - 1]\n  out[o, y, z] = s\n }\n}"},
};

std::vector<Tensor> inputs_of(const cir::Kernel& k, Random& rng) {
  std::vector<Tensor> in;
  for (const cir::Param& p : k.params) {
    if (p.role != cir::ParamRole::Input) continue;
    Shape shape;
    for (const cir::Expr& e : p.type.shape) shape.push_back(e.as<cir::IntImm>()->value);
    in.push_back(rand_normal(rng, DType::F32, shape));
  }
  return in;
}

// The inputs' magnitudes: the kernel on them bounds the sum of |terms|.
std::vector<Tensor> magnitudes(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    Tensor a = t.clone();
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, Scalar::of_float(std::fabs(a.get(i).f), DType::F32));
    out.push_back(a);
  }
  return out;
}

TEST(ScheduleGpuMatmul, WithinRoundingOfTheReferencesProductAtOddSizes) {
  for (const Product& p : kProducts) {
    cir::Kernel generic = kernel_of(p.source);
    bool conv = std::string(p.name) == "conv2d_padded";
    // {64, 64, 16}, {64, 68, 36} and {132, 136, 20}: rows of 16-byte runs, so
    // plain and batched products copy asynchronously (the last two with a
    // short last depth step).
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {5, 7, 3}, {64, 64, 16}, {65, 63, 17},
                           {129, 131, 11}, {64, 68, 36}, {132, 136, 20}}) {
      if (conv) n = std::min<int64_t>(n, 12);  // n x n positions: 144 at most, so both tile shapes
      std::map<std::string, int64_t> dims = {{"m", m}, {"n", n}, {"k", k}, {"h", 2}, {"kh", 3}, {"kw", 3}};
      std::map<std::string, int64_t> used;
      for (const cir::DimParam& d : generic.dims) used[d.name] = dims.at(d.name);
      cir::Kernel kernel = cir::specialize(generic, used);
      std::string why;
      std::optional<cir::Kernel> s = cir::schedule_gpu_matmul(kernel, testing::test_gpu_target(1), &why);
      ASSERT_TRUE(s) << p.name << ": " << why;
      Random rng(11);
      std::vector<Tensor> in = inputs_of(kernel, rng);
      Tensor want = ReferenceKernel(kernel).run(in, {}), got = ReferenceKernel(*s).run(in, {});
      Tensor bound = ReferenceKernel(kernel).run(magnitudes(in), {});
      ASSERT_EQ(want.shape(), got.shape());
      for (int64_t i = 0; i < want.numel(); ++i)
        ASSERT_NEAR(got.get(i).f, want.get(i).f, 1e-5 * bound.get(i).f + 1e-30)
            << p.name << " at " << m << "x" << n << "x" << k << ", element " << i << "\n" << cir::print(*s);
    }
  }
}

// Both tile shapes, the fused multiply-add that makes each step, and the
// factors' tiles copied asynchronously three stages deep where both are
// inputs read along their last axis (X's rows 12 floats apart in shared
// memory, depth contiguous); a transposed B or a guarded factor is copied
// between barriers instead.
TEST(ScheduleGpuMatmul, LargeProductsTakeLargerTilesAndCopiesRunAhead) {
  cir::Kernel generic = kernel_of(kProducts[0].source);
  std::string large = cir::print(*cir::schedule_gpu_matmul(cir::specialize(generic, {{"m", 128}, {"n", 300}, {"k", 20}}), testing::test_gpu_target(1)));
  std::string small = cir::print(*cir::schedule_gpu_matmul(cir::specialize(generic, {{"m", 127}, {"n", 300}, {"k", 20}}), testing::test_gpu_target(1)));
  EXPECT_NE(large.find("local acc%mm: tensor[256, 64, f32]"), std::string::npos) << large;
  EXPECT_NE(large.find("shared xs%mm4: tensor[1536, f32]"), std::string::npos) << large;  // the third stage's X: 128 rows of 8 + 4
  EXPECT_NE(large.find("async_copy xs%mm2[d%as + s%as * 12] <- a[rt%mm * 128 + s%as, d%as] count 4"), std::string::npos) << large;
  EXPECT_NE(large.find("async_wait 1"), std::string::npos) << large;
  EXPECT_NE(large.find("= fma(xs%mm2[(t%mm6 / 16 + a%mm2 * 16) * 12 + kk%mm2]"), std::string::npos) << large;
  EXPECT_NE(small.find("local acc%mm: tensor[256, 16, f32]"), std::string::npos) << small;
  std::string transposed =
      cir::print(*cir::schedule_gpu_matmul(cir::specialize(kernel_of(kProducts[2].source), {{"m", 128}, {"n", 300}, {"k", 20}}), testing::test_gpu_target(1)));
  EXPECT_EQ(transposed.find("async_copy"), std::string::npos) << transposed;
  EXPECT_NE(transposed.find("shared xs%mm: tensor[1536, f32]"), std::string::npos) << transposed;
  std::string conv = cir::print(*cir::schedule_gpu_matmul(
      cir::specialize(kernel_of(kProducts[4].source), {{"m", 130}, {"n", 12}, {"k", 3}, {"kh", 3}, {"kw", 3}}), testing::test_gpu_target(1)));
  EXPECT_EQ(conv.find("async_copy"), std::string::npos) << conv;
}

// 128x128 tiles only where there are enough of them to occupy a large GPU
// (132 multiprocessors): 11 x 12 tiles take them, 11 x 11 do not, nor does
// a product of many small ones; a batch counts its products' tiles.
TEST(ScheduleGpuMatmul, LargeTilesOnlyWhereTheyFillTheGpu) {
  cir::Kernel plain = kernel_of(kProducts[0].source);
  auto acc = [&](const cir::Kernel& k) {
    std::string text = cir::print(*cir::schedule_gpu_matmul(k, testing::test_gpu_target()));
    return text.find("local acc%mm: tensor[256, 64, f32]") != std::string::npos ? 64 : text.find("local acc%mm: tensor[256, 16, f32]") != std::string::npos ? 16 : 0;
  };
  EXPECT_EQ(acc(cir::specialize(plain, {{"m", 1408}, {"n", 1536}, {"k", 20}})), 64);
  EXPECT_EQ(acc(cir::specialize(plain, {{"m", 1408}, {"n", 1408}, {"k", 20}})), 16);
  EXPECT_EQ(acc(cir::specialize(plain, {{"m", 128}, {"n", 300}, {"k", 20}})), 16);
  for (const Product& p : kProducts) {
    if (std::string(p.name) != "batched") continue;
    cir::Kernel batched = kernel_of(p.source);
    std::map<std::string, int64_t> dims = {{"m", 256}, {"n", 256}, {"k", 20}, {"h", 33}};
    std::map<std::string, int64_t> used;
    for (const cir::DimParam& d : batched.dims) used[d.name] = dims.at(d.name);
    EXPECT_EQ(acc(cir::specialize(batched, used)), 64) << cir::print(batched);
  }
}

// A term the guard skips is skipped, whatever the other factor holds: an
// infinite weight beside the padding gives what the original gives.
TEST(ScheduleGpuMatmul, AGuardedTermIsSkippedEvenBesideInfinity) {
  cir::Kernel conv = cir::specialize(kernel_of(kProducts[4].source), {{"m", 3}, {"n", 5}, {"k", 2}, {"kh", 3}, {"kw", 3}});
  cir::Kernel s = *cir::schedule_gpu_matmul(conv, testing::test_gpu_target());
  Random rng(4);
  std::vector<Tensor> in = inputs_of(conv, rng);
  in[1].set(0, Scalar::of_float(INFINITY, DType::F32));  // w[0, 0, 0, 0], which meets the padding at y = 0 or z = 0
  Tensor want = ReferenceKernel(conv).run(in, {}), got = ReferenceKernel(s).run(in, {});
  Tensor bound = ReferenceKernel(conv).run(magnitudes(in), {});
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (std::isinf(want.get(i).f)) {
      EXPECT_EQ(got.get(i).f, want.get(i).f) << i;
      continue;
    }
    EXPECT_NEAR(got.get(i).f, want.get(i).f, 1e-5 * bound.get(i).f + 1e-30) << i;
  }
  EXPECT_FALSE(std::isnan(got.get(0).f));
}

TEST(ScheduleGpuMatmul, LeavesOtherKernelsAlone) {
  std::string why;
  cir::Kernel add = cir::specialize(kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..n:\n  out[i] = x[i]\n }\n}"),
                                    {{"n", 9}});
  EXPECT_FALSE(cir::schedule_gpu_matmul(add, testing::test_gpu_target(), &why));
  EXPECT_EQ(why, "not a matrix product");
}

TEST(ScheduleGpuMatmul, ThePlanTilesLargeProductsAndItsPtxAssembles) {
  std::vector<cir::Kernel> planned;
  std::vector<std::string> names;
  for (const Product& p : kProducts) {
    cir::Kernel generic = kernel_of(p.source);
    std::map<std::string, int64_t> used;
    for (const cir::DimParam& d : generic.dims) used[d.name] = d.name == "h" ? 3 : d.name == "kh" || d.name == "kw" ? 3 : p.name == std::string("conv2d_padded") && d.name == "n" ? 20 : 200;
    GpuPlan plan = gpu_plan(cir::specialize(generic, used), testing::test_gpu_target());
    ASSERT_TRUE(plan.kernel) << plan.why_not;
    EXPECT_EQ(plan.schedule, GpuSchedule::TiledMatmul) << p.name;
    EXPECT_EQ(plan.block_threads, 256);
    // 200x200 outputs in 64x64 tiles, too few 128x128 ones to fill a GPU
    // (conv: 200 channels by 20x20 positions).
    EXPECT_EQ(gpu_launch_blocks(plan, 100000), (p.name == std::string("batched") ? 3u : 1u) * 4u * (p.name == std::string("conv2d_padded") ? 7u : 4u)) << p.name;
    planned.push_back(*plan.kernel);
    names.push_back(p.name);
  }
  // 1408x1536 outputs: 132 tiles of 128x128.
  GpuPlan large = gpu_plan(cir::specialize(kernel_of(kProducts[0].source), {{"m", 1408}, {"n", 1536}, {"k", 200}}), testing::test_gpu_target());
  ASSERT_TRUE(large.kernel) << large.why_not;
  EXPECT_EQ(gpu_launch_blocks(large, 100000), 132u);
  planned.push_back(*large.kernel);
  names.push_back("plain_large");
  testing::expect_ptx_assembles(planned, names, "tiled", [](const std::string& ptx) {
    EXPECT_NE(ptx.find("ld.shared.f32"), std::string::npos);
    EXPECT_NE(ptx.find("fma.rn.f32"), std::string::npos);
    EXPECT_EQ(ptx.find(".local"), std::string::npos) << "the accumulators should live in registers";
  });
}

// A GPU without asynchronous copies (before sm_80) gets the tiles copied
// between barriers: no cp.async reaches its PTX, which ptxas accepts (LLVM
// stopped the whole process on such a module once).
TEST(ScheduleGpuMatmul, WithoutAsynchronousCopiesTheTilesAreCopiedBetweenBarriers) {
  GpuTarget turing = testing::nvidia_target("sm_75");
  ASSERT_FALSE(turing.async_copy);
  GpuPlan plan = gpu_plan(cir::specialize(kernel_of(kProducts[0].source), {{"m", 1024}, {"n", 1024}, {"k", 256}}), turing);
  ASSERT_TRUE(plan.kernel) << plan.why_not;
  EXPECT_EQ(plan.schedule, GpuSchedule::TiledMatmul);
  EXPECT_EQ(cir::print(*plan.kernel).find("async_copy"), std::string::npos);
  codegen::PtxModule m = codegen::NvptxCompiler::instance().compile({&*plan.kernel}, {"mm"}, *codegen::parse_nvptx_arch("sm_75"));
  EXPECT_EQ(m.ptx.find("cp.async"), std::string::npos);
  std::string ptxas = testing::find_ptxas();
  if (ptxas.empty()) return;
  std::string file = ::testing::TempDir() + "/tiled_sm_75.ptx", log;
  std::ofstream(file) << m.ptx;
  EXPECT_EQ(testing::run_ptxas(ptxas, file, "sm_75", &log), 0) << log;
}

TEST(ScheduleGpuMatmul, ThreadPrivateArraysAreIndexedByTheirThread) {
  cir::Kernel k;
  k.name = "k";
  k.params = {{cir::ParamRole::Output, "out", cir::Type::tensor(DType::F32, {cir::i64(4)})}};
  auto var = [](const char* n) { return cir::Var::make(n, cir::Type::scalar(DType::I64)); };
  cir::Type acc = cir::Type::tensor(DType::F32, {cir::i64(4), cir::i64(2)});
  // Written at the thread's row, read at the row of thread 0: an error.
  cir::Block thread = {cir::make_store("acc", {cir::AxisSel::at(var("t")), cir::AxisSel::at(cir::i64(0))}, cir::FloatImm::make(1.0)),
                       cir::make_store("out", {cir::AxisSel::at(var("t"))},
                                       cir::make_access("acc", acc, {cir::AxisSel::at(cir::i64(0)), cir::AxisSel::at(cir::i64(0))}))};
  cir::Block block = {cir::make_allocate("acc", acc, cir::MemorySpace::Local),
                      cir::make_for("t", cir::i64(0), cir::i64(4), cir::i64(1), thread, cir::LoopKind::GpuThread)};
  k.body = {cir::make_for("b", cir::i64(0), cir::i64(1), cir::i64(1), block, cir::LoopKind::GpuBlock)};
  std::vector<std::string> problems = cir::verify(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("thread-private array 'acc' is accessed other than by the innermost GPU thread loop's variable"), std::string::npos)
      << problems[0];
}

}  // namespace
}  // namespace zyntax
