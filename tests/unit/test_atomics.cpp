// Atomic updates (cir::Atomic): how lowering produces them for scatter
// loops (and where it must not), the output's shape from `out = zeros(..)`,
// what a CPU computes with many threads updating the same elements (and
// with few, in order), and the PTX they lower to at each scope, which
// ptxas accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/registry.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/printer.hpp"
#include "cir/verifier.hpp"
#include "cir/passes/specialize.hpp"
#include "backends/cpu/cpu_device.hpp"
#include "host_plan.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "gpu_targets.hpp"
#include "plan/kernel_support.hpp"
#include "kernel_source.hpp"
#include "ptxas.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {
namespace {

using cir::Expr;
using cir::i64;
using cir::index_var;

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

std::string lowered(const std::string& src) { return cir::print(testing::kernel_of(src)); }

std::string lowering_errors(const std::string& src) {
  Session session;
  std::vector<CheckedKernel> kernels;
  LoadedModule* m = session.load_text("k.zynml", src);
  if (!session.diags().has_errors()) check_program(session, *m, &kernels);
  return session.diags().render_all();
}

const char* kEmbeddingBackward =
    "def f(g: tensor[n, dim, f32], ids: tensor[n, i64]) {\n let vocab = 50\n return compute(g, ids) {\n  @kernel fused\n"
    "  out = zeros(vocab, dim)\n  for i in 0..n, j in 0..dim:\n   out[ids[i], j] += g[i, j]\n }\n}\n";

TEST(Atomics, ScatterLoopsRunInParallelWithAtomicUpdates) {
  std::string k = lowered(kEmbeddingBackward);
  EXPECT_TRUE(contains(k, "out out: tensor[vocab, dim, f32]")) << k;
  // The fill only gave the shape: outputs start zeroed.
  EXPECT_FALSE(contains(k, "fill")) << k;
  EXPECT_TRUE(contains(k, "parallel for i in 0..n {\n    parallel for j in 0..dim {\n      atomic_add out[ids[i], j], g[i, j]")) << k;
  // -= adds the negation; min and max have their own updates.
  k = lowered("def f(x: tensor[n, f32]) {\n return compute(x) {\n  @kernel fused\n  out = zeros(3)\n  for i in 0..n:\n"
              "   let b = i64(abs(x[i])) % 3\n   out[b] -= x[i]\n   out[b] = max(out[b], x[i])\n }\n}\n");
  EXPECT_TRUE(contains(k, "atomic_add out[b], -x[i]\n    atomic_max out[b], x[i]")) << k;
}

TEST(Atomics, OnlyUpdatesAtIndicesThatChangeWithTheIterationBecomeAtomic) {
  // A row's sum over an inner loop stays an ordered reduction.
  std::string k = lowered("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n  @kernel fused\n  for i in 0..r:\n   for k in 0..c:\n"
                          "    out[i] += x[i, k]\n }\n}\n");
  EXPECT_TRUE(contains(k, "parallel for i in 0..r {\n    for k in 0..c {\n      out[i] = out[i] + x[i, k]")) << k;
  // One element updated by every iteration is a reduction too: serial.
  k = lowered("def f(x: tensor[n, f32]) {\n return compute(x) {\n  @kernel fused\n  for i in 0..n:\n   out[0] += x[i]\n }\n}\n");
  EXPECT_TRUE(contains(k, "  for i in 0..n {\n    out[0] = out[0] + x[i]")) << k;
  // Products have no atomic form.
  k = lowered("def f(x: tensor[n, f32], ids: tensor[n, i64]) {\n return compute(x, ids) {\n  @kernel fused\n  out = zeros(4)\n"
              "  for i in 0..n:\n   out[ids[i]] *= x[i]\n }\n}\n");
  EXPECT_TRUE(contains(k, "  for i in 0..n {\n    out[ids[i]] = out[ids[i]] * x[i]")) << k;
  // Any other read of out orders the iterations.
  k = lowered("def f(x: tensor[n, f32], ids: tensor[n, i64]) {\n return compute(x, ids) {\n  @kernel fused\n  out = zeros(4)\n"
              "  for i in 0..n:\n   out[ids[i]] += out[0] + x[i]\n }\n}\n");
  EXPECT_TRUE(contains(k, "  for i in 0..n {\n    out[ids[i]] = out[ids[i]] + (out[0] + x[i])")) << k;
}

TEST(Atomics, LoopsReadingOtherIterationsElementsStaySerial) {
  // A running sum reads the previous iteration's element.
  std::string k = lowered("def f(x: tensor[n, f32]) {\n return compute(x) {\n  @kernel fused\n  for i in 0..n:\n   out[i] = x[i]\n"
                          "  for i in 1..n:\n   out[i] = out[i - 1] + x[i]\n }\n}\n");
  EXPECT_TRUE(contains(k, "parallel for i in 0..n {\n    out[i] = x[i]")) << k;
  EXPECT_TRUE(contains(k, "  for i_1 in 1..n {\n    out[i_1] = out[i_1 - 1] + x[i_1]")) << k;
  // Stores indexing the loop on different axes may meet: out[3, 2] is row 3's and column 2's.
  k = lowered("def f(x: tensor[n, f32]) {\n return compute(x) {\n  @kernel fused\n  for i in 0..n:\n   out[i, 2] = x[i]\n"
              "   out[3, i] = x[i]\n }\n}\n");
  EXPECT_TRUE(contains(k, "  for i in 0..n {")) << k;
  EXPECT_FALSE(contains(k, "parallel")) << k;
}

TEST(Atomics, ReadingOutDoesNotDecideItsType) {
  // The stores do: an i32 start and i32 updates make an i32 output.
  std::string k = lowered("def f(x: tensor[n, i32]) {\n return compute(x) {\n  @kernel fused\n  out = i32(zeros(5))\n  for i in 0..n:\n"
                          "   out[abs(x[i]) % 5] += x[i]\n }\n}\n");
  EXPECT_TRUE(contains(k, "out out: tensor[5, i32]")) << k;
  EXPECT_TRUE(contains(k, "atomic_add out[i64(abs(x[i]) % i32(5))], x[i]")) << k;
}

TEST(Atomics, AnIndexReadFromDataNeedsTheShapeFromElsewhere) {
  std::string e = lowering_errors("def f(x: tensor[n, f32], ids: tensor[n, i64]) {\n return compute(x, ids) {\n  @kernel fused\n"
                                  "  for i in 0..n:\n   out[ids[i]] += x[i]\n }\n}\nlet y = f(zeros([3]), astype(zeros([3]), i64))\n");
  EXPECT_TRUE(contains(e, "k.zynml:5:4: error: cannot tell the size of axis 0 of 'out' from `ids[i]`")) << e;
  EXPECT_TRUE(contains(e, "give out its shape first: `out = zeros(M, N)`")) << e;
}

// Many threads meeting at few elements (a CPU with enough of them keeps
// the atomics): the result is the reference's.
TEST(Atomics, CpuThreadsUpdatingTheSameElementsAgreeWithTheReference) {
  cir::Kernel k = testing::kernel_of(kEmbeddingBackward);
  ASSERT_FALSE(k.name.empty());
  CompiledCompute compiled(k);
  Random rng(7);
  // Whole numbers: every order of the sums gives the same floats.
  Tensor g = rand_normal(rng, DType::F32, {20000, 9});
  for (int64_t e = 0; e < g.numel(); ++e) g.data_as<float>()[e] = std::floor(g.data_as<float>()[e] * 16.0f);
  Tensor ids = Tensor::zeros(DType::I64, {20000});
  for (int64_t e = 0; e < ids.numel(); ++e) ids.data_as<int64_t>()[e] = (e * 7919) % 50 / 10;  // five rows, hot ones
  std::unique_ptr<Device> cpu = make_llvm_cpu_device("cpu", kCpuAtomicThreads);
  device_registry().lend_fallbacks(*cpu);  // where what it cannot run goes
  Device* ref = device_registry().find("cpu:reference");
  ASSERT_TRUE(ref);
  Tensor want = compiled.launch(*ref, {g, ids}, {{"vocab", 50}}, {});
  for (int run = 0; run < 3; ++run) {
    Tensor got = compiled.launch(*cpu, {g, ids}, {{"vocab", 50}}, {});
    ASSERT_EQ(got.shape(), (Shape{50, 9}));
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.nbytes()), 0) << "run " << run;
  }
  // An id past the table is the reference's error.
  ids.data_as<int64_t>()[12345] = 50;
  std::string error;
  try {
    compiled.launch(*cpu, {g, ids}, {{"vocab", 50}}, {});
  } catch (const std::exception& e) {
    error = e.what();
  }
  EXPECT_TRUE(contains(error, "index out of bounds: out[50, 0]: axis 0 has size 50")) << error;
}

// On fewer cores the updates run in order, as plain adds: the reference's
// result bit for bit, whatever the sums.
TEST(Atomics, FewCpuCoresRunTheUpdatesInOrder) {
  cir::Kernel k = testing::kernel_of(kEmbeddingBackward);
  ASSERT_FALSE(k.name.empty());
  cir::Kernel s = cir::specialize(k, {{"n", 300}, {"dim", 5}, {"vocab", 50}});
  CpuPlan plan = testing::host_cpu_plan(s, 2);
  ASSERT_TRUE(plan.kernel) << plan.why_not;
  std::string text = cir::print(*plan.kernel);
  EXPECT_TRUE(contains(text, "  for i in 0..300 {\n    for j in 0..5 {\n      out[ids[i], j] = out[ids[i], j] + g[i, j]")) << text;
  EXPECT_FALSE(contains(text, "atomic")) << text;
  EXPECT_TRUE(contains(cir::print(*testing::host_cpu_plan(s, kCpuAtomicThreads).kernel), "atomic_add")) << text;
  CompiledCompute compiled(k);
  Random rng(3);
  Tensor g = rand_normal(rng, DType::F32, {3000, 7});
  Tensor ids = Tensor::zeros(DType::I64, {3000});
  for (int64_t e = 0; e < ids.numel(); ++e) ids.data_as<int64_t>()[e] = (e * 31) % 50;
  Tensor want = compiled.launch(*device_registry().find("cpu:reference"), {g, ids}, {{"vocab", 50}}, {});
  std::unique_ptr<Device> cpu = make_llvm_cpu_device("cpu", 2);
  device_registry().lend_fallbacks(*cpu);  // where what it cannot run goes
  Tensor got = compiled.launch(*cpu, {g, ids}, {{"vocab", 50}}, {});
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.nbytes()), 0);
}

// parallel for i in 0..n { op(scope) out[x[i] % 4], x[i] } over dtype t.
cir::Kernel scatter(cir::AtomicOp op, DType t, cir::FenceScope scope) {
  cir::Kernel k;
  k.name = "scatter";
  k.kind = cir::KernelKind::Fused;
  k.params = {{cir::ParamRole::Input, "x", cir::Type::tensor(t, {i64(64)})},
              {cir::ParamRole::Output, "out", cir::Type::tensor(t, {i64(4)})}};
  Expr x = cir::make_access("x", k.params[0].type, {cir::AxisSel::at(index_var("i"))});
  Expr bin = cir::Binary::make(BinaryOp::Mod, cir::Cast::make(DType::I64, cir::Math::make(MathFn::Abs, {x})), i64(4));
  k.body = {cir::make_for("i", i64(0), i64(64), i64(1), {cir::make_atomic(op, "out", {bin}, x, scope)}, cir::LoopKind::Parallel)};
  return k;
}

TEST(Atomics, PrintedAndVerified) {
  cir::Kernel k = scatter(cir::AtomicOp::Add, DType::F32, cir::FenceScope::Block);
  EXPECT_TRUE(contains(cir::print(k), "atomic_add(block) out[i64(abs(x[i])) % 4], x[i]")) << cir::print(k);
  EXPECT_TRUE(cir::verify(k).empty());
  k.body = {cir::make_for("i", i64(0), i64(64), i64(1), {cir::make_atomic(cir::AtomicOp::Max, "out", {i64(0), i64(1)}, i64(3))},
                          cir::LoopKind::Parallel)};
  std::string p;
  for (const std::string& s : cir::verify(k)) p += s + "\n";
  EXPECT_TRUE(contains(p, "atomic on 'out' has 2 indices but it has rank 1")) << p;
  EXPECT_TRUE(contains(p, "atomic value")) << p;
}

TEST(Atomics, LowerToTheGpusAtomicsAtEachScope) {
  using cir::AtomicOp;
  using cir::FenceScope;
  std::vector<cir::Kernel> kernels = {
      scatter(AtomicOp::Add, DType::F32, FenceScope::Device),    // red/atom.global.add.f32
      scatter(AtomicOp::Add, DType::I32, FenceScope::Block),     // scoped to the block
      scatter(AtomicOp::Add, DType::F64, FenceScope::System),    // scoped to the system
      scatter(AtomicOp::Max, DType::F32, FenceScope::Device),    // NaN-propagating: compare-and-swap
      scatter(AtomicOp::Min, DType::I64, FenceScope::Block),
      scatter(AtomicOp::Max, DType::F32, FenceScope::System),    // a system-scope swap loop
      scatter(AtomicOp::Add, DType::BF16, FenceScope::Device),   // 16-bit swap loop
      scatter(AtomicOp::Exchange, DType::I32, FenceScope::Device),
  };
  std::vector<std::string> names;
  for (size_t n = 0; n < kernels.size(); ++n) {
    EXPECT_FALSE(gpu_support(kernels[n], testing::nvidia_target("sm_80")).why_not) << n;
    EXPECT_FALSE(cpu_unsupported_reason(kernels[n])) << n;
    names.push_back("scatter" + std::to_string(n));
  }
  testing::expect_ptx_assembles(kernels, names, "atomics", [](const std::string& ptx) {
    EXPECT_TRUE(contains(ptx, "atom.global.add.f32") || contains(ptx, "red.global.add.f32")) << ptx;
    EXPECT_TRUE(contains(ptx, ".cta.add.u32") || contains(ptx, ".cta.add.s32")) << ptx;
    EXPECT_TRUE(contains(ptx, ".sys.add.f64")) << ptx;
    EXPECT_TRUE(contains(ptx, "atom.global.cas.b32")) << ptx;
    EXPECT_TRUE(contains(ptx, ".cta.min.s64")) << ptx;
    EXPECT_TRUE(contains(ptx, ".sys.cas.b32")) << ptx;
    EXPECT_TRUE(contains(ptx, "atom.global.exch.b32")) << ptx;
  });
  // The GPU has no system-scope atomics on 2-byte elements.
  EXPECT_EQ(gpu_support(scatter(AtomicOp::Add, DType::BF16, FenceScope::System), testing::nvidia_target("sm_80")).why_not.value_or(""),
            "system-scope atomics on elements of fewer than 4 bytes");
}

}  // namespace
}  // namespace zyntax
