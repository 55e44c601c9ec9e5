// Asynchronous copies (cir::AsyncCopy): the verifier's rules, the printed
// form, the reference executor's model of copies that land at a wait (a
// read or write before then, a missing barrier after it, and a block that
// ends with copies in flight are errors), zeros past the elements a copy
// reads, and the cp.async PTX they lower to, which ptxas accepts.
#include <gtest/gtest.h>

#include "cir/passes/gpu_loops.hpp"
#include "cir/printer.hpp"
#include "cir/verifier.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "gpu_targets.hpp"
#include "plan/kernel_support.hpp"
#include "backends/reference/reference_executor.hpp"
#include "ptxas.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {
namespace {

using cir::AxisSel;
using cir::Block;
using cir::Expr;
using cir::i64;
using cir::index_var;

// One GPU block of 2 threads: thread t copies row t of x (2 x 4 f32) into
// a[4t..4t+4) with `row_valid(t)` elements read, then each of 8 threads
// writes out[e] = a[e]. `copy` holds the thread's copy steps.
struct RowCopies {
  Expr dst = index_var("t") * i64(4);
  std::vector<Expr> src = {index_var("t"), i64(0)};
  Expr valid = cir::Select::make(cir::Binary::make(BinaryOp::Eq, index_var("t"), i64(0)), i64(4), i64(2));
  int count = 4;
  bool commit = true, wait = true, barrier = true;
  int pending = 0;

  cir::Kernel kernel() const {
    cir::Kernel k;
    k.name = "rows";
    k.kind = cir::KernelKind::Fused;
    k.params = {{cir::ParamRole::Input, "x", cir::Type::tensor(DType::F32, {i64(2), i64(4)})},
                {cir::ParamRole::Output, "out", cir::Type::tensor(DType::F32, {i64(8)})}};
    cir::Type a = cir::Type::tensor(DType::F32, {i64(8)});
    Block copies = {cir::make_async_copy("a", dst, "x", src, count, valid)};
    if (commit) copies.push_back(cir::make_async_commit());
    if (wait) copies.push_back(cir::make_async_wait(pending));
    Block block = {cir::make_allocate("a", a, cir::MemorySpace::Shared),
                   cir::make_for("t", i64(0), i64(2), i64(1), copies, cir::LoopKind::GpuThread)};
    if (barrier) block.push_back(cir::make_barrier());
    block.push_back(cir::make_for("e", i64(0), i64(8), i64(1),
                                  {cir::make_store("out", {AxisSel::at(index_var("e"))}, cir::make_access("a", a, {AxisSel::at(index_var("e"))}))},
                                  cir::LoopKind::GpuThread));
    k.body = {cir::make_for("b", i64(0), i64(1), i64(1), block, cir::LoopKind::GpuBlock)};
    return k;
  }
};

Tensor rows_input() {
  Tensor x = Tensor::empty(DType::F32, {2, 4});
  for (int64_t i = 0; i < 8; ++i) x.data_as<float>()[i] = static_cast<float>(i + 1);
  return x;
}

std::string error_running(const cir::Kernel& k) {
  cir::verify_or_throw(k, "test");
  try {
    ReferenceKernel(k).run({rows_input()}, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string problems(const cir::Kernel& k) {
  std::string all;
  for (const std::string& p : cir::verify(k)) all += p + "\n";
  return all;
}

TEST(AsyncCopy, LandsAtTheWaitWithZerosPastTheElementsRead) {
  cir::Kernel k = RowCopies{}.kernel();
  EXPECT_EQ(problems(k), "");
  Tensor out = ReferenceKernel(k).run({rows_input()}, {});
  std::vector<float> want = {1, 2, 3, 4, 5, 6, 0, 0};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(out.data_as<float>()[i], want[static_cast<size_t>(i)]) << i;
}

TEST(AsyncCopy, PrintsEachStep) {
  std::string text = cir::print(RowCopies{}.kernel());
  EXPECT_NE(text.find("async_copy a[t * 4] <- x[t, 0] count 4 valid select(t == 0, 4, 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("async_commit\n"), std::string::npos);
  EXPECT_NE(text.find("async_wait 0\n"), std::string::npos);
}

TEST(AsyncCopy, AnElementIsTouchedOnlyOnceItsCopyHasLanded) {
  RowCopies no_wait;
  no_wait.wait = false;
  EXPECT_NE(error_running(no_wait.kernel()).find("thread 0 reads element 0 of a while an asynchronous copy into it from thread 0 has not landed"),
            std::string::npos)
      << error_running(no_wait.kernel());
  // A wait covers committed groups only.
  RowCopies no_commit;
  no_commit.commit = false;
  EXPECT_NE(error_running(no_commit.kernel()).find("has not landed"), std::string::npos);
  // Waiting until one group is pending leaves the only group in flight.
  RowCopies one_pending;
  one_pending.pending = 1;
  EXPECT_NE(error_running(one_pending.kernel()).find("has not landed"), std::string::npos);
  // The landed copy is its thread's write: other threads need a barrier.
  RowCopies no_barrier;
  no_barrier.barrier = false;
  EXPECT_NE(error_running(no_barrier.kernel()).find("data race in the GPU schedule: thread 1 reads element 1 of a, which thread 0 wrote"),
            std::string::npos)
      << error_running(no_barrier.kernel());
}

TEST(AsyncCopy, ABlockEndsWithEveryCopyLanded) {
  // Nothing reads the array, but the copies are still in flight at the end.
  RowCopies unread;
  unread.wait = false;
  cir::Kernel k = unread.kernel();
  auto block = k.body[0].as<cir::For>();
  Block body = block->body;
  body.pop_back();  // the reads
  body.push_back(cir::make_for("e", i64(0), i64(8), i64(1), {cir::make_store("out", {AxisSel::at(index_var("e"))}, cir::FloatImm::make(0.0))},
                               cir::LoopKind::GpuThread));
  k.body = {cir::make_for("b", i64(0), i64(1), i64(1), body, cir::LoopKind::GpuBlock)};
  EXPECT_NE(error_running(k).find("a GPU block ends with asynchronous copies that no async_wait covers"), std::string::npos) << error_running(k);
}

TEST(AsyncCopy, RunsStayInsideTheirArraysAligned) {
  RowCopies misaligned;
  misaligned.dst = index_var("t") * i64(4) + i64(2);
  EXPECT_NE(error_running(misaligned.kernel()).find("at a multiple of its length"), std::string::npos) << error_running(misaligned.kernel());
  RowCopies past_row;
  past_row.src = {index_var("t"), i64(2)};
  past_row.valid = i64(4);
  EXPECT_NE(error_running(past_row.kernel()).find("index out of bounds: x[0, 5]"), std::string::npos) << error_running(past_row.kernel());
  RowCopies too_many;
  too_many.valid = i64(5);
  EXPECT_NE(error_running(too_many.kernel()).find("async_copy reads 5 elements of a run of 4"), std::string::npos);
  // Reading nothing, a copy may name any element: it writes zeros.
  RowCopies nothing;
  nothing.src = {i64(7), i64(9)};
  nothing.valid = i64(0);
  EXPECT_EQ(error_running(nothing.kernel()), "");
}

TEST(AsyncCopy, TheVerifierHoldsCopiesToTheirRules) {
  RowCopies three;
  three.count = 3;
  EXPECT_NE(problems(three.kernel()).find("3 elements of f32 are not 4, 8 or 16 bytes"), std::string::npos) << problems(three.kernel());
  RowCopies rank;
  rank.src = {index_var("t")};
  EXPECT_NE(problems(rank.kernel()).find("'x' has rank 2 but 1 indices"), std::string::npos);
  // From the output, and outside a thread loop.
  cir::Kernel k = RowCopies{}.kernel();
  auto block = k.body[0].as<cir::For>();
  Block body = block->body;
  body.insert(body.begin() + 1, cir::make_async_copy("a", i64(0), "out", {i64(0)}, 4, i64(4)));
  body.insert(body.begin() + 1, cir::make_async_wait(0));
  k.body = {cir::make_for("b", i64(0), i64(1), i64(1), body, cir::LoopKind::GpuBlock)};
  std::string p = problems(k);
  EXPECT_NE(p.find("it copies from 'out', which is not an input"), std::string::npos) << p;
  EXPECT_NE(p.find("asynchronous copy step outside a GPU thread loop"), std::string::npos) << p;
}

TEST(AsyncCopy, LowersToCpAsyncOnNvidiaGpusAndNowhereElse) {
  cir::Kernel k = RowCopies{}.kernel();
  EXPECT_EQ(cpu_unsupported_reason(k).value_or(""), "asynchronous copies");
  EXPECT_FALSE(gpu_support(k, testing::nvidia_target("sm_80")).why_not);
  testing::expect_ptx_assembles({k}, {"rows"}, "async_copy", [](const std::string& ptx) {
    for (const char* op : {"cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group 0", "bar.sync"})
      EXPECT_NE(ptx.find(op), std::string::npos) << op << "\n" << ptx;
  });
}

}  // namespace
}  // namespace zyntax
