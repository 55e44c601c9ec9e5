#include "cir/reads.hpp"

#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

class Reads : public IRVisitor {
 public:
  std::set<std::string> names;
  using IRVisitor::visit;

 protected:
  void visit(const Var* op) override { names.insert(op->name); }
  void visit(const Access* op) override {
    names.insert(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const BlockReduce* op) override {
    names.insert(op->array);
    IRVisitor::visit(op);
  }
  void visit(const TileMma* op) override {
    names.insert(op->acc);
    if (op->step == TileMma::Step::Accumulate) {
      names.insert(op->a);
      names.insert(op->b);
    }
  }
};

class Writes : public IRVisitor {
 public:
  std::set<std::string> names;
  using IRVisitor::visit;

 protected:
  void visit(const Let* op) override {
    names.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Decl* op) override {
    names.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Assign* op) override {
    names.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    names.insert(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const For* op) override {
    names.insert(op->var);
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override { names.insert(op->name); }
  void visit(const Atomic* op) override { names.insert(op->buffer); }
  void visit(const MatMulBlock* op) override { names.insert(op->c); }
  void visit(const BlockReduce* op) override { names.insert(op->name); }
  void visit(const TileMma* op) override { names.insert(op->step == TileMma::Step::Store ? op->d : op->acc); }
};

}  // namespace

std::set<std::string> reads(const Stmt& s) {
  Reads r;
  r.include(s);
  return r.names;
}

std::set<std::string> writes(const Stmt& s) {
  Writes w;
  w.include(s);
  return w.names;
}

std::set<std::string> reads(const Expr& e) {
  Reads r;
  r.include(e);
  return r.names;
}

bool reads_any(const Expr& e, const std::set<std::string>& names) {
  for (const std::string& n : reads(e))
    if (names.count(n)) return true;
  return false;
}

}  // namespace zyntax::cir
