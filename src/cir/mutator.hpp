// Rewriting traversal of CIR trees.
//
// Subclasses override the visit() of the nodes they rewrite. The defaults
// mutate the children and rebuild a node only when some child changed, so
// untouched subtrees keep their handles (same_as) and are shared with the
// input tree.
//
// Types: a rebuilt node whose type follows from its children (Binary, Dot,
// Reduce, ...) gets its type recomputed by its constructor. Var, Access and
// Fill carry extents of their own; those are kept as they are unless the
// mutator was built with `rewrite_node_types`, in which case their shape
// expressions are mutated too (passes that rename or substitute need this).
// Decl and Allocate types are always mutated.
#pragma once

#include <vector>

#include "cir/ir.hpp"

namespace zyntax::cir {

class IRMutator {
 public:
  explicit IRMutator(bool rewrite_node_types = false) : rewrite_node_types_(rewrite_node_types) {}
  virtual ~IRMutator() = default;

  // Undefined handles come back undefined.
  virtual Expr mutate(const Expr& e);
  // May return an undefined Stmt to delete the statement.
  virtual Stmt mutate(const Stmt& s);
  // Mutates each statement and drops the deleted ones.
  virtual Block mutate(const Block& b);
  // Mutates the param types, the body and the shared-memory hint.
  Kernel mutate(const Kernel& k);
  // Mutates the extents.
  Type mutate_type(const Type& t);

  virtual Expr visit(const IntImm* op);
  virtual Expr visit(const FloatImm* op);
  virtual Expr visit(const BoolImm* op);
  virtual Expr visit(const Var* op);
  virtual Expr visit(const Cast* op);
  virtual Expr visit(const Unary* op);
  virtual Expr visit(const Binary* op);
  virtual Expr visit(const Select* op);
  virtual Expr visit(const Math* op);
  virtual Expr visit(const Access* op);
  virtual Expr visit(const Dot* op);
  virtual Expr visit(const Reduce* op);
  virtual Expr visit(const MatMul* op);
  virtual Expr visit(const Transpose* op);
  virtual Expr visit(const Fill* op);
  virtual Expr visit(const GpuIndex* op);

  virtual Stmt visit(const For* op);
  virtual Stmt visit(const If* op);
  virtual Stmt visit(const Let* op);
  virtual Stmt visit(const Decl* op);
  virtual Stmt visit(const Assign* op);
  virtual Stmt visit(const Store* op);
  virtual Stmt visit(const Yield* op);
  virtual Stmt visit(const Allocate* op);
  virtual Stmt visit(const Barrier* op);
  virtual Stmt visit(const Check* op);
  virtual Stmt visit(const Atomic* op);
  virtual Stmt visit(const MatMulBlock* op);
  virtual Stmt visit(const BlockReduce* op);
  virtual Stmt visit(const TileMma* op);
  virtual Stmt visit(const AsyncCopy* op);
  virtual Stmt visit(const WarpgroupProduct* op);
  virtual Stmt visit(const WarpgroupAttention* op);

 protected:
  std::vector<AxisSel> mutate_axes(const std::vector<AxisSel>& axes);
  std::vector<Expr> mutate_exprs(const std::vector<Expr>& es);
  // The type a Var, Access or Fill is rebuilt with (see the header comment).
  Type node_type(const Type& t);

  // The handle of `op` while it is being visited through mutate(); undefined
  // when `op` was reached some other way. Lets the defaults return the
  // original handle from a raw node pointer.
  Expr handle_of(const ExprNode* op) const;
  Stmt handle_of(const StmtNode* op) const;

 private:
  bool rewrite_node_types_;
  std::vector<Expr> expr_stack_;
  std::vector<Stmt> stmt_stack_;
};

// Whether two lists hold the same handles.
bool same_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b);
bool same_axes(const std::vector<AxisSel>& a, const std::vector<AxisSel>& b);
bool same_block(const Block& a, const Block& b);
bool same_type(const Type& a, const Type& b);

}  // namespace zyntax::cir
