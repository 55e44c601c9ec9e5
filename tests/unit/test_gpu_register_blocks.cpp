// gpu_register_blocks: which loop nests are nests of dot products that a
// thread may take 4x4 at a time. (Their results, scheduled inside flash
// attention, are checked against the reference in test_schedule_gpu_tiles.)
#include <gtest/gtest.h>

#include "cir/passes/gpu_register_blocks.hpp"
#include "cir/printer.hpp"

namespace zyntax {
namespace {

using namespace cir;

const Type kTile = Type::tensor(DType::F32, {i64(32), i64(32)});

Expr at(const std::string& buffer, const Expr& r, const Expr& c) {
  return make_access(buffer, kTile, {AxisSel::at(r), AxisSel::at(c)});
}

// for i, j in 32x32: var acc = 0; for k in 0..32: acc = acc + term; S[i, j] = acc
For nest(const Expr& term) {
  Expr i = index_var("i"), j = index_var("j"), k = index_var("k");
  Type f32 = Type::scalar(DType::F32);
  Expr acc = Var::make("acc", f32);
  Block body = {make_decl("acc", f32, FloatImm::make(0.0, DType::F32)),
                make_for("k", i64(0), i64(32), i64(1), {make_assign("acc", acc + term)}, LoopKind::Serial, 0, {}),
                make_store("S", {AxisSel::at(i), AxisSel::at(j)}, acc)};
  Stmt cols = make_for("j", i64(0), i64(32), i64(1), std::move(body), LoopKind::Serial, 0, {});
  Stmt rows = make_for("i", i64(0), i64(32), i64(1), {cols}, LoopKind::Serial, 0, {});
  return *rows.as<For>();
}

TEST(GpuRegisterBlocks, ATileProductIsANestOfDotProducts) {
  Expr i = index_var("i"), j = index_var("j"), k = index_var("k");
  For product = nest(at("A", i, k) * at("B", k, j));
  std::optional<DotProductNest> dots = dot_product_nest(product);
  ASSERT_TRUE(dots);
  Kernel scope;
  FreshNames fresh(scope);
  std::string text = print(register_blocked(*dots, 256, fresh));
  EXPECT_NE(text.find("gpu_thread.x for i%t in 0..256"), std::string::npos) << text;
  EXPECT_NE(text.find("let i%3: i64 = min(i + 48, 31)"), std::string::npos) << text;
  EXPECT_NE(text.find("acc%3%3 = acc%3%3 + A[i%3, k] * B[k, j%3]"), std::string::npos) << text;
  EXPECT_NE(text.find("if i + 48 < 32 and j + 48 < 32"), std::string::npos) << text;
}

TEST(GpuRegisterBlocks, ANestThatReadsWhatItStoresIsNot) {
  // A thread would read its clamped rows of S while their owners store them.
  Expr i = index_var("i"), j = index_var("j"), k = index_var("k");
  EXPECT_FALSE(dot_product_nest(nest(at("A", i, k) * at("S", i, j))));
}

}  // namespace
}  // namespace zyntax
