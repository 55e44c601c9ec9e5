#include "cir/visitor.hpp"

namespace zyntax::cir {

void IRVisitor::include(const Expr& e) {
  if (!e.defined()) return;
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
}

void IRVisitor::include(const Stmt& s) {
  if (!s.defined()) return;
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
}

void IRVisitor::include(const Block& b) {
  for (const Stmt& s : b) include(s);
}

void IRVisitor::visit_type(const Type& t) {
  for (const Expr& e : t.shape) include(e);
}

void IRVisitor::visit_axes(const std::vector<AxisSel>& axes) {
  for (const AxisSel& a : axes) {
    include(a.index);
    include(a.lo);
    include(a.hi);
  }
}

void IRVisitor::visit(const IntImm*) {}
void IRVisitor::visit(const FloatImm*) {}
void IRVisitor::visit(const BoolImm*) {}
void IRVisitor::visit(const Var*) {}
void IRVisitor::visit(const Cast* op) { include(op->value); }
void IRVisitor::visit(const Unary* op) { include(op->a); }
void IRVisitor::visit(const Binary* op) {
  include(op->a);
  include(op->b);
}
void IRVisitor::visit(const Select* op) {
  include(op->cond);
  include(op->t);
  include(op->f);
}
void IRVisitor::visit(const Math* op) {
  for (const Expr& a : op->args) include(a);
}
void IRVisitor::visit(const Access* op) { visit_axes(op->axes); }
void IRVisitor::visit(const Dot* op) {
  include(op->a);
  include(op->b);
}
void IRVisitor::visit(const Reduce* op) { include(op->value); }
void IRVisitor::visit(const MatMul* op) {
  include(op->a);
  include(op->b);
}
void IRVisitor::visit(const Transpose* op) { include(op->value); }
void IRVisitor::visit(const Fill* op) { include(op->value); }
void IRVisitor::visit(const GpuIndex*) {}

void IRVisitor::visit(const For* op) {
  include(op->lo);
  include(op->hi);
  include(op->step);
  include(op->body);
}
void IRVisitor::visit(const If* op) {
  include(op->cond);
  include(op->then_body);
  include(op->else_body);
}
void IRVisitor::visit(const Let* op) { include(op->value); }
void IRVisitor::visit(const Decl* op) { include(op->init); }
void IRVisitor::visit(const Assign* op) { include(op->value); }
void IRVisitor::visit(const Store* op) {
  visit_axes(op->axes);
  include(op->value);
}
void IRVisitor::visit(const Yield* op) {
  include(op->value);
  include(op->index);
  for (const Expr& e : op->out_index) include(e);
}
void IRVisitor::visit(const Allocate*) {}
void IRVisitor::visit(const Barrier*) {}
void IRVisitor::visit(const Check* op) { include(op->cond); }
void IRVisitor::visit(const Atomic* op) {
  for (const Expr& e : op->index) include(e);
  include(op->value);
}

void IRVisitor::visit(const BlockReduce* op) { include(op->count); }

void IRVisitor::visit(const TileMma*) {}

void IRVisitor::visit(const AsyncCopy* op) {
  include(op->dst_index);
  for (const Expr& e : op->src_index) include(e);
  include(op->valid);
}

void IRVisitor::visit(const WarpgroupProduct* op) {
  include(op->first_tile);
  include(op->tile_stride);
  include(op->cluster_rank);
  include(op->epilogue);
}

void IRVisitor::visit(const WarpgroupAttention* op) {
  include(op->first_tile);
  include(op->tile_stride);
  include(op->epilogue);
}

void IRVisitor::visit(const MatMulBlock* op) {
  for (const Expr& e : {op->a_offset, op->a_row_stride, op->a_k_stride, op->b_offset, op->ldb, op->kc, op->ldc, op->m_valid, op->n_valid,
                        op->accumulate})
    include(e);
  if (op->b_rows_at.defined()) include(op->b_rows_at);
  for (const Expr& e : op->c_index) include(e);
}

}  // namespace zyntax::cir
