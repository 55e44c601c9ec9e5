// fold_broadcast_extents: the broadcasts scalarize_tiles leaves for run
// time between extents that are always equal are written out (flash
// attention's scores, row statistics and output block, at even and ragged
// sequence lengths), the kernel computing what it did; a broadcast that
// happens at some iteration, or between sizes only known at run time,
// stays. And largest_everywhere, which gives the register blocks of the
// GPU's tile products their size.
#include <gtest/gtest.h>

#include "cir/equal_everywhere.hpp"
#include "cir/passes/fold_broadcast_extents.hpp"
#include "cir/passes/freeze_invariant_vars.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "cir/visitor.hpp"
#include "kernel_source.hpp"
#include "schedule_parity.hpp"
#include "test_cir_kernels.hpp"

namespace zyntax::cir {
namespace {

using fixtures::var;

std::string flash_attention(int block) {
  std::string b = std::to_string(block);
  return "def f(Q: tensor[s, d, f32], K: tensor[s, d, f32], V: tensor[s, d, f32]) {\n"
         " return compute(Q, K, V) {\n  @kernel flash_attention\n"
         "  for q0 in 0..s step " + b + ":\n"
         "   var m = -inf\n   var l = 0.0\n   var o = zeros(min(" + b + ", s - q0), d)\n"
         "   for k0 in 0..s step " + b + ":\n"
         "    let S = Q[q0:q0 + " + b + "] @ transpose(K[k0:k0 + " + b + "]) / sqrt(d)\n"
         "    let m_new = max(m, row_max(S))\n    let p = exp(S - m_new)\n"
         "    l = exp(m - m_new) * l + row_sum(p)\n"
         "    o = exp(m - m_new) * o + p @ V[k0:k0 + " + b + "]\n    m = m_new\n"
         "   out[q0:q0 + " + b + "] = o / l\n }\n}";
}

// How many indices of reads and stores still choose between a broadcast
// and an element at run time.
int broadcast_selects(const Kernel& k) {
  struct Count : IRVisitor {
    using IRVisitor::visit;
    int n = 0;
    void axes(const std::vector<AxisSel>& axes) {
      for (const AxisSel& a : axes)
        if (!a.is_slice && a.index.as<Select>()) ++n;
    }
    void visit(const Access* op) override {
      axes(op->axes);
      IRVisitor::visit(op);
    }
    void visit(const Store* op) override {
      axes(op->axes);
      IRVisitor::visit(op);
    }
  } count;
  count.include(k.body);
  return count.n;
}

TEST(FoldBroadcastExtents, FlashAttentionReadsEachTileAtItsOwnElement) {
  for (int block : {16, 32}) {
    for (int64_t s : {1, 17, 64, 100}) {
      std::string what = "block " + std::to_string(block) + ", s=" + std::to_string(s);
      Kernel original = specialize(testing::kernel_of(flash_attention(block)), {{"s", s}, {"d", 5}});
      std::optional<Kernel> loops = scalarize_tiles(original, nullptr, ProductOrder::DotProducts);
      ASSERT_TRUE(loops) << what;
      Kernel frozen = freeze_invariant_vars(*loops);
      EXPECT_GT(broadcast_selects(frozen), 0) << what << ": nothing to fold\n" << print(frozen);
      Kernel folded = fold_broadcast_extents(frozen);
      std::string text = print(folded);
      EXPECT_EQ(broadcast_selects(folded), 0) << what << "\n" << text;
      testing::expect_same_result(original, folded, what);
    }
  }
}

// Out[q, i] = x[i], read through a broadcast of r rows: r is 1 at q = 0
// and 4 elsewhere, so the broadcast happens and its select stays; r2 is
// never 1 and its select goes; m, a size known only at run time, keeps its.
TEST(FoldBroadcastExtents, ABroadcastThatHappensStays) {
  Expr q = var("q"), i = var("i");
  auto read_through = [&](const std::string& rows) {
    return make_access("x", fixtures::tensor({i64(4)}), {fixtures::at(Select::make(Binary::make(BinaryOp::Eq, var(rows), i64(1)), i64(0), i))});
  };
  Block body = {
      make_let("r", Select::make(Binary::make(BinaryOp::Eq, q, i64(0)), i64(1), i64(4))),
      make_let("r2", Select::make(Binary::make(BinaryOp::Eq, q, i64(5)), i64(1), i64(4))),
      make_for("i", i64(0), i64(4), i64(1),
               {make_store("out", {fixtures::at(q), fixtures::at(i)},
                           read_through("r") + read_through("r2") + read_through("m"))}),
  };
  Kernel k;
  k.name = "k";
  k.kind = KernelKind::Fused;
  k.params = {fixtures::input("x", fixtures::tensor({i64(4)})), fixtures::scalar("m", DType::I64),
              fixtures::output("out", fixtures::tensor({i64(3), i64(4)}))};
  k.body = {make_for("q", i64(0), i64(3), i64(1), body, LoopKind::Parallel)};
  std::string text = print(fold_broadcast_extents(k));
  EXPECT_NE(text.find("x[select(r == 1, 0, i)]"), std::string::npos) << text;
  EXPECT_EQ(text.find("r2 == 1"), std::string::npos) << text;
  EXPECT_NE(text.find("x[select(m == 1, 0, i)]"), std::string::npos) << text;
}

TEST(LargestEverywhere, TheLargestValueAtAnyIteration) {
  Stmt q = make_for("q", i64(0), i64(100), i64(32), {});
  std::vector<const For*> loops = {q.as<For>()};
  Expr rows = max(min(var("q") + i64(32), i64(100)) - min(var("q"), i64(100)), i64(0));
  EXPECT_EQ(largest_everywhere(rows, loops, {}), 32);
  EXPECT_EQ(largest_everywhere(var("r"), loops, {{"r", rows - i64(30)}}), 2) << "through a let";
  EXPECT_EQ(largest_everywhere(i64(5), loops, {}), 5);
  EXPECT_EQ(largest_everywhere(var("n"), loops, {}), std::nullopt) << "a size known only at run time";
  Stmt big = make_for("x", i64(0), i64(100000), i64(1), {});
  EXPECT_EQ(largest_everywhere(var("x"), {big.as<For>()}, {}, 1000), std::nullopt) << "too many iterations";
}

}  // namespace
}  // namespace zyntax::cir
