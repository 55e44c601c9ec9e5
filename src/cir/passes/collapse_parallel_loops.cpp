#include "cir/passes/collapse_parallel_loops.hpp"

#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

bool positive_constant(const Expr& e) {
  auto c = e.as<IntImm>();
  return c && c->value > 0;
}

// How many iterations `for v in lo..hi step s` runs, as an expression.
Expr trip_count(const For& f) {
  int64_t step = f.step.as<IntImm>()->value;
  Expr span = Binary::make(BinaryOp::Sub, f.hi, f.lo);
  if (step != 1) span = Binary::make(BinaryOp::Div, Binary::make(BinaryOp::Add, span, i64(step - 1)), f.step);
  return simplify(Binary::make(BinaryOp::Max, span, i64(0)));
}

}  // namespace

Stmt merge_loop_nest(const Stmt& s, LoopKind kind) {
  auto f = s.as<For>();
  if (!f || f->loop_kind != kind || f->body.size() != 1 || !positive_constant(f->step)) return s;
  Stmt inner_stmt = merge_loop_nest(f->body[0], kind);
  auto inner = inner_stmt.as<For>();
  if (!inner || inner->loop_kind != kind || !positive_constant(inner->step) || reads_any(inner->lo, {f->var}) || reads_any(inner->hi, {f->var}))
    return s;
  Expr n = trip_count(*inner);
  std::string t = f->var + "%" + inner->var;
  Expr tv = Var::make(t, Type::scalar(DType::I64));
  auto at = [&](const For& loop, Expr k) {
    return simplify(Binary::make(BinaryOp::Add, loop.lo, Binary::make(BinaryOp::Mul, k, loop.step)));
  };
  Block body;
  body.push_back(make_let(f->var, at(*f, Binary::make(BinaryOp::Div, tv, n)), f->span));
  body.push_back(make_let(inner->var, at(*inner, Binary::make(BinaryOp::Mod, tv, n)), inner->span));
  body.insert(body.end(), inner->body.begin(), inner->body.end());
  Expr total = simplify(Binary::make(BinaryOp::Mul, trip_count(*f), n));
  return make_for(t, i64(0), total, i64(1), std::move(body), kind, 0, f->span);
}

Kernel collapse_parallel_loops(const Kernel& k) {
  Kernel out = k;
  for (Stmt& s : out.body) s = merge_loop_nest(s, LoopKind::Parallel);
  verify_or_throw(out, "collapse_parallel_loops");
  return out;
}

}  // namespace zyntax::cir
