// IRVisitor reaches every child expression and statement, but not type
// extents unless asked to.
#include <gtest/gtest.h>

#include <set>

#include "cir/equal.hpp"
#include "cir/visitor.hpp"
#include "test_cir_kernels.hpp"

namespace zyntax::cir {
namespace {

using namespace fixtures;

class VarNames : public IRVisitor {
 public:
  std::multiset<std::string> names;
  int stores = 0;
  using IRVisitor::visit;
  void visit(const Var* op) override { names.insert(op->name); }
  void visit(const Store* op) override {
    ++stores;
    IRVisitor::visit(op);
  }
};

class VarNamesWithTypes : public VarNames {
 public:
  using VarNames::visit;
  void visit(const Decl* op) override {
    visit_type(op->type);
    VarNames::visit(op);
  }
};

TEST(CirVisitor, VisitsChildrenButNotTypes) {
  VarNames v;
  v.include(matmul_kernel().body);
  // sum (twice: read and stored), i, j, k twice each, M, N, K as loop bounds.
  EXPECT_EQ(v.names, (std::multiset<std::string>{"M", "N", "K", "sum", "sum", "i", "i", "k", "k", "j", "j"}));
  EXPECT_EQ(v.stores, 1);
}

TEST(CirVisitor, VisitsSlicesYieldsAndOptionalParts) {
  VarNames v;
  v.include(make_yield(var("v", DType::F32), var("ix"), {var("o")}));
  v.include(make_store("t", {AxisSel::slice(var("lo"), {}), AxisSel::slice({}, var("hi"))}, f32(0.0)));
  v.include(make_decl("d", tensor({var("n")}), {}));
  v.include(Expr());
  EXPECT_EQ(v.names, (std::multiset<std::string>{"v", "ix", "o", "lo", "hi"}));

  VarNamesWithTypes t;
  t.include(make_decl("d", tensor({var("n")}), {}));
  EXPECT_EQ(t.names, (std::multiset<std::string>{"n"}));
}

TEST(CirEqual, StructuralEquality) {
  Expr a = var("i") * i64(4) + i64(1);
  Expr b = var("i") * i64(4) + i64(1);
  EXPECT_TRUE(equal(a, b));
  EXPECT_FALSE(equal(a, var("i") * i64(4) + i64(2)));
  EXPECT_FALSE(equal(a, var("j") * i64(4) + i64(1)));
  EXPECT_FALSE(equal(i64(1), IntImm::make(1, DType::I32)));
  EXPECT_FALSE(equal(var("i"), var("i", DType::I32)));
  EXPECT_FALSE(equal(f32(0.0), f32(-0.0)));
  EXPECT_TRUE(equal(f32(NAN), f32(NAN)));
  EXPECT_TRUE(equal(Expr(), Expr()));
  EXPECT_FALSE(equal(Expr(), a));
  EXPECT_FALSE(equal(min(a, b), max(a, b)));
  Type t = tensor({var("M")});
  EXPECT_TRUE(equal(make_access("A", t, {at(var("i"))}), make_access("A", t, {at(var("i"))})));
  EXPECT_FALSE(equal(make_access("A", t, {at(var("i"))}), make_access("B", t, {at(var("i"))})));
  EXPECT_FALSE(equal(make_access("A", t, {AxisSel::slice(var("i"), {})}), make_access("A", t, {at(var("i"))})));
  EXPECT_FALSE(equal(Var::make("x", tensor({var("M")})), Var::make("x", tensor({var("N")}))));
  Expr x = Var::make("x", tensor({i64(4), i64(4)}));
  EXPECT_FALSE(equal(make_reduce(ReduceOp::Sum, x, 0, false), make_reduce(ReduceOp::Sum, x, 1, false)));
  EXPECT_FALSE(equal(make_reduce(ReduceOp::Sum, x, 0, false), make_reduce(ReduceOp::Sum, x, 0, true)));
  EXPECT_TRUE(equal(tensor({var("M"), i64(2)}), tensor({var("M"), i64(2)})));
  EXPECT_FALSE(equal(tensor({var("M")}), tensor({var("M")}, DType::F16)));
}

}  // namespace
}  // namespace zyntax::cir
