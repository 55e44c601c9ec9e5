#include "cir/passes/gpu_split_folds.hpp"

#include "cir/passes/element_maps.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"

namespace zyntax::cir {

std::optional<SplitFold> split_fold(const DotProductNest& n, int64_t rows, int64_t cols, int64_t terms, int64_t threads, FreshNames& fresh) {
  const std::string& acc = n.acc->name;
  auto fold = n.fold->value.as<Binary>();
  if (!fold) return std::nullopt;
  BinaryOp op = fold->op;
  if (op != BinaryOp::Add && op != BinaryOp::Mul && op != BinaryOp::Min && op != BinaryOp::Max) return std::nullopt;
  Expr term = is_var(fold->a, acc) ? fold->b : is_var(fold->b, acc) ? fold->a : Expr();
  if (!term.defined() || reads(term).count(acc)) return std::nullopt;
  if (!is_zero(n.rows->lo) || !is_zero(n.cols->lo) || rows <= 0 || cols <= 0) return std::nullopt;
  // As many parts as the threads allow, each at least 8 terms.
  int64_t parts = 1;
  while (rows * cols * parts * 2 <= threads && terms >= parts * 2 * 8) parts *= 2;
  if (parts == 1) return std::nullopt;

  Span span = n.fold->span;
  DType dt = n.acc->type.dtype;
  Type acc_type = Type::scalar(dt);
  std::string part = fresh(acc + "%part"), t = fresh(acc + "%t"), o = fresh(acc + "%o"), q = fresh(acc + "%q");
  Type part_type = Type::tensor(dt, {i64(rows * cols * parts)});
  auto slot = [&](const std::string& row, const std::string& col, const Expr& partial) {
    return std::vector{AxisSel::at(simplify((index_var(row) * i64(cols) + index_var(col)) * i64(parts) + partial))};
  };
  SplitFold out;
  out.partials = make_allocate(part, part_type, MemorySpace::Shared, span);

  // Each thread's part of its output's terms (under names of its own: the
  // nest's are the combining nest's).
  const For& k = *n.terms;
  std::string i1 = fresh(n.rows->var), j1 = fresh(n.cols->var), k1 = fresh(k.var), acc1 = fresh(acc);
  Expr term1 = substitute(term, {{n.rows->var, index_var(i1)}, {n.cols->var, index_var(j1)}, {k.var, index_var(k1)}});
  Expr sum1 = Var::make(acc1, acc_type);
  Expr next1 = is_var(fold->a, acc) ? Binary::make(op, sum1, term1, span) : Binary::make(op, term1, sum1, span);
  Stmt own_terms = make_for(k1, simplify(k.lo + index_var(q) * k.step), k.hi, simplify(i64(parts) * k.step), {make_assign(acc1, next1, span)},
                            LoopKind::Serial, 0, k.span);
  Block cell = {make_decl(acc1, acc_type, fold_identity(op, dt), n.acc->span), own_terms, make_store(part, slot(i1, j1, index_var(q)), sum1, span)};
  Stmt cols_loop = make_for(j1, n.cols->lo, n.cols->hi, n.cols->step, std::move(cell), LoopKind::Serial, 0, n.cols->span);
  Stmt rows_loop = make_for(i1, index_var(o), n.rows->hi, i64(threads / parts), {cols_loop}, LoopKind::Serial, 0, n.rows->span);
  Block thread = {make_let(o, simplify(index_var(t) / i64(parts)), span), make_let(q, mod(index_var(t), parts), span), rows_loop};
  out.threads = make_for(t, i64(0), i64(threads), i64(1), std::move(thread), LoopKind::GpuThread, 0, span);

  // The partials folded into the nest's own sum, in part order.
  std::string p = fresh(acc + "%p");
  Expr partial = make_access(part, part_type, slot(n.rows->var, n.cols->var, index_var(p)), span);
  Expr next = is_var(fold->a, acc) ? Binary::make(op, Var::make(acc, acc_type), partial, span) : Binary::make(op, partial, Var::make(acc, acc_type), span);
  Stmt combine_terms = make_for(p, i64(0), i64(parts), i64(1), {make_assign(acc, next, span)}, LoopKind::Serial, 0, span);
  Block combine_cell = {n.cols->body[0], combine_terms, n.cols->body[2]};
  Stmt combine_cols = make_for(n.cols->var, n.cols->lo, n.cols->hi, n.cols->step, std::move(combine_cell), LoopKind::Serial, 0, n.cols->span);
  out.combine = make_for(n.rows->var, n.rows->lo, n.rows->hi, n.rows->step, {combine_cols}, LoopKind::Serial, 0, n.rows->span);
  return out;
}

}  // namespace zyntax::cir
