// IRMutator shares every subtree it does not change, rebuilds the path to
// what it changes, and deletes statements mutated to nothing.
#include <gtest/gtest.h>

#include "cir/mutator.hpp"
#include "cir/printer.hpp"
#include "test_cir_kernels.hpp"

namespace zyntax::cir {
namespace {

using namespace fixtures;

class Renamer : public IRMutator {
 public:
  Renamer(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  using IRMutator::visit;
  Expr visit(const Var* op) override { return op->name == from_ ? Var::make(to_, op->type) : IRMutator::visit(op); }

 private:
  std::string from_, to_;
};

class DropBarriers : public IRMutator {
 public:
  using IRMutator::visit;
  Stmt visit(const Barrier*) override { return {}; }
};

TEST(CirMutator, IdentityKeepsEveryHandle) {
  Kernel k = flash_attention_kernel();
  IRMutator m;
  Block body = m.mutate(k.body);
  ASSERT_EQ(body.size(), k.body.size());
  EXPECT_TRUE(body[0].same_as(k.body[0]));
  Kernel out = m.mutate(k);
  EXPECT_TRUE(out.body[0].same_as(k.body[0]));
  for (size_t i = 0; i < k.params.size(); ++i)
    for (size_t j = 0; j < k.params[i].type.rank(); ++j)
      EXPECT_TRUE(out.params[i].type.shape[j].same_as(k.params[i].type.shape[j]));

  Expr e =
      make_access("K", k.params[1].type, {at(var("b")), AxisSel::slice(var("kv"), var("kv") + i64(64))}) * f32(2.0);
  EXPECT_TRUE(m.mutate(e).same_as(e));
  EXPECT_FALSE(m.mutate(Expr()).defined());
}

TEST(CirMutator, IdentityKeepsHandlesOfEveryNodeKind) {
  IRMutator m;
  Expr t = Var::make("t", tensor({i64(4), i64(4)}));
  Expr v = Var::make("v", tensor({i64(4)}));
  Expr p = var("p", DType::Bool);
  std::vector<Expr> exprs = {
      Cast::make(DType::I32, var("i")),
      Unary::make(UnaryOp::Not, p),
      Select::make(p, f32(1.0), f32(2.0)),
      Math::make(MathFn::Pow, {f32(1.0), f32(2.0)}),
      make_dot(v, v),
      make_reduce(ReduceOp::Max, t, 0, true),
      make_matmul(t, t),
      make_transpose(t),
      make_fill(f32(0.0), {var("n")}),
      Expr(std::make_shared<GpuIndex>(GpuIndexKind::BlockIdx, 1, Span{})),
      BoolImm::make(true),
  };
  for (const Expr& e : exprs) EXPECT_TRUE(m.mutate(e).same_as(e)) << print(e);
  std::vector<Stmt> stmts = {
      make_if(p, {make_barrier()}, {make_barrier()}),
      make_let("x", f32(1.0)),
      make_decl("d", tensor({var("n")}), {}),
      make_assign("d", f32(1.0)),
      make_yield(f32(1.0), var("j"), {var("i")}),
      make_allocate("up", tensor({var("n")}), MemorySpace::Shared),
      Stmt(std::make_shared<Atomic>(AtomicOp::Add, "out", std::vector<Expr>{var("i")}, f32(1.0), FenceScope::Device,
                                    Span{})),
  };
  for (const Stmt& s : stmts) EXPECT_TRUE(m.mutate(s).same_as(s)) << print(s);
}

TEST(CirMutator, RebuildsOnlyThePathToAChange) {
  Expr i = var("i"), j = var("j");
  Expr left = i * i64(4);
  Expr right = j + i64(1);
  Expr e = left + right;
  Expr r = Renamer("j", "k").mutate(e);
  EXPECT_FALSE(r.same_as(e));
  EXPECT_EQ(print(r), "i * 4 + (k + 1)");
  EXPECT_TRUE(r.as<Binary>()->a.same_as(left));

  Kernel k = matmul_kernel();
  Kernel renamed = Renamer("sum", "acc").mutate(k);
  EXPECT_NE(print(renamed).find("acc + A[i, k] * B[k, j]"), std::string::npos) << print(renamed);
  // Param types do not mention `sum`, so their extents are shared.
  EXPECT_TRUE(renamed.params[0].type.shape[0].same_as(k.params[0].type.shape[0]));
}

TEST(CirMutator, NodeTypesAreKeptUnlessRequested) {
  Expr v = Var::make("t", tensor({var("n")}));
  Expr store = make_fill(f32(0.0), {var("n")});
  Renamer keep("n", "m");
  EXPECT_TRUE(keep.mutate(v).same_as(v));
  EXPECT_TRUE(keep.mutate(store).same_as(store));

  class TypeRenamer : public IRMutator {
   public:
    TypeRenamer() : IRMutator(/*rewrite_node_types=*/true) {}
    using IRMutator::visit;
    Expr visit(const Var* op) override { return op->name == "n" ? var("m") : IRMutator::visit(op); }
  };
  EXPECT_EQ(print(TypeRenamer().mutate(v)->type), "tensor[m, f32]");
  EXPECT_EQ(print(TypeRenamer().mutate(store)), "fill(0.0, [m])");
  // Decl and Allocate types are always mutated.
  Stmt decl = make_decl("d", tensor({var("n")}), {});
  EXPECT_EQ(print(keep.mutate(decl)), "var d: tensor[m, f32]\n");
  EXPECT_EQ(print(keep.mutate_type(tensor({var("n"), i64(2)}))), "tensor[m, 2, f32]");
}

TEST(CirMutator, UndefinedStatementsAreDropped) {
  Block body = {make_barrier(), make_let("x", f32(1.0)), make_barrier(),
                make_for("i", i64(0), i64(4), i64(1), {make_barrier(), make_assign("x", f32(2.0))})};
  Block out = DropBarriers().mutate(body);
  EXPECT_EQ(print(out), "let x: f32 = 1.0\nfor i in 0..4 {\n  x = 2.0\n}\n");
  EXPECT_TRUE(out[0].same_as(body[1]));
}

}  // namespace
}  // namespace zyntax::cir
