#include "cir/passes/schedule_gpu_reduce.hpp"

#include "cir/affine.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

bool positive_constant(const Expr& e) {
  auto c = e.as<IntImm>();
  return c && c->value > 0;
}

Expr trip_count(const For& f) {
  Expr span = Binary::make(BinaryOp::Sub, f.hi, f.lo);
  span = Binary::make(BinaryOp::Div, Binary::make(BinaryOp::Add, span, Binary::make(BinaryOp::Sub, f.step, i64(1))), f.step);
  return simplify(Binary::make(BinaryOp::Max, span, i64(0)));
}

// for i in a..b: for j in c..d: body  →  for i%j in 0..trips(i)*trips(j): let i, j from i%j; body,
// while the inner loop is the whole body, its bounds do not read the outer
// variable, and both steps are positive constants.
For merge_nest(const For& f, FreshNames& fresh) {
  if (f.body.size() != 1 || !positive_constant(f.step)) return f;
  auto inner_stmt = f.body[0].as<For>();
  if (!inner_stmt || !positive_constant(inner_stmt->step) || reads_any(inner_stmt->lo, {f.var}) || reads_any(inner_stmt->hi, {f.var}))
    return f;
  For inner = merge_nest(*inner_stmt, fresh);
  Expr n = trip_count(inner);
  std::string var = fresh(f.var + "%" + inner.var);
  Expr v = Var::make(var, Type::scalar(DType::I64));
  auto at = [](const For& loop, Expr k) { return simplify(Binary::make(BinaryOp::Add, loop.lo, Binary::make(BinaryOp::Mul, k, loop.step))); };
  Block body = {make_let(f.var, at(f, Binary::make(BinaryOp::Div, v, n)), f.span),
                make_let(inner.var, at(inner, Binary::make(BinaryOp::Mod, v, n)), inner.span)};
  body.insert(body.end(), inner.body.begin(), inner.body.end());
  Expr total = simplify(Binary::make(BinaryOp::Mul, trip_count(f), n));
  return For(var, i64(0), total, i64(1), LoopKind::Serial, 0, std::move(body), f.span);
}

}  // namespace

std::optional<Kernel> schedule_gpu_reduce(const Kernel& k, int64_t blocks, int threads, std::string* why_not) {
  auto fail = [&](std::string why) -> std::optional<Kernel> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (k.kind != KernelKind::Reduce) return fail("not a reduce kernel");
  if (k.reduce_op != ReduceOp::Sum && k.reduce_op != ReduceOp::Product && k.reduce_op != ReduceOp::Min && k.reduce_op != ReduceOp::Max)
    return fail(std::string("a reduce(") + reduce_op_name(k.reduce_op) + ") kernel: block reductions fold with + * min max");
  auto loop = k.body.size() == 1 ? k.body[0].as<For>() : nullptr;
  if (!loop || loop->loop_kind != LoopKind::Serial) return fail("the kernel is not one serial loop");
  FreshNames fresh(k);
  For f = merge_nest(*loop, fresh);
  std::optional<std::vector<Expr>> target = single_yield_target(f);
  if (!target) return fail("the loop does not yield to one output element");
  if (!only_yields(f)) return fail("the loop does more than yield");
  if (!is_i64_scalar(f.lo) || !is_i64_scalar(f.hi) || !is_i64_scalar(f.step)) return fail("the loop's bounds are not i64");

  BinaryOp op = binary_op_of(k.reduce_op);
  DType acc = reduce_accumulator_dtype(k.reduce_op, k.output().type.dtype);
  std::string block = fresh("block%b"), t = fresh(f.var + "%t"), partial = fresh("yield%p"), part = fresh("yield%part");
  std::string total = fresh(partial + "%all");
  Expr first = Binary::make(BinaryOp::Mul, Var::make(block, Type::scalar(DType::I64)), i64(threads));
  Stmt thread_loop = strided_thread_loop(f, yields_into(f.body, partial, op, acc), t, threads, first, i64(blocks * threads));
  Block thread_body = {make_decl(partial, Type::scalar(acc), fold_identity(op, acc), f.span), thread_loop.as<For>()->body[0],
                       make_store(part, {AxisSel::at(Var::make(t, Type::scalar(DType::I64)))}, Var::make(partial, Type::scalar(acc)), f.span)};
  Stmt yield = make_yield(Var::make(total, Type::scalar(acc)), Expr(), *target, f.span);
  Block body = {make_allocate(part, Type::tensor(acc, {i64(threads)}), MemorySpace::Shared, f.span),
                make_for(t, i64(0), i64(threads), i64(1), std::move(thread_body), LoopKind::GpuThread, 0, f.span),
                make_block_reduce(total, k.reduce_op, part, i64(threads), f.span),
                make_for(fresh("once%t"), i64(0), i64(1), i64(1), {yield}, LoopKind::GpuThread, 0, f.span),
                make_barrier(FenceScope::Block, f.span)};
  Kernel out = k;
  out.body = {make_for(block, i64(0), i64(blocks), i64(1), std::move(body), LoopKind::GpuBlock, 0, f.span)};
  verify_or_throw(out, "schedule_gpu_reduce");
  return out;
}

}  // namespace zyntax::cir
