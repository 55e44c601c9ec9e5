// cir::estimated_registers: what one thread holds at its busiest point,
// counted in 32-bit registers (64-bit values two): locals from definition to
// last use, loop variables, and Sethi-Ullman numbers for expressions.
#include <gtest/gtest.h>

#include "cir/register_pressure.hpp"
#include "kernel_source.hpp"

namespace zyntax {
namespace {

using cir::Expr;

Expr f32(const std::string& name) { return cir::Var::make(name, cir::Type::scalar(DType::F32)); }
Expr add(Expr a, Expr b) { return cir::Binary::make(BinaryOp::Add, std::move(a), std::move(b)); }

TEST(CirRegisterPressure, ExpressionsEvaluateTheLargerOperandFirst) {
  EXPECT_EQ(cir::expression_registers(f32("a")), 1);
  // A chain keeps one partial sum and one operand.
  EXPECT_EQ(cir::expression_registers(add(add(add(f32("a"), f32("b")), f32("c")), f32("d"))), 2);
  // A balanced tree of four leaves holds one pair's sum while the other's is made.
  EXPECT_EQ(cir::expression_registers(add(add(f32("a"), f32("b")), add(f32("c"), f32("d")))), 3);
  // 64-bit values take two registers.
  Expr i = cir::Var::make("i", cir::Type::scalar(DType::I64));
  EXPECT_EQ(cir::expression_registers(cir::Binary::make(BinaryOp::Mul, i, i)), 4);
}

TEST(CirRegisterPressure, ElementWiseLoopHoldsItsIndexAndOneExpression) {
  cir::Kernel k = testing::kernel_of("def f(x: tensor[n, f32], y: tensor[n, f32]) {\n return compute(x, y) {\n  for i in 0..n:\n"
                                     "   out[i] = x[i] * y[i]\n }\n}");
  // i and its bound (3), x[i] * y[i] with its i64 index (3).
  EXPECT_EQ(cir::estimated_registers(k), 6);
}

// A local is live from its definition to its last use: lets read at the
// end all stay live; lets each read once at once do not pile up.
TEST(CirRegisterPressure, LocalsLiveToTheirLastUse) {
  auto body = [](bool all_at_end) {
    cir::Block b;
    Expr acc = f32("v0");
    b.push_back(cir::make_let("v0", cir::FloatImm::make(1.0)));
    for (int j = 1; j < 40; ++j) {
      std::string name = "v" + std::to_string(j);
      b.push_back(cir::make_let(name, all_at_end ? cir::FloatImm::make(j) : add(f32("v" + std::to_string(j - 1)), cir::FloatImm::make(j))));
      if (all_at_end) acc = add(acc, f32(name));
    }
    b.push_back(cir::make_store("out", {cir::AxisSel::at(cir::IntImm::make(0))}, all_at_end ? acc : f32("v39")));
    return b;
  };
  cir::Kernel k;
  k.body = body(true);
  EXPECT_EQ(cir::estimated_registers(k), 40 + 1 + 2);  // forty locals, then the sum held while its i64 index is made
  k.body = body(false);
  EXPECT_LE(cir::estimated_registers(k), 4);
}

}  // namespace
}  // namespace zyntax
