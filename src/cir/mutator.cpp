#include "cir/mutator.hpp"

#include <memory>

namespace zyntax::cir {

namespace {

// Keeps the handle being mutated on a stack for handle_of(), also when a
// visit throws.
template <class Handle>
class Pushed {
 public:
  Pushed(std::vector<Handle>& stack, const Handle& h) : stack_(stack) { stack_.push_back(h); }
  ~Pushed() { stack_.pop_back(); }
  Pushed(const Pushed&) = delete;
  Pushed& operator=(const Pushed&) = delete;

 private:
  std::vector<Handle>& stack_;
};

template <class Handle, class Rebuild>
Handle keep_or(const Handle& self, bool changed, Rebuild rebuild) {
  return !changed && self.defined() ? self : rebuild();
}

}  // namespace

bool same_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}

bool same_axes(const std::vector<AxisSel>& a, const std::vector<AxisSel>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_slice != b[i].is_slice || !a[i].index.same_as(b[i].index) || !a[i].lo.same_as(b[i].lo) ||
        !a[i].hi.same_as(b[i].hi))
      return false;
  }
  return true;
}

bool same_block(const Block& a, const Block& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}

bool same_type(const Type& a, const Type& b) { return a.dtype == b.dtype && same_exprs(a.shape, b.shape); }

Expr IRMutator::handle_of(const ExprNode* op) const {
  return !expr_stack_.empty() && expr_stack_.back().get() == op ? expr_stack_.back() : Expr();
}

Stmt IRMutator::handle_of(const StmtNode* op) const {
  return !stmt_stack_.empty() && stmt_stack_.back().get() == op ? stmt_stack_.back() : Stmt();
}

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  Pushed<Expr> pushed(expr_stack_, e);
  switch (e->kind) {
    case ExprKind::IntImm: return visit(e.as<IntImm>());
    case ExprKind::FloatImm: return visit(e.as<FloatImm>());
    case ExprKind::BoolImm: return visit(e.as<BoolImm>());
    case ExprKind::Var: return visit(e.as<Var>());
    case ExprKind::Cast: return visit(e.as<Cast>());
    case ExprKind::Unary: return visit(e.as<Unary>());
    case ExprKind::Binary: return visit(e.as<Binary>());
    case ExprKind::Select: return visit(e.as<Select>());
    case ExprKind::Math: return visit(e.as<Math>());
    case ExprKind::Access: return visit(e.as<Access>());
    case ExprKind::Dot: return visit(e.as<Dot>());
    case ExprKind::Reduce: return visit(e.as<Reduce>());
    case ExprKind::MatMul: return visit(e.as<MatMul>());
    case ExprKind::Transpose: return visit(e.as<Transpose>());
    case ExprKind::Fill: return visit(e.as<Fill>());
    case ExprKind::GpuIndex: return visit(e.as<GpuIndex>());
  }
  return e;
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  Pushed<Stmt> pushed(stmt_stack_, s);
  switch (s->kind) {
    case StmtKind::For: return visit(s.as<For>());
    case StmtKind::If: return visit(s.as<If>());
    case StmtKind::Let: return visit(s.as<Let>());
    case StmtKind::Decl: return visit(s.as<Decl>());
    case StmtKind::Assign: return visit(s.as<Assign>());
    case StmtKind::Store: return visit(s.as<Store>());
    case StmtKind::Yield: return visit(s.as<Yield>());
    case StmtKind::Allocate: return visit(s.as<Allocate>());
    case StmtKind::Barrier: return visit(s.as<Barrier>());
    case StmtKind::Check: return visit(s.as<Check>());
    case StmtKind::Atomic: return visit(s.as<Atomic>());
    case StmtKind::MatMulBlock: return visit(s.as<MatMulBlock>());
    case StmtKind::BlockReduce: return visit(s.as<BlockReduce>());
    case StmtKind::TileMma: return visit(s.as<TileMma>());
    case StmtKind::AsyncCopy: return visit(s.as<AsyncCopy>());
    case StmtKind::WarpgroupProduct: return visit(s.as<WarpgroupProduct>());
    case StmtKind::WarpgroupAttention: return visit(s.as<WarpgroupAttention>());
  }
  return s;
}

Block IRMutator::mutate(const Block& b) {
  Block out;
  out.reserve(b.size());
  for (const Stmt& s : b) {
    Stmt r = mutate(s);
    if (r.defined()) out.push_back(std::move(r));
  }
  return out;
}

Kernel IRMutator::mutate(const Kernel& k) {
  Kernel out = k;
  for (Param& p : out.params) p.type = mutate_type(p.type);
  out.body = mutate(k.body);
  out.hints.shared_bytes = mutate(k.hints.shared_bytes);
  return out;
}

Type IRMutator::mutate_type(const Type& t) { return {t.dtype, mutate_exprs(t.shape)}; }

Type IRMutator::node_type(const Type& t) { return rewrite_node_types_ ? mutate_type(t) : t; }

std::vector<Expr> IRMutator::mutate_exprs(const std::vector<Expr>& es) {
  std::vector<Expr> out;
  out.reserve(es.size());
  for (const Expr& e : es) out.push_back(mutate(e));
  return out;
}

std::vector<AxisSel> IRMutator::mutate_axes(const std::vector<AxisSel>& axes) {
  std::vector<AxisSel> out;
  out.reserve(axes.size());
  for (const AxisSel& a : axes) out.push_back({a.is_slice, mutate(a.index), mutate(a.lo), mutate(a.hi)});
  return out;
}

// ---------------------------------------------------------------- expressions

Expr IRMutator::visit(const IntImm* op) {
  return keep_or(handle_of(op), false, [&] { return IntImm::make(op->value, op->type.dtype, op->span); });
}
Expr IRMutator::visit(const FloatImm* op) {
  return keep_or(handle_of(op), false, [&] { return FloatImm::make(op->value, op->type.dtype, op->span); });
}
Expr IRMutator::visit(const BoolImm* op) {
  return keep_or(handle_of(op), false, [&] { return BoolImm::make(op->value, op->span); });
}

Expr IRMutator::visit(const Var* op) {
  Type t = node_type(op->type);
  return keep_or(handle_of(op), !same_type(t, op->type), [&] { return Var::make(op->name, t, op->span); });
}

Expr IRMutator::visit(const Cast* op) {
  Expr v = mutate(op->value);
  return keep_or(handle_of(op), !v.same_as(op->value), [&] { return Cast::make(op->type.dtype, v, op->span); });
}

Expr IRMutator::visit(const Unary* op) {
  Expr a = mutate(op->a);
  return keep_or(handle_of(op), !a.same_as(op->a), [&] { return Unary::make(op->op, a, op->span); });
}

Expr IRMutator::visit(const Binary* op) {
  Expr a = mutate(op->a);
  Expr b = mutate(op->b);
  bool changed = !a.same_as(op->a) || !b.same_as(op->b);
  return keep_or(handle_of(op), changed, [&] { return Binary::make(op->op, a, b, op->span); });
}

Expr IRMutator::visit(const Select* op) {
  Expr c = mutate(op->cond);
  Expr t = mutate(op->t);
  Expr f = mutate(op->f);
  bool changed = !c.same_as(op->cond) || !t.same_as(op->t) || !f.same_as(op->f);
  return keep_or(handle_of(op), changed, [&] { return Select::make(c, t, f, op->span); });
}

Expr IRMutator::visit(const Math* op) {
  std::vector<Expr> args = mutate_exprs(op->args);
  return keep_or(handle_of(op), !same_exprs(args, op->args), [&] { return Math::make(op->fn, args, op->span); });
}

Expr IRMutator::visit(const Access* op) {
  std::vector<AxisSel> axes = mutate_axes(op->axes);
  Type t = node_type(op->type);
  bool changed = !same_axes(axes, op->axes) || !same_type(t, op->type);
  return keep_or(handle_of(op), changed, [&] { return Expr(std::make_shared<Access>(op->buffer, axes, t, op->span)); });
}

Expr IRMutator::visit(const Dot* op) {
  Expr a = mutate(op->a);
  Expr b = mutate(op->b);
  bool changed = !a.same_as(op->a) || !b.same_as(op->b);
  return keep_or(handle_of(op), changed, [&] { return make_dot(a, b, op->span); });
}

Expr IRMutator::visit(const Reduce* op) {
  Expr v = mutate(op->value);
  return keep_or(handle_of(op), !v.same_as(op->value),
                 [&] { return make_reduce(op->op, v, op->axis, op->keepdims, op->span); });
}

Expr IRMutator::visit(const MatMul* op) {
  Expr a = mutate(op->a);
  Expr b = mutate(op->b);
  bool changed = !a.same_as(op->a) || !b.same_as(op->b);
  return keep_or(handle_of(op), changed, [&] { return make_matmul(a, b, op->span); });
}

Expr IRMutator::visit(const Transpose* op) {
  Expr v = mutate(op->value);
  return keep_or(handle_of(op), !v.same_as(op->value), [&] { return make_transpose(v, op->span); });
}

Expr IRMutator::visit(const Fill* op) {
  Expr v = mutate(op->value);
  Type t = node_type(op->type);
  bool changed = !v.same_as(op->value) || !same_type(t, op->type);
  return keep_or(handle_of(op), changed, [&] { return make_fill(v, t.shape, op->span); });
}

Expr IRMutator::visit(const GpuIndex* op) {
  return keep_or(handle_of(op), false,
                 [&] { return Expr(std::make_shared<GpuIndex>(op->index_kind, op->axis, op->span)); });
}

// ---------------------------------------------------------------- statements

Stmt IRMutator::visit(const For* op) {
  Expr lo = mutate(op->lo);
  Expr hi = mutate(op->hi);
  Expr step = mutate(op->step);
  Block body = mutate(op->body);
  bool changed = !lo.same_as(op->lo) || !hi.same_as(op->hi) || !step.same_as(op->step) || !same_block(body, op->body);
  return keep_or(handle_of(op), changed,
                 [&] { return make_for(op->var, lo, hi, step, body, op->loop_kind, op->factor, op->span); });
}

Stmt IRMutator::visit(const If* op) {
  Expr c = mutate(op->cond);
  Block t = mutate(op->then_body);
  Block e = mutate(op->else_body);
  bool changed = !c.same_as(op->cond) || !same_block(t, op->then_body) || !same_block(e, op->else_body);
  return keep_or(handle_of(op), changed, [&] { return make_if(c, t, e, op->span); });
}

Stmt IRMutator::visit(const Let* op) {
  Expr v = mutate(op->value);
  return keep_or(handle_of(op), !v.same_as(op->value), [&] { return make_let(op->name, v, op->span); });
}

Stmt IRMutator::visit(const Decl* op) {
  Type t = mutate_type(op->type);
  Expr init = mutate(op->init);
  bool changed = !same_type(t, op->type) || !init.same_as(op->init);
  return keep_or(handle_of(op), changed, [&] { return make_decl(op->name, t, init, op->span); });
}

Stmt IRMutator::visit(const Assign* op) {
  Expr v = mutate(op->value);
  return keep_or(handle_of(op), !v.same_as(op->value), [&] { return make_assign(op->name, v, op->span); });
}

Stmt IRMutator::visit(const Store* op) {
  std::vector<AxisSel> axes = mutate_axes(op->axes);
  Expr v = mutate(op->value);
  bool changed = !same_axes(axes, op->axes) || !v.same_as(op->value);
  return keep_or(handle_of(op), changed, [&] { return make_store(op->buffer, axes, v, op->span); });
}

Stmt IRMutator::visit(const Yield* op) {
  Expr v = mutate(op->value);
  Expr index = mutate(op->index);
  std::vector<Expr> out_index = mutate_exprs(op->out_index);
  bool changed = !v.same_as(op->value) || !index.same_as(op->index) || !same_exprs(out_index, op->out_index);
  return keep_or(handle_of(op), changed, [&] { return make_yield(v, index, out_index, op->span); });
}

Stmt IRMutator::visit(const Allocate* op) {
  Type t = mutate_type(op->type);
  return keep_or(handle_of(op), !same_type(t, op->type),
                 [&] { return make_allocate(op->name, t, op->space, op->span, op->capacity, op->offset); });
}

Stmt IRMutator::visit(const Check* op) {
  Expr c = mutate(op->cond);
  return keep_or(handle_of(op), !c.same_as(op->cond), [&] { return make_check(c, op->message, op->span); });
}

Stmt IRMutator::visit(const Barrier* op) {
  return keep_or(handle_of(op), false, [&] { return make_barrier(op->scope, op->span); });
}

Stmt IRMutator::visit(const Atomic* op) {
  std::vector<Expr> index = mutate_exprs(op->index);
  Expr v = mutate(op->value);
  bool changed = !same_exprs(index, op->index) || !v.same_as(op->value);
  return keep_or(handle_of(op), changed,
                 [&] { return Stmt(std::make_shared<Atomic>(op->op, op->buffer, index, v, op->scope, op->span)); });
}

Stmt IRMutator::visit(const BlockReduce* op) {
  Expr count = mutate(op->count);
  return keep_or(handle_of(op), !count.same_as(op->count),
                 [&] { return make_block_reduce(op->name, op->op, op->array, count, op->span); });
}

// Names and constants only: nothing to rewrite.
Stmt IRMutator::visit(const TileMma* op) { return handle_of(op); }

Stmt IRMutator::visit(const AsyncCopy* op) {
  if (op->step != AsyncCopy::Step::Start) return handle_of(op);
  Expr d = mutate(op->dst_index), v = mutate(op->valid);
  std::vector<Expr> si = mutate_exprs(op->src_index);
  bool changed = !d.same_as(op->dst_index) || !v.same_as(op->valid) || !same_exprs(si, op->src_index);
  return keep_or(handle_of(op), changed, [&] { return make_async_copy(op->dst, d, op->src, si, op->count, v, op->span); });
}

Stmt IRMutator::visit(const WarpgroupProduct* op) {
  Expr first = mutate(op->first_tile), stride = mutate(op->tile_stride), rank = mutate(op->cluster_rank);
  Block epilogue = mutate(op->epilogue);
  bool changed = !first.same_as(op->first_tile) || !stride.same_as(op->tile_stride) || !rank.same_as(op->cluster_rank) ||
                 !same_block(epilogue, op->epilogue);
  return keep_or(handle_of(op), changed, [&] {
    WarpgroupProduct p = *op;
    p.first_tile = first;
    p.tile_stride = stride;
    p.cluster_rank = rank;
    p.epilogue = std::move(epilogue);
    return make_warpgroup_product(p);
  });
}

Stmt IRMutator::visit(const WarpgroupAttention* op) {
  Expr first = mutate(op->first_tile), stride = mutate(op->tile_stride);
  Block epilogue = mutate(op->epilogue);
  bool changed = !first.same_as(op->first_tile) || !stride.same_as(op->tile_stride) || !same_block(epilogue, op->epilogue);
  return keep_or(handle_of(op), changed, [&] {
    WarpgroupAttention a = *op;
    a.first_tile = first;
    a.tile_stride = stride;
    a.epilogue = std::move(epilogue);
    return make_warpgroup_attention(a);
  });
}

Stmt IRMutator::visit(const MatMulBlock* op) {
  Expr ao = mutate(op->a_offset), ars = mutate(op->a_row_stride), aks = mutate(op->a_k_stride);
  Expr bo = mutate(op->b_offset), ldb = mutate(op->ldb), kc = mutate(op->kc), ldc = mutate(op->ldc);
  Expr mv = mutate(op->m_valid), nv = mutate(op->n_valid), acc = mutate(op->accumulate);
  Expr rows_at = op->b_rows_at.defined() ? mutate(op->b_rows_at) : Expr();
  std::vector<Expr> ci = mutate_exprs(op->c_index);
  bool changed = !ao.same_as(op->a_offset) || !ars.same_as(op->a_row_stride) || !aks.same_as(op->a_k_stride) || !bo.same_as(op->b_offset) || !ldb.same_as(op->ldb) || !kc.same_as(op->kc) || !ldc.same_as(op->ldc) ||
                 !mv.same_as(op->m_valid) || !nv.same_as(op->n_valid) || !acc.same_as(op->accumulate) ||
                 !rows_at.same_as(op->b_rows_at) || !same_exprs(ci, op->c_index);
  return keep_or(handle_of(op), changed, [&] {
    return make_matmul_block(op->rows, op->cols, op->a, ao, ars, aks, op->b, bo, ldb, kc, op->c, ci, ldc, mv, nv, acc, op->span,
                             RowTable{op->b_rows, rows_at, op->b_rows_max});
  });
}

}  // namespace zyntax::cir
