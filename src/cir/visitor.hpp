// Read-only traversal of CIR trees.
//
// Subclasses override the visit() of the nodes they care about and call the
// base version to keep descending. Shape expressions inside types are not
// visited by default: most analyses care about the computation, not about
// the extents it is typed with; visit_type() is there for those that do.
#pragma once

#include <vector>

#include "cir/ir.hpp"

namespace zyntax::cir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;

  // Dispatch on the node kind; undefined handles are skipped.
  void include(const Expr& e);
  void include(const Stmt& s);
  void include(const Block& b);

  virtual void visit(const IntImm* op);
  virtual void visit(const FloatImm* op);
  virtual void visit(const BoolImm* op);
  virtual void visit(const Var* op);
  virtual void visit(const Cast* op);
  virtual void visit(const Unary* op);
  virtual void visit(const Binary* op);
  virtual void visit(const Select* op);
  virtual void visit(const Math* op);
  virtual void visit(const Access* op);
  virtual void visit(const Dot* op);
  virtual void visit(const Reduce* op);
  virtual void visit(const MatMul* op);
  virtual void visit(const Transpose* op);
  virtual void visit(const Fill* op);
  virtual void visit(const GpuIndex* op);

  virtual void visit(const For* op);
  virtual void visit(const If* op);
  virtual void visit(const Let* op);
  virtual void visit(const Decl* op);
  virtual void visit(const Assign* op);
  virtual void visit(const Store* op);
  virtual void visit(const Yield* op);
  virtual void visit(const Allocate* op);
  virtual void visit(const Barrier* op);
  virtual void visit(const Check* op);
  virtual void visit(const Atomic* op);
  virtual void visit(const MatMulBlock* op);
  virtual void visit(const BlockReduce* op);
  virtual void visit(const TileMma* op);
  virtual void visit(const AsyncCopy* op);
  virtual void visit(const WarpgroupProduct* op);
  virtual void visit(const WarpgroupAttention* op);

 protected:
  // Visits the extents of a type.
  void visit_type(const Type& t);
  // Visits the index, or the bounds of a slice, of every axis.
  void visit_axes(const std::vector<AxisSel>& axes);
};

}  // namespace zyntax::cir
