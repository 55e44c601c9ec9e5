#include "cir/passes/schedule_gpu_reduce.hpp"

#include "cir/affine.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

std::optional<Kernel> schedule_gpu_reduce(const Kernel& k, int64_t blocks, int threads, std::string* why_not) {
  auto fail = [&](std::string why) -> std::optional<Kernel> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (k.kind != KernelKind::Reduce) return fail("not a reduce kernel");
  std::optional<BinaryOp> op = reduce_binary_op(k.reduce_op);
  bool arg = is_arg_reduce(k.reduce_op);
  if (!op && !arg)
    return fail(std::string("a reduce(") + reduce_op_name(k.reduce_op) + ") kernel: block reductions fold with + * min max argmin argmax");
  if (arg && blocks != 1) return fail("an arg reduction folds in one block");
  std::optional<SingleElementFold> fold_of = single_element_fold(k, arg, why_not);
  if (!fold_of) return std::nullopt;
  FreshNames fresh(k);
  const For& f = *fold_of->loop.as<For>();
  const std::vector<Expr>& target = fold_of->target;
  if (!is_i64_scalar(f.lo) || !is_i64_scalar(f.hi) || !is_i64_scalar(f.step)) return fail("the loop's bounds are not i64");
  if (arg) {
    std::optional<Block> fold = arg_block_fold(f, k.reduce_op, target, threads, fresh);
    if (!fold) return fail("the loop yields what is not a number");
    Kernel out = k;
    out.body = {make_for(fresh("block%b"), i64(0), i64(1), i64(1), std::move(*fold), LoopKind::GpuBlock, 0, f.span)};
    verify_or_throw(out, "schedule_gpu_reduce");
    return out;
  }

  DType acc = reduce_accumulator_dtype(k.reduce_op, k.output().type.dtype);
  std::string block = fresh("block%b");
  Partial partial{fresh("yield%p"), fresh("yield%part"), *op, acc};
  std::string total = fresh(partial.name + "%all");
  Expr first = Binary::make(BinaryOp::Mul, index_var(block), i64(threads));
  BlockFold fold = block_fold(f, yields_into(f.body, partial.name, *op, acc), {partial}, {total}, fresh(f.var + "%t"), threads, first,
                              i64(blocks * threads));
  Block body = fold.arrays;
  body.push_back(fold.threads);
  body.insert(body.end(), fold.reductions.begin(), fold.reductions.end());
  Stmt yield = make_yield(Var::make(total, Type::scalar(acc)), Expr(), target, f.span);
  body.push_back(make_for(fresh("once%t"), i64(0), i64(1), i64(1), {yield}, LoopKind::GpuThread, 0, f.span));
  body.push_back(make_barrier(FenceScope::Block, f.span));
  Kernel out = k;
  out.body = {make_for(block, i64(0), i64(blocks), i64(1), std::move(body), LoopKind::GpuBlock, 0, f.span)};
  verify_or_throw(out, "schedule_gpu_reduce");
  return out;
}

}  // namespace zyntax::cir
