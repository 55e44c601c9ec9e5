// freeze_invariant_vars and the check it stands on, equal_everywhere:
// integer expressions compared at every iteration of the loops around them;
// vars whose every assignment keeps their first value become lets (flash
// attention's tile shapes), and no other var does.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "cir/equal_everywhere.hpp"
#include "cir/passes/freeze_invariant_vars.hpp"
#include "cir/passes/scalarize_tiles.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "kernel_source.hpp"
#include "schedule_parity.hpp"
#include "test_cir_kernels.hpp"

namespace zyntax::cir {
namespace {

using fixtures::var;

Stmt loop(const std::string& v, int64_t lo, int64_t hi, int64_t step, Block body = {}) {
  return make_for(v, i64(lo), i64(hi), i64(step), std::move(body));
}

TEST(EqualEverywhere, ComparesAtEveryIteration) {
  Stmt q = loop("q", 0, 512, 64);
  std::vector<const For*> loops = {q.as<For>()};
  Expr a = min(var("q") + i64(64), i64(512)) - var("q"), b = min(i64(64), i64(512) - var("q"));
  EXPECT_TRUE(equal_everywhere(a, b, loops, {}));
  EXPECT_TRUE(equal_everywhere(a, i64(64), loops, {})) << "512 is a multiple of 64";
  // Over 0..500 the last block has 52 rows.
  Stmt ragged = loop("q", 0, 500, 64);
  EXPECT_FALSE(equal_everywhere(min(var("q") + i64(64), i64(500)) - var("q"), i64(64), {ragged.as<For>()}, {}));
  EXPECT_TRUE(equal_everywhere(min(var("q") + i64(64), i64(500)) - var("q"), min(i64(64), i64(500) - var("q")), {ragged.as<For>()}, {}));
  // Lets are seen through; a name neither a loop nor a let is not known.
  EXPECT_TRUE(equal_everywhere(var("rows"), b, loops, {{"rows", a}}));
  EXPECT_FALSE(equal_everywhere(var("n"), b, loops, {}));
}

TEST(EqualEverywhere, InnerBoundsFollowOuterVariablesAndPointsAreLimited) {
  // for i in 0..8, j in 0..i: i - j >= 1 everywhere, so max(i - j, 1) is i - j.
  Stmt inner = make_for("j", i64(0), var("i"), i64(1), {});
  Stmt i = loop("i", 0, 8, 1, {inner});
  std::vector<const For*> loops = {i.as<For>(), inner.as<For>()};
  EXPECT_TRUE(equal_everywhere(max(var("i") - var("j"), i64(1)), var("i") - var("j"), loops, {}));
  EXPECT_FALSE(equal_everywhere(max(var("i") - var("j"), i64(2)), var("i") - var("j"), loops, {}));
  Stmt big = loop("x", 0, 10000, 1);
  EXPECT_TRUE(equal_everywhere(max(var("x"), i64(0)), var("x"), {big.as<For>()}, {}));
  EXPECT_FALSE(equal_everywhere(max(var("x"), i64(0)), var("x"), {big.as<For>()}, {}, /*max_points=*/1000))
      << "too many iterations to look at";
}

// The direct evaluation equal_everywhere runs at each point against what it
// replaces there, substituting the point and simplifying: random integer
// expressions over two variables, at random points (negative ones, and
// divisors that are zero, included).
TEST(EqualEverywhere, DirectEvaluationFoldsAsTheSimplifierDoes) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::function<Expr(int)> random_int = [&](int depth) -> Expr {
    if (depth == 0 || pick(4) == 0) {
      int leaf = pick(3);
      if (leaf == 0) return var("i");
      if (leaf == 1) return var("j");
      return i64(pick(25) - 5);
    }
    Expr a = random_int(depth - 1), b = random_int(depth - 1);
    switch (pick(9)) {
      case 0: return a + b;
      case 1: return a - b;
      case 2: return a * b;
      case 3: return Binary::make(BinaryOp::Div, a, b);
      case 4: return Binary::make(BinaryOp::Mod, a, b);
      case 5: return min(a, b);
      case 6: return max(a, b);
      case 7: return Unary::make(UnaryOp::Neg, a);
      default: {
        static const BinaryOp kCompare[] = {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge};
        Expr cond = Binary::make(kCompare[pick(6)], a, random_int(depth - 1));
        return Select::make(cond, b, Cast::make(DType::I64, Cast::make(DType::I32, random_int(depth - 1))));
      }
    }
  };
  int evaluated = 0, folded = 0;
  for (int n = 0; n < 400; ++n) {
    Expr e = random_int(4);
    for (int p = 0; p < 6; ++p) {
      Substitution point = {{"i", i64(pick(41) - 10)}, {"j", i64(pick(41) - 10)}};
      Expr slow = simplify(substitute(e, point));
      std::optional<Scalar> fast = evaluate_at(e, point);
      if (const IntImm* v = slow.as<IntImm>()) {
        ++folded;
        if (fast) ++evaluated;
        if (fast) EXPECT_EQ(fast->i, v->value) << print(e) << " at i=" << print(point["i"]) << " j=" << print(point["j"]);
      } else {
        EXPECT_FALSE(fast) << print(e) << " has no value at i=" << print(point["i"]) << " j=" << print(point["j"]);
      }
    }
  }
  // Only an expression with no value in some part (x / 0 * 0) is left to the simplifier.
  EXPECT_GT(evaluated, folded * 9 / 10);
  EXPECT_FALSE(evaluate_at(var("i") + var("n"), {{"i", i64(1)}})) << "n is not bound at the point";
}

// A var that a loop doubles is left alone; one the loop sets to its own
// value, or to an equal expression, becomes a let and its assignments go.
TEST(FreezeInvariantVars, OnlyVarsThatKeepTheirValue) {
  Expr q = var("q");
  Block body = {
      make_decl("same", Type::scalar(DType::I64), min(i64(64), i64(500) - q)),
      make_decl("grows", Type::scalar(DType::I64), i64(1)),
      make_decl("follows", Type::scalar(DType::I64), i64(1)),
      make_decl("acc", Type::scalar(DType::F32), fixtures::f32(1.0)),
      make_decl("copies", Type::scalar(DType::I64), Cast::make(DType::I64, var("acc", DType::F32))),
      loop("k", 0, 4, 1,
           {make_assign("same", min(q + i64(64), i64(500)) - q), make_assign("grows", var("grows") * i64(2)),
            make_assign("follows", var("grows")),
            make_assign("acc", var("acc", DType::F32) * fixtures::f32(2.0)),
            make_assign("copies", Cast::make(DType::I64, var("acc", DType::F32)))}),
      make_store("out", {fixtures::at(q)}, Cast::make(DType::F32, var("same") + var("grows") + var("follows") + var("copies"))),
  };
  Kernel k;
  k.name = "k";
  k.kind = KernelKind::Fused;
  k.params = {fixtures::output("out", fixtures::tensor({i64(500)}))};
  k.body = {make_for("q", i64(0), i64(500), i64(64), body, LoopKind::Parallel)};
  std::string text = print(freeze_invariant_vars(k));
  EXPECT_NE(text.find("let same: i64 = min(64, 500 - q)"), std::string::npos) << text;
  EXPECT_EQ(text.find("same = "), std::string::npos) << text;
  EXPECT_NE(text.find("var grows"), std::string::npos) << text;
  EXPECT_NE(text.find("var follows"), std::string::npos) << text << "\nit is set from a var that changes";
  // Set to the same text as its init, but `acc` changed in between.
  EXPECT_NE(text.find("var copies"), std::string::npos) << text;
}

// Flash attention's tile shapes stay what they were (the block's rows, the
// head size), so every one is frozen, and the kernel computes what it did.
TEST(FreezeInvariantVars, FlashAttentionsTileShapes) {
  std::string src =
      "def f(Q: tensor[s, d, f32], K: tensor[s, d, f32], V: tensor[s, d, f32]) {\n"
      " return compute(Q, K, V) {\n  @kernel flash_attention\n"
      "  for q0 in 0..s step 16:\n"
      "   var m = -inf\n   var l = 0.0\n   var o = zeros(min(16, s - q0), d)\n"
      "   for k0 in 0..s step 16:\n"
      "    let S = Q[q0:q0 + 16] @ transpose(K[k0:k0 + 16]) / sqrt(d)\n"
      "    let m_new = max(m, row_max(S))\n    let p = exp(S - m_new)\n"
      "    l = exp(m - m_new) * l + row_sum(p)\n"
      "    o = exp(m - m_new) * o + p @ V[k0:k0 + 16]\n    m = m_new\n"
      "   out[q0:q0 + 16] = o / l\n }\n}";
  for (int64_t s : {1, 17, 40}) {
    Kernel original = specialize(testing::kernel_of(src), {{"s", s}, {"d", 5}});
    std::optional<Kernel> loops = scalarize_tiles(original, nullptr, ProductOrder::DotProducts);
    ASSERT_TRUE(loops);
    Kernel frozen = freeze_invariant_vars(*loops);
    std::string text = print(frozen);
    for (const char* v : {"m%n0", "l%n0", "o%n0", "o%n1"}) {
      EXPECT_NE(text.find(std::string("let ") + v + ": i64"), std::string::npos) << v << "\n" << text;
      EXPECT_EQ(text.find(std::string(v) + " = "), std::string::npos) << v << "\n" << text;
    }
    testing::expect_same_result(original, frozen, "s=" + std::to_string(s));
  }
}

}  // namespace
}  // namespace zyntax::cir
