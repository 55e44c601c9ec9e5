// schedule_gpu_mma: matrix products on tensor cores (tile_mma statements on a
// fragment accumulator). On the reference executor (race-checked, shared and
// fragment arrays starting as NaN) the scheduled kernel gives the original's
// result for f16/bf16 factors (exact products summed in f32) and, for f32
// factors under @precision(tf32), the original's result on the factors
// rounded to TF32, at odd sizes, plain, transposed, batched and with a start
// value and an epilogue; the plan picks it, and its PTX (wmma) passes ptxas;
// the race checker and the verifier hold tile_mma statements to their rules.
#include <gtest/gtest.h>

#include <cmath>

#include "cir/passes/schedule_gpu_mma.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "cir/verifier.hpp"
#include "gpu_targets.hpp"
#include "backends/reference/reference_executor.hpp"
#include "kernel_source.hpp"
#include "product_parity.hpp"
#include "ptxas.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

struct Product {
  const char* name;
  DType factors;  // the inputs' dtype; f32 means TF32
  const char* source;
};

const Product kProducts[] = {
    {"bf16", DType::BF16,
     "def f(a: tensor[m, k, bf16], b: tensor[k, n, bf16]) {\n return compute(a, b) {\n @kernel matmul\n for i in 0..m, j in 0..n:\n"
     "  var s: f32 = 0.0\n  for p in 0..k:\n   s += f32(a[i, p]) * f32(b[p, j])\n  out[i, j] = s\n }\n}"},
    {"f16_transposed_b_bias_relu", DType::F16,
     "def f(a: tensor[m, k, f16], b: tensor[n, k, f16], c: tensor[n, f32]) {\n return compute(a, b, c) {\n @kernel matmul\n"
     " for i in 0..m, j in 0..n:\n  var s = c[j]\n  for p in 0..k:\n   s += f32(a[i, p]) * f32(b[j, p])\n  out[i, j] = max(s * 0.5, 0.0)\n }\n}"},
    {"bf16_batched", DType::BF16,
     "def f(a: tensor[h, m, k, bf16], b: tensor[h, k, n, bf16]) {\n return compute(a, b) {\n @kernel matmul\n"
     " for g in 0..h, i in 0..m, j in 0..n:\n  var s: f32 = 0.0\n  for p in 0..k:\n   s += f32(a[g, i, p]) * f32(b[g, p, j])\n"
     "  out[g, i, j] = s\n }\n}"},
    {"tf32", DType::F32,
     "def f(a: tensor[m, k, f32], b: tensor[k, n, f32]) {\n return compute(a, b) {\n @kernel matmul\n @precision(tf32)\n"
     " for i in 0..m, j in 0..n:\n  var s = 0.0\n  for p in 0..k:\n   s += a[i, p] * b[p, j]\n  out[i, j] = s\n }\n}"},
};

cir::Kernel specialised(const Product& p, int64_t m, int64_t n, int64_t k) {
  cir::Kernel generic = kernel_of(p.source);
  std::map<std::string, int64_t> dims = {{"m", m}, {"n", n}, {"k", k}, {"h", 2}}, used;
  for (const cir::DimParam& d : generic.dims) used[d.name] = dims.at(d.name);
  return cir::specialize(generic, used);
}

// Both tile shapes: 64x64 (too few 128x128 tiles to fill the GPU), and
// 128x128 forced where the product is at least one such tile each way.
TEST(ScheduleGpuMma, TheReferencesProductOnTheTensorCoresFactorsAtOddSizes) {
  for (const Product& p : kProducts) {
    for (auto [m, n, k, large_tiles] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1}, {5, 7, 3, 1}, {128, 128, 32, 1},
                                        {129, 127, 33, 1}, {200, 130, 72, 1}, {200, 130, 72, 132}, {65, 66, 17, 1}}) {
      cir::Kernel kernel = specialised(p, m, n, k);
      std::string why;
      std::optional<cir::Kernel> s = cir::schedule_gpu_mma(kernel, testing::test_gpu_target(static_cast<int>(large_tiles)), &why);
      ASSERT_TRUE(s) << p.name << ": " << why;
      bool large = m >= 128 && n >= 128 && large_tiles == 1;
      EXPECT_NE(cir::print(*s).find(large ? "fragment acc%tc: tensor[128, 128, f32]" : "fragment acc%tc: tensor[64, 64, f32]"), std::string::npos)
          << p.name << " " << m << "x" << n << "x" << k << "\n" << cir::print(*s);
      Random rng(5);
      std::vector<Tensor> in = testing::random_inputs(kernel, rng);
      // The tensor cores read f32 factors as TF32: the original on rounded factors.
      std::vector<Tensor> as_read = in;
      if (p.factors == DType::F32)
        for (Tensor& t : as_read) t = testing::rounded_to_tf32(t);
      Tensor want = ReferenceKernel(kernel).run(as_read, {}).astype(DType::F64);
      Tensor exact = ReferenceKernel(kernel).run(in, {}).astype(DType::F64);
      Tensor got = ReferenceKernel(*s).run(in, {}).astype(DType::F64);
      ASSERT_EQ(want.shape(), got.shape());
      // Sums in another order (the start value added last): f32 rounding of the scale.
      double scale = 1;
      for (int64_t e = 0; e < want.numel(); ++e) scale = std::max(scale, std::fabs(want.get(e).f));
      for (int64_t e = 0; e < want.numel(); ++e) {
        ASSERT_NEAR(got.get(e).f, want.get(e).f, 1e-5 * scale) << p.name << " at " << m << "x" << n << "x" << k << " element " << e;
        // And TF32 stays within its rounding of the exact product.
        ASSERT_NEAR(got.get(e).f, exact.get(e).f, 2e-3 * std::sqrt(static_cast<double>(k)) * scale) << p.name << " element " << e;
      }
    }
  }
}

TEST(ScheduleGpuMma, TakesOnlyWhatTensorCoresCompute) {
  std::string why;
  // f32 factors without permission to round them.
  cir::Kernel f32 = cir::specialize(
      kernel_of("def f(a: tensor[m, k, f32], b: tensor[k, n, f32]) {\n return compute(a, b) {\n @kernel matmul\n for i in 0..m, j in 0..n:\n"
                "  var s = 0.0\n  for p in 0..k:\n   s += a[i, p] * b[p, j]\n  out[i, j] = s\n }\n}"),
      {{"m", 8}, {"n", 8}, {"k", 8}});
  EXPECT_FALSE(cir::schedule_gpu_mma(f32, testing::test_gpu_target(), &why));
  EXPECT_EQ(why, "f32 factors without @precision(tf32)");
  // bf16 products rounded to bf16 before the f32 sum: not what tensor cores form.
  cir::Kernel rounded = cir::specialize(
      kernel_of("def f(a: tensor[m, k, bf16], b: tensor[k, n, bf16]) {\n return compute(a, b) {\n @kernel matmul\n"
                " for i in 0..m, j in 0..n:\n  var s: f32 = 0.0\n  for p in 0..k:\n   s += a[i, p] * b[p, j]\n  out[i, j] = s\n }\n}"),
      {{"m", 8}, {"n", 8}, {"k", 8}});
  EXPECT_FALSE(cir::schedule_gpu_mma(rounded, testing::test_gpu_target(), &why));
  EXPECT_EQ(why, "not a matrix product");  // the sum adds f32(x * y), not a product
  // A bf16 sum (each partial sum rounded to bf16).
  cir::Kernel narrow_sum = cir::specialize(
      kernel_of("def f(a: tensor[m, k, bf16], b: tensor[k, n, bf16]) {\n return compute(a, b) {\n @kernel matmul\n"
                " for i in 0..m, j in 0..n:\n  var s = 0.0\n  for p in 0..k:\n   s += a[i, p] * b[p, j]\n  out[i, j] = s\n }\n}"),
      {{"m", 8}, {"n", 8}, {"k", 8}});
  EXPECT_FALSE(cir::schedule_gpu_mma(narrow_sum, testing::test_gpu_target(), &why));
  EXPECT_EQ(why, "not a matrix product");
}

TEST(ScheduleGpuMma, ThePlanPutsProductsOnTensorCoresAndItsPtxAssembles) {
  std::vector<cir::Kernel> planned;
  std::vector<std::string> names;
  for (const Product& p : kProducts) {
    // 300x260: 9 tiles of 128x128 (18 batched), so 64x64 ones; 1536x1408:
    // 132 of 128x128 (264 batched), enough for an H100's multiprocessors.
    for (auto [m, n, tiles] : {std::tuple<int64_t, int64_t, unsigned>{300, 260, 5 * 5}, {1536, 1408, 12 * 11}}) {
      GpuPlan plan = gpu_plan(specialised(p, m, n, 100), testing::nvidia_target("sm_90"));
      ASSERT_TRUE(plan.kernel) << p.name << ": " << plan.why_not;
      EXPECT_EQ(plan.schedule, GpuSchedule::TensorCoreMatmul) << p.name;
      EXPECT_EQ(plan.block_threads, cir::kGpuMmaThreads);
      if (std::string(p.name) == "bf16_batched") tiles *= 2;
      EXPECT_EQ(gpu_launch_blocks(plan, 100000), tiles) << p.name << " " << m << "x" << n;
      planned.push_back(*plan.kernel);
      names.push_back(std::string(p.name) + "_" + std::to_string(m));
    }
  }
  testing::expect_ptx_assembles(planned, names, "mma", [](const std::string& ptx) {
    for (const char* op : {"wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16", "wmma.load.b.sync.aligned.row.m16n16k16.shared.f16",
                           "wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32", "wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32",
                           "wmma.store.d.sync.aligned.row.m16n16k16.shared.f32", "cvt.rna.tf32.f32", "bar.sync",
                           "cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group", "cp.async.wait_group 1"})
      EXPECT_NE(ptx.find(op), std::string::npos) << op;
    EXPECT_EQ(ptx.find(".local"), std::string::npos) << "the accumulators should live in registers";
  });
}

// The scheduled bf16 kernel of m x n x k with one statement of its K loop removed.
cir::Kernel without_step_statement(size_t drop, int64_t m, int64_t n, int64_t k) {
  cir::Kernel s = *cir::schedule_gpu_mma(specialised(kProducts[0], m, n, k), testing::test_gpu_target());
  auto tile = s.body[0].as<cir::For>();
  cir::Block block = tile->body;
  for (cir::Stmt& st : block) {
    auto f = st.as<cir::For>();
    if (!f || f->loop_kind != cir::LoopKind::Serial) continue;
    cir::Block step = f->body;
    step.erase(step.begin() + static_cast<std::ptrdiff_t>(drop));
    st = cir::make_for(f->var, f->lo, f->hi, f->step, step, f->loop_kind, f->factor, f->span);
  }
  s.body = {cir::make_for(tile->var, tile->lo, tile->hi, tile->step, block, tile->loop_kind, tile->factor, tile->span)};
  return s;
}

// The error the reference executor stops the kernel with, or "".
std::string error_of(const cir::Kernel& s) {
  Random rng(3);
  std::vector<Tensor> in = testing::random_inputs(s, rng);
  try {
    ReferenceKernel(s).run(in, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The three stages of asynchronous copies of 128x128 tiles take 72 KiB:
// within 48 KiB the plan copies between barriers; before sm_80 (no bf16 or
// TF32 wmma, no cp.async) it does not use tensor cores.
TEST(ScheduleGpuMma, ThePlanFitsTheBlocksSharedMemoryAndTheArchitecture) {
  cir::Kernel k = specialised(kProducts[0], 1536, 1536, 256);
  GpuPlan big = gpu_plan(k, testing::nvidia_target("sm_80"));
  ASSERT_TRUE(big.kernel) << big.why_not;
  EXPECT_EQ(big.shared_bytes, 72 << 10);
  EXPECT_NE(cir::print(*big.kernel).find("async_copy"), std::string::npos);
  GpuPlan small = gpu_plan(k, testing::test_gpu_target());
  ASSERT_TRUE(small.kernel) << small.why_not;
  EXPECT_EQ(small.schedule, GpuSchedule::TensorCoreMatmul);
  EXPECT_LE(small.shared_bytes, 48 << 10);
  EXPECT_EQ(cir::print(*small.kernel).find("async_copy"), std::string::npos);
  GpuPlan turing = gpu_plan(k, testing::nvidia_target("sm_75"));
  EXPECT_NE(turing.schedule, GpuSchedule::TensorCoreMatmul);
}

TEST(ScheduleGpuMma, TheRaceCheckerSeesAMissingBarrier) {
  // With 21 columns no run of b's row is 4-byte aligned: the tiles are copied
  // synchronously, and the K loop is: load xs, load ys, barrier, mma, barrier.
  for (size_t drop : {2u, 4u}) {
    cir::Kernel s = without_step_statement(drop, 20, 21, 40);
    EXPECT_NE(error_of(s).find("data race in the GPU schedule"), std::string::npos) << "without statement " << drop << "\n" << cir::print(s);
  }
}

// Rows of 8-byte-aligned runs: the tiles are copied asynchronously, three
// depth steps in flight. The K loop starts: wait, barrier, copies of a later
// step, mma (then the next two steps, each under its test).
TEST(ScheduleGpuMma, AsynchronousCopiesAreWaitedForAndFencedByABarrier) {
  cir::Kernel whole = *cir::schedule_gpu_mma(specialised(kProducts[0], 20, 20, 40), testing::test_gpu_target());
  EXPECT_NE(cir::print(whole).find("async_copy xs%tc"), std::string::npos) << cir::print(whole);
  EXPECT_EQ(error_of(whole), "");
  EXPECT_NE(error_of(without_step_statement(0, 20, 20, 40)).find("while an asynchronous copy into it from thread"), std::string::npos);
  EXPECT_NE(error_of(without_step_statement(1, 20, 20, 40)).find("data race in the GPU schedule"), std::string::npos);
}

// Factors whose tile rows are not runs of the input: a transposed b (the
// tile's columns run across b's rows), or rows of 3 bf16 elements (no
// 4-byte run starts aligned).
TEST(ScheduleGpuMma, CopiesSynchronouslyWhereRunsDoNotFit) {
  for (auto [p, n, k] : {std::tuple<const Product*, int64_t, int64_t>{&kProducts[1], 64, 64}, {&kProducts[0], 64, 3}}) {
    std::string text = cir::print(*cir::schedule_gpu_mma(specialised(*p, 64, n, k), testing::test_gpu_target()));
    EXPECT_EQ(text.find("async_copy"), std::string::npos) << p->name << "\n" << text;
  }
  // Runs of one f32 element (4 bytes) fit any TF32 product.
  std::string tf32 = cir::print(*cir::schedule_gpu_mma(specialised(kProducts[3], 5, 7, 3), testing::test_gpu_target()));
  EXPECT_NE(tf32.find("count 1 valid"), std::string::npos) << tf32;
}

TEST(ScheduleGpuMma, TheVerifierHoldsTileMmaToItsRules) {
  auto problems_of = [](cir::Block block_body) {
    cir::Kernel k;
    k.name = "k";
    k.params = {{cir::ParamRole::Output, "out", cir::Type::tensor(DType::F32, {cir::i64(4)})}};
    k.body = {cir::make_for("b", cir::i64(0), cir::i64(1), cir::i64(1), std::move(block_body), cir::LoopKind::GpuBlock)};
    std::vector<std::string> p = cir::verify(k);
    std::string all;
    for (const std::string& s : p) all += s + "\n";
    return all;
  };
  cir::Type acc = cir::Type::tensor(DType::F32, {cir::i64(32), cir::i64(64)});
  cir::Stmt fragment = cir::make_allocate("acc", acc, cir::MemorySpace::Fragment);
  cir::Stmt xs = cir::make_allocate("xs", cir::Type::tensor(DType::BF16, {cir::i64(32 * 24)}), cir::MemorySpace::Shared);
  cir::Stmt ys = cir::make_allocate("ys", cir::Type::tensor(DType::BF16, {cir::i64(16 * 64)}), cir::MemorySpace::Shared);
  cir::Stmt ds = cir::make_allocate("ds", cir::Type::tensor(DType::F32, {cir::i64(16 * 64)}), cir::MemorySpace::Shared);
  // A well-formed sequence.
  EXPECT_EQ(problems_of({fragment, xs, ys, ds, cir::make_mma_zero("acc", 2, 2), cir::make_mma_accumulate("acc", 2, 2, "xs", 24, "ys", 64, 16),
                         cir::make_mma_store("ds", 64, "acc", 2, 2, 16, 16)}),
            "");
  // Read like an array.
  cir::Stmt read = cir::make_for("t", cir::i64(0), cir::i64(4), cir::i64(1),
                                 {cir::make_store("out", {cir::AxisSel::at(cir::Var::make("t", cir::Type::scalar(DType::I64)))},
                                                  cir::make_access("acc", acc, {cir::AxisSel::at(cir::i64(0)), cir::AxisSel::at(cir::i64(0))}))},
                                 cir::LoopKind::GpuThread);
  EXPECT_NE(problems_of({fragment, read}).find("fragment array 'acc' is accessed other than by tile_mma statements"), std::string::npos);
  // In a thread loop.
  cir::Stmt in_thread = cir::make_for("t", cir::i64(0), cir::i64(4), cir::i64(1), {cir::make_mma_zero("acc", 2, 2)}, cir::LoopKind::GpuThread);
  EXPECT_NE(problems_of({fragment, in_thread}).find("inside a GPU thread loop"), std::string::npos);
  // A warp grid the tile does not split over, a depth off the k step, rows past the tile.
  EXPECT_NE(problems_of({fragment, cir::make_mma_zero("acc", 4, 2)}).find("does not split into 16x16 pieces"), std::string::npos);
  EXPECT_NE(problems_of({fragment, xs, ys, cir::make_mma_accumulate("acc", 2, 2, "xs", 24, "ys", 64, 8)}).find("is not a multiple of 16"),
            std::string::npos);
  EXPECT_NE(problems_of({fragment, xs, ys, cir::make_mma_accumulate("acc", 2, 2, "xs", 20, "ys", 64, 16)}).find("not 16-byte aligned"),
            std::string::npos);
  EXPECT_NE(problems_of({fragment, ds, cir::make_mma_store("ds", 64, "acc", 2, 2, 24, 16)}).find("are not 16-row pieces"), std::string::npos);
  // Steps that spread one fragment over different warps.
  EXPECT_NE(problems_of({fragment, cir::make_mma_zero("acc", 2, 2), cir::make_mma_zero("acc", 1, 4)})
                .find("spread over 1x4 warps, but an earlier step over 2x2"),
            std::string::npos);
}

}  // namespace
}  // namespace zyntax
