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
};

}  // namespace

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
