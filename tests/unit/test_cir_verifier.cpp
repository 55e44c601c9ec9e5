// The verifier accepts well-formed kernels and names each class of problem.
#include <gtest/gtest.h>

#include <stdexcept>

#include "cir/verifier.hpp"
#include "test_cir_kernels.hpp"

namespace zyntax::cir {
namespace {

using namespace fixtures;

// kernel e: elementwise over in x: tensor[N, f32], scalar alpha, out y:
// tensor[N, f32], with `body` inside `for i in 0..N`.
Kernel elementwise(Block body) {
  Kernel k;
  k.name = "e";
  k.kind = KernelKind::Elementwise;
  k.dims = {dim("N")};
  k.params = {input("x", tensor({var("N")})), scalar("alpha", DType::F32), output("y", tensor({var("N")}))};
  k.body = {make_for("i", i64(0), var("N"), i64(1), std::move(body))};
  return k;
}

Expr x_at(Expr i) { return make_access("x", tensor({var("N")}), {at(std::move(i))}); }
Stmt store_y(Expr v) { return make_store("y", {at(var("i"))}, std::move(v)); }
Expr alpha() { return var("alpha", DType::F32); }

// Whether some problem contains `text`.
bool reports(const Kernel& k, const std::string& text) {
  for (const std::string& p : verify(k))
    if (p.find(text) != std::string::npos) return true;
  return false;
}

std::string all_problems(const Kernel& k) {
  std::string s;
  for (const std::string& p : verify(k)) s += p + "\n";
  return s;
}

TEST(CirVerifier, AcceptsWellFormedKernels) {
  EXPECT_EQ(all_problems(matmul_kernel()), "");
  EXPECT_EQ(all_problems(row_sum_kernel()), "");
  EXPECT_EQ(all_problems(flash_attention_kernel()), "");
  EXPECT_EQ(all_problems(elementwise({store_y(x_at(var("i")) * alpha())})), "");
}

TEST(CirVerifier, AcceptsLocalsAllocationsAndGpuIndices) {
  Expr tid = Cast::make(DType::I64, Expr(std::make_shared<GpuIndex>(GpuIndexKind::ThreadIdx, 0, Span{})));
  Type tile = tensor({i64(4)});
  Block body = {
      make_let("v", x_at(var("i"))),
      make_decl("t", tile, make_fill(f32(0.0), {i64(4)})),
      make_store("t", {at(i64(0))}, var("v", DType::F32)),
      make_allocate("up", tensor({var("N")}), MemorySpace::Shared),
      make_store("up", {at(tid)}, make_access("t", tile, {at(i64(0))})),
      make_barrier(),
      make_if(Binary::make(BinaryOp::Lt, var("i"), i64(3)),
              {store_y(make_access("up", tensor({var("N")}), {at(var("i"))}))}),
  };
  EXPECT_EQ(all_problems(elementwise(body)), "");
}

TEST(CirVerifier, UndefinedVariable) {
  Kernel k = elementwise({store_y(x_at(var("i")) * var("z", DType::F32))});
  EXPECT_TRUE(reports(k, "Var 'z' is not defined")) << all_problems(k);
  // The message says where: the statement it is in.
  EXPECT_TRUE(reports(k, "(in `y[i] = x[i] * z`)")) << all_problems(k);
}

TEST(CirVerifier, LoopVariableIsOnlyVisibleInItsBody) {
  Kernel k = elementwise({});
  k.body.push_back(make_store("y", {at(var("i"))}, f32(0.0)));
  EXPECT_TRUE(reports(k, "Var 'i' is not defined")) << all_problems(k);
}

TEST(CirVerifier, LocalsAreVisibleToTheEndOfTheirBlock) {
  Expr cond = Binary::make(BinaryOp::Lt, var("i"), i64(3));
  Kernel ok = elementwise({make_let("t", x_at(var("i"))), make_if(cond, {store_y(var("t", DType::F32))})});
  EXPECT_EQ(all_problems(ok), "");
  Kernel bad = elementwise({make_if(cond, {make_let("t", x_at(var("i")))}), store_y(var("t", DType::F32))});
  EXPECT_TRUE(reports(bad, "Var 't' is not defined")) << all_problems(bad);
}

TEST(CirVerifier, ShadowedOrRepeatedNames) {
  Kernel nested = elementwise({make_for("i", i64(0), i64(2), i64(1), {})});
  EXPECT_TRUE(reports(nested, "'i' is declared more than once")) << all_problems(nested);
  // Names are unique in the whole kernel, not just along one path.
  Kernel siblings = elementwise({make_for("j", i64(0), i64(2), i64(1), {make_let("t", alpha())}),
                                 make_for("k", i64(0), i64(2), i64(1), {make_let("t", alpha())})});
  EXPECT_TRUE(reports(siblings, "'t' is declared more than once")) << all_problems(siblings);
  Kernel param = elementwise({make_let("alpha", f32(1.0))});
  EXPECT_TRUE(reports(param, "'alpha' is declared more than once")) << all_problems(param);
}

TEST(CirVerifier, DuplicateParamsAndOutputCount) {
  Kernel dup = elementwise({});
  dup.params.insert(dup.params.begin(), input("N", tensor({var("N")})));
  EXPECT_TRUE(reports(dup, "'N' is declared more than once")) << all_problems(dup);
  Kernel none = elementwise({});
  none.params.pop_back();
  EXPECT_TRUE(reports(none, "kernel has 0 output params, expected exactly one")) << all_problems(none);
  Kernel two = elementwise({});
  two.params.push_back(output("y2", tensor({var("N")})));
  EXPECT_TRUE(reports(two, "kernel has 2 output params")) << all_problems(two);
}

TEST(CirVerifier, StoresOnlyToWritableBuffers) {
  Kernel to_input = elementwise({make_store("x", {at(var("i"))}, f32(0.0))});
  EXPECT_TRUE(reports(to_input, "store to input 'x'")) << all_problems(to_input);
  Kernel to_let = elementwise({make_let("t", make_fill(f32(0.0), {i64(4)})), make_store("t", {at(i64(0))}, f32(1.0))});
  EXPECT_TRUE(reports(to_let, "store to let 't'")) << all_problems(to_let);
  Kernel to_scalar = elementwise({make_decl("s", Type::scalar(DType::F32), f32(0.0)), make_store("s", {}, f32(1.0))});
  EXPECT_TRUE(reports(to_scalar, "store to var 's'")) << all_problems(to_scalar);
  Kernel unknown = elementwise({make_store("w", {at(var("i"))}, f32(0.0))});
  EXPECT_TRUE(reports(unknown, "store to undefined buffer 'w'")) << all_problems(unknown);
}

TEST(CirVerifier, AssignOnlyToVars) {
  Kernel to_let = elementwise({make_let("t", alpha()), make_assign("t", f32(1.0))});
  EXPECT_TRUE(reports(to_let, "assignment to let 't'")) << all_problems(to_let);
  Kernel to_loop = elementwise({make_assign("i", i64(1))});
  EXPECT_TRUE(reports(to_loop, "assignment to loop variable 'i'")) << all_problems(to_loop);
  Kernel undefined = elementwise({make_assign("u", f32(1.0))});
  EXPECT_TRUE(reports(undefined, "assignment to undefined 'u'")) << all_problems(undefined);
  Kernel wrong_dtype = elementwise({make_decl("s", Type::scalar(DType::F32), f32(0.0)), make_assign("s", i64(1))});
  EXPECT_TRUE(reports(wrong_dtype, "value assigned to 's' `1` has dtype i64, expected f32"))
      << all_problems(wrong_dtype);
}

TEST(CirVerifier, TooManyAxes) {
  Kernel k = elementwise({store_y(make_access("x", tensor({var("N"), var("N")}), {at(var("i")), at(var("i"))}))});
  EXPECT_TRUE(reports(k, "'x' is indexed with 2 axes but has rank 1")) << all_problems(k);
  Kernel store = elementwise({make_store("y", {at(var("i")), at(var("i"))}, f32(0.0))});
  EXPECT_TRUE(reports(store, "'y' is indexed with 2 axes but has rank 1")) << all_problems(store);
}

TEST(CirVerifier, BinaryDtypes) {
  Kernel mixed = elementwise({store_y(x_at(var("i")) + var("i"))});
  EXPECT_TRUE(reports(mixed, "Binary operands have different dtypes f32 and i64: `x[i] + i`")) << all_problems(mixed);
  Expr wrong = Expr(std::make_shared<Binary>(BinaryOp::Lt, alpha(), alpha(), Type::scalar(DType::F32), Span{}));
  Kernel node = elementwise({store_y(wrong)});
  EXPECT_TRUE(reports(node, "node `alpha < alpha` has dtype f32, expected bool")) << all_problems(node);
}

TEST(CirVerifier, OtherDtypeRules) {
  Kernel cond = elementwise({make_if(var("i"), {})});
  EXPECT_TRUE(reports(cond, "if condition `i` is not a bool scalar")) << all_problems(cond);
  Kernel select = elementwise({store_y(Select::make(alpha(), alpha(), alpha()))});
  EXPECT_TRUE(reports(select, "select condition `alpha` is not bool")) << all_problems(select);
  Kernel math = elementwise({store_y(Cast::make(DType::F32, Math::make(MathFn::Exp, {var("i")})))});
  EXPECT_TRUE(reports(math, "exp needs float arguments")) << all_problems(math);
  Kernel index = elementwise({store_y(x_at(alpha()))});
  EXPECT_TRUE(reports(index, "index `alpha` is not an integer scalar")) << all_problems(index);
  Kernel stored = elementwise({store_y(var("i"))});
  EXPECT_TRUE(reports(stored, "value stored to 'y' `i` has dtype i64, expected f32")) << all_problems(stored);
  Kernel buffer_var = elementwise({store_y(var("x", DType::F32))});
  EXPECT_TRUE(reports(buffer_var, "Var 'x' names the input buffer 'x'")) << all_problems(buffer_var);
}

TEST(CirVerifier, LoopBounds) {
  Kernel step = elementwise({make_for("j", i64(0), i64(4), i64(0), {})});
  EXPECT_TRUE(reports(step, "loop step 0 is not positive")) << all_problems(step);
  Kernel bound = elementwise({make_for("j", i64(0), alpha(), i64(1), {})});
  EXPECT_TRUE(reports(bound, "loop hi `alpha` is not an integer scalar")) << all_problems(bound);
}

TEST(CirVerifier, YieldRules) {
  Kernel outside = elementwise({make_yield(alpha(), {}, {var("i")})});
  EXPECT_TRUE(reports(outside, "yield outside a reduce kernel")) << all_problems(outside);

  Kernel argmax = row_sum_kernel();
  argmax.reduce_op = ReduceOp::ArgMax;
  argmax.params.back().type.dtype = DType::I64;
  EXPECT_TRUE(reports(argmax, "yield to an argmax reduction has no index")) << all_problems(argmax);

  Kernel rank = row_sum_kernel();
  Type x = rank.params[0].type;
  Block inner = {make_yield(make_access("x", x, {at(var("r")), at(var("c"))}), {}, {var("r"), var("c")})};
  rank.body = {make_for("r", i64(0), var("R"), i64(1), {make_for("c", i64(0), var("C"), i64(1), inner)})};
  EXPECT_TRUE(reports(rank, "yield has 2 output indices but the output has rank 1")) << all_problems(rank);
}

TEST(CirVerifier, ParamExtentsOnlyUseDimsAndScalars) {
  Kernel k = elementwise({});
  k.params[0].type = tensor({var("Q")});
  EXPECT_TRUE(reports(k, "Var 'Q' is not defined (in param 'x')")) << all_problems(k);
  Kernel scalar_extent = elementwise({});
  scalar_extent.params.insert(scalar_extent.params.begin(), scalar("n", DType::I64));
  scalar_extent.params[1].type = tensor({var("n")});
  EXPECT_EQ(all_problems(scalar_extent), "");
  Kernel float_extent = elementwise({});
  float_extent.params[0].type = tensor({alpha()});
  EXPECT_TRUE(reports(float_extent, "extent `alpha` is not an integer scalar")) << all_problems(float_extent);
}

TEST(CirVerifier, VerifyOrThrowNamesThePass) {
  EXPECT_NO_THROW(verify_or_throw(matmul_kernel(), "test"));
  Kernel k = elementwise({store_y(var("z", DType::F32))});
  try {
    verify_or_throw(k, "my_pass");
    FAIL() << "expected a logic_error";
  } catch (const std::logic_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("after my_pass"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Var 'z' is not defined"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace zyntax::cir
