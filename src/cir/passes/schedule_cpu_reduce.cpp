#include "cir/passes/schedule_cpu_reduce.hpp"

#include <algorithm>

#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/verifier.hpp"
#include "support/trip_count.hpp"

namespace zyntax::cir {

std::optional<Kernel> schedule_cpu_reduce(const Kernel& k, int64_t tasks, int64_t min_chunk, std::string* why_not) {
  auto fail = [&](std::string why) -> std::optional<Kernel> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (k.kind != KernelKind::Reduce) return fail("not a reduce kernel");
  std::optional<BinaryOp> op = reduce_binary_op(k.reduce_op);
  if (!op) return fail(std::string("a reduce(") + reduce_op_name(k.reduce_op) + ") kernel: tasks fold with + * min max");
  std::optional<SingleElementFold> fold = single_element_fold(k, false, why_not);
  if (!fold) return std::nullopt;
  const For& f = *fold->loop.as<For>();
  const std::vector<Expr>& target = fold->target;
  auto lo = f.lo.as<IntImm>(), hi = f.hi.as<IntImm>(), step = f.step.as<IntImm>();
  if (!lo || !hi || !step || step->value <= 0) return fail("the loop's bounds are not constants");

  int64_t trips = trip_count(lo->value, hi->value, step->value);
  DType acc = reduce_accumulator_dtype(k.reduce_op, k.output().type.dtype);
  bool order_shows = is_float(acc) && acc == k.output().type.dtype && (*op == BinaryOp::Add || *op == BinaryOp::Mul);
  int64_t count = order_shows ? 1 : std::clamp<int64_t>(trips / std::max<int64_t>(min_chunk, 1), 1, std::max<int64_t>(tasks, 1));
  int64_t chunk = std::max<int64_t>((trips + count - 1) / count, 1);

  FreshNames fresh(k);
  std::string t = fresh("task%r"), partial = fresh("yield%p");
  Expr first = simplify(Binary::make(BinaryOp::Add, f.lo, index_var(t) * i64(chunk * step->value)));
  Expr end = simplify(Binary::make(BinaryOp::Min, f.hi, Binary::make(BinaryOp::Add, first, i64(chunk * step->value))));
  Block body;
  body.push_back(make_decl(partial, Type::scalar(acc), fold_identity(*op, acc), f.span));
  body.push_back(make_for(f.var, first, end, f.step, yields_into(f.body, partial, *op, acc), LoopKind::Serial, 0, f.span));
  body.push_back(make_yield(Var::make(partial, Type::scalar(acc)), Expr(), target, f.span));
  Kernel out = k;
  out.body = {make_for(t, i64(0), i64(count), i64(1), std::move(body), LoopKind::Parallel, 0, f.span)};
  verify_or_throw(out, "schedule_cpu_reduce");
  return out;
}

}  // namespace zyntax::cir
