// Simplification: canonical i64 index arithmetic, constant folding with the
// exact scalar semantics, and the statement clean-ups constants enable.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cir/equal.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/printer.hpp"
#include "test_cir_kernels.hpp"

namespace zyntax::cir {
namespace {

using namespace fixtures;

Expr bin(BinaryOp op, Expr a, Expr b) { return Binary::make(op, std::move(a), std::move(b)); }
std::string simplified(const Expr& e) { return print(simplify(e)); }

TEST(CirSimplify, AffineCanonicalForm) {
  Expr d = var("d"), a = var("a"), x = var("x");
  EXPECT_EQ(simplified((d * i64(2) + i64(1)) + i64(1)), "d * 2 + 2");
  EXPECT_EQ(simplified(d * i64(2) + i64(2)), "d * 2 + 2");
  EXPECT_EQ(simplified(i64(2) * d + i64(1) + i64(1)), "d * 2 + 2");
  EXPECT_TRUE(equal(simplify((d * i64(2) + i64(1)) + i64(1)), simplify(i64(2) + i64(2) * d)));
  EXPECT_EQ(simplified((a + i64(64)) - a), "64");
  EXPECT_EQ(simplified(x - x), "0");
  EXPECT_EQ(simplified((x + i64(3)) * i64(4)), "x * 4 + 12");
  EXPECT_EQ(simplified(x + a - x + a), "a * 2");
  EXPECT_EQ(simplified(i64(64) - a), "64 - a");
  EXPECT_EQ(simplified(i64(0) - a - i64(5)), "-a - 5");
  EXPECT_EQ(simplified(i64(0) - a * i64(3)), "a * -3");
  EXPECT_EQ(simplified(Unary::make(UnaryOp::Neg, x + i64(1))), "-x - 1");
  EXPECT_EQ(simplified(a * d), "a * d");
  EXPECT_EQ(simplified((d * i64(2)) * a - i64(2) * (a * d)), "0");
}

TEST(CirSimplify, IntegerIdentities) {
  Expr x = var("x");
  EXPECT_EQ(simplified(x + i64(0)), "x");
  EXPECT_EQ(simplified(i64(0) + x), "x");
  EXPECT_EQ(simplified(x * i64(1)), "x");
  EXPECT_EQ(simplified(x * i64(0)), "0");
  EXPECT_EQ(simplified(x / i64(1)), "x");
  Expr y = var("y", DType::I32);
  auto i32 = [](int64_t v) { return IntImm::make(v, DType::I32); };
  EXPECT_EQ(simplified(y + i32(0)), "y");
  EXPECT_EQ(simplified(y * i32(1)), "y");
  EXPECT_EQ(simplified(i32(0) * y), "i32(0)");
  EXPECT_EQ(simplified(y - y), "i32(0)");
  EXPECT_EQ(simplified(y / i32(1)), "y");
}

TEST(CirSimplify, DivisionIsNotRewritten) {
  Expr x = var("x");
  EXPECT_EQ(simplified((x * i64(2)) / i64(2)), "x * 2 / 2");
  EXPECT_EQ(simplified(x / x), "x / x");
  EXPECT_EQ(simplified(i64(-7) / i64(2)), "-3");
  EXPECT_EQ(simplified(bin(BinaryOp::Mod, i64(-7), i64(2))), "-1");
}

TEST(CirSimplify, DivisionByZeroIsNotFolded) {
  EXPECT_EQ(simplified(i64(7) / i64(0)), "7 / 0");
  EXPECT_EQ(simplified(bin(BinaryOp::Mod, i64(7), i64(0))), "7 % 0");
  EXPECT_EQ(simplified(IntImm::make(7, DType::I32) / IntImm::make(0, DType::I32)), "i32(7) / i32(0)");
}

TEST(CirSimplify, MinMaxWithConstantDifference) {
  Expr x = var("x"), kv = var("kv"), n = var("n");
  EXPECT_EQ(simplified(max(x + i64(1), x + i64(2))), "x + 2");
  EXPECT_EQ(simplified(min(x + i64(1), x + i64(2))), "x + 1");
  EXPECT_EQ(simplified(min(kv + i64(64), kv + i64(64))), "kv + 64");
  EXPECT_EQ(simplified(min(kv + i64(64), n)), "min(kv + 64, n)");
  EXPECT_EQ(simplified(min(i64(3), i64(-2))), "-2");
  EXPECT_EQ(simplified(min(kv + i64(64), i64(64) + kv) - kv), "64");
}

TEST(CirSimplify, ComparisonsWithConstantDifference) {
  Expr i = var("i");
  EXPECT_EQ(simplified(bin(BinaryOp::Lt, i, i + i64(1))), "true");
  EXPECT_EQ(simplified(bin(BinaryOp::Ge, i, i + i64(1))), "false");
  EXPECT_EQ(simplified(bin(BinaryOp::Lt, i, var("n"))), "i < n");
}

TEST(CirSimplify, IntegerConstantFoldingWraps) {
  int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(simplified(i64(2) + i64(3) * i64(4)), "14");
  EXPECT_EQ(simplified(i64(max) + i64(1)), "-9223372036854775808");
  EXPECT_EQ(simplified(i64(max) * i64(2)), "-2");
  Expr big = IntImm::make(2147483647, DType::I32);
  EXPECT_EQ(simplified(big + IntImm::make(1, DType::I32)), "i32(-2147483648)");
  EXPECT_EQ(simplified(IntImm::make(200, DType::U8) + IntImm::make(100, DType::U8)), "u8(44)");
  // The canonical form wraps the same way as folding does.
  Expr x = var("x");
  EXPECT_EQ(simplified(x + i64(max) + i64(1) - x), "-9223372036854775808");
}

TEST(CirSimplify, FloatConstantFoldingRoundsToTheDtype) {
  Expr sum = simplify(f32(0.1) + f32(0.2));
  const FloatImm* imm = sum.as<FloatImm>();
  ASSERT_NE(imm, nullptr) << print(sum);
  EXPECT_EQ(imm->value, static_cast<double>(0.1f + 0.2f));
  EXPECT_NE(imm->value, static_cast<double>(0.1f) + static_cast<double>(0.2f));
  EXPECT_EQ(sum->type.dtype, DType::F32);
  EXPECT_EQ(print(sum), "0.3");

  Expr f64_sum = simplify(FloatImm::make(0.1, DType::F64) + FloatImm::make(0.2, DType::F64));
  EXPECT_EQ(print(f64_sum), "f64(0.30000000000000004)");
  EXPECT_EQ(simplified(f32(1.0) / f32(0.0)), "inf");
  EXPECT_EQ(simplified(Math::make(MathFn::Exp, {f32(0.0)})), "1.0");
  EXPECT_EQ(simplified(Math::make(MathFn::Sqrt, {f32(4.0)})), "2.0");
  EXPECT_EQ(simplified(Unary::make(UnaryOp::Neg, f32(0.5))), "-0.5");
  EXPECT_EQ(simplified(bin(BinaryOp::Lt, f32(1.0), f32(2.0))), "true");
}

TEST(CirSimplify, FloatExpressionsAreOnlyFoldedWhenConstant) {
  Expr x = var("x", DType::F32);
  EXPECT_EQ(simplified(x + f32(0.0)), "x + 0.0");
  EXPECT_EQ(simplified(x * f32(0.0)), "x * 0.0");
  EXPECT_EQ(simplified(x - x), "x - x");
  EXPECT_EQ(simplified(x * f32(1.0) + (f32(1.0) + f32(2.0))), "x * 1.0 + 3.0");
  EXPECT_EQ(simplified(max(x, x)), "max(x, x)");
}

TEST(CirSimplify, CastsMathAndLogic) {
  EXPECT_EQ(simplified(Cast::make(DType::F32, i64(3))), "3.0");
  EXPECT_EQ(simplified(Cast::make(DType::I32, f32(-2.7))), "i32(-2)");
  EXPECT_EQ(simplified(Cast::make(DType::I64, var("i"))), "i");
  // Integer exp is computed in f64 by the scalar semantics: not the node's dtype, so left alone.
  EXPECT_EQ(simplified(Math::make(MathFn::Exp, {i64(0)})), "exp(0)");
  EXPECT_EQ(simplified(Math::make(MathFn::Abs, {i64(-4)})), "4");
  Expr p = var("p", DType::Bool);
  EXPECT_EQ(simplified(bin(BinaryOp::And, BoolImm::make(true), p)), "p");
  EXPECT_EQ(simplified(bin(BinaryOp::And, p, BoolImm::make(false))), "false");
  EXPECT_EQ(simplified(bin(BinaryOp::Or, p, BoolImm::make(true))), "true");
  EXPECT_EQ(simplified(bin(BinaryOp::Or, BoolImm::make(false), p)), "p");
  EXPECT_EQ(simplified(Unary::make(UnaryOp::Not, BoolImm::make(false))), "true");
}

TEST(CirSimplify, SelectWithConstantCondition) {
  Expr a = var("a", DType::F32), b = var("b", DType::F32);
  EXPECT_EQ(simplified(Select::make(BoolImm::make(true), a, b)), "a");
  EXPECT_EQ(simplified(Select::make(bin(BinaryOp::Lt, i64(3), i64(2)), a, b)), "b");
  EXPECT_EQ(simplified(Select::make(var("p", DType::Bool), a, b)), "select(p, a, b)");
  // Choosing the scalar branch would drop the shape the tile branch broadcasts to.
  Expr t = Var::make("t", tensor({i64(4)}));
  EXPECT_EQ(simplified(Select::make(BoolImm::make(true), a, t)), "select(true, a, t)");
}

TEST(CirSimplify, UnchangedExpressionsKeepTheirHandles) {
  Expr e = var("x") * i64(4) + i64(1);
  EXPECT_TRUE(simplify(e).same_as(e));
  Expr f = make_access("A", tensor({var("M")}), {at(var("i"))}) * f32(2.0);
  EXPECT_TRUE(simplify(f).same_as(f));
}

Kernel with_body(Block body) {
  Kernel k;
  k.name = "e";
  k.kind = KernelKind::Elementwise;
  k.dims = {dim("N")};
  k.params = {input("x", tensor({var("N") + i64(0)})), output("y", tensor({var("N") * i64(1)}))};
  k.body = std::move(body);
  return k;
}

TEST(CirSimplify, IfWithConstantConditionIsInlined) {
  Stmt a = make_store("y", {at(i64(0))}, f32(1.0));
  Stmt b = make_store("y", {at(i64(1))}, f32(2.0));
  Kernel k = with_body({make_if(bin(BinaryOp::Lt, var("N"), var("N") + i64(1)), {a, a}, {b}), b});
  EXPECT_EQ(print(simplify(k).body), "y[0] = 1.0\ny[0] = 1.0\ny[1] = 2.0\n");
  Kernel other = with_body({make_if(BoolImm::make(false), {a}, {b})});
  EXPECT_EQ(print(simplify(other).body), "y[1] = 2.0\n");
  Kernel neither = with_body({make_if(BoolImm::make(false), {a})});
  EXPECT_EQ(print(simplify(neither).body), "");
}

TEST(CirSimplify, EmptyLoopsAreRemoved) {
  Stmt store = make_store("y", {at(var("i"))}, f32(1.0));
  Kernel k = with_body({
      make_for("i", i64(5), i64(5), i64(1), {store}),
      make_for("j", var("N"), var("N"), i64(1), {store}),
      make_for("k", var("N") + i64(1), var("N"), i64(1), {store}),
      make_for("i2", i64(0), var("N"), i64(1), {make_for("i3", i64(0), i64(0), i64(1), {store})}),
  });
  EXPECT_EQ(print(simplify(k).body), "for i2 in 0..N {\n}\n");
}

TEST(CirSimplify, KernelTypesAndHints) {
  Kernel k = with_body({make_decl("t", tensor({var("N") - var("N") + i64(4)}), {}),
                        make_allocate("up", tensor({i64(2) * i64(32)}), MemorySpace::Shared)});
  k.hints.shared_bytes = i64(4) * i64(64) * i64(2);
  EXPECT_EQ(print(simplify(k)),
            "kernel e: elementwise\n"
            "  dims N\n"
            "  in x: tensor[N, f32]\n"
            "  out y: tensor[N, f32]\n"
            "  shared_bytes 512\n"
            "{\n"
            "  var t: tensor[4, f32]\n"
            "  shared up: tensor[64, f32]\n"
            "}\n");
}

TEST(CirSimplify, NodeTypesAreSimplified) {
  Expr n = var("N");
  Type t = tensor({n + i64(0), n * i64(2) - n});
  Expr v = Var::make("v", t);
  Expr s = simplify(v);
  ASSERT_EQ(s->type.rank(), 2u);
  EXPECT_EQ(print(s->type), "tensor[N, N, f32]");
  Expr fill = simplify(make_fill(f32(0.0), {i64(2) + i64(2)}));
  EXPECT_EQ(print(fill), "fill(0.0, [4])");
}

}  // namespace
}  // namespace zyntax::cir
