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
  void visit(const AsyncCopy* op) override {
    if (op->step == AsyncCopy::Step::Start) names.insert(op->src);
    IRVisitor::visit(op);
  }
  // The factors, the stages (the copies land there), the tile numbers, and
  // what the epilogue reads other than the element names it is given.
  void visit(const WarpgroupProduct* op) override {
    names.insert({op->a.buffer, op->b.buffer, op->stage});
    include(op->first_tile);
    include(op->tile_stride);
    include(op->cluster_rank);
    Reads epilogue;
    epilogue.include(op->epilogue);
    for (const std::string& n : {op->batch_var, op->row, op->col, op->value}) epilogue.names.erase(n);
    names.insert(epilogue.names.begin(), epilogue.names.end());
  }
  // Likewise, with queries, keys and values for factors.
  void visit(const WarpgroupAttention* op) override {
    names.insert({op->q.buffer, op->k.buffer, op->v.buffer, op->stage});
    include(op->first_tile);
    include(op->tile_stride);
    Reads epilogue;
    epilogue.include(op->epilogue);
    for (const std::string& n : {op->batch_var, op->row, op->col, op->value}) epilogue.names.erase(n);
    names.insert(epilogue.names.begin(), epilogue.names.end());
  }
  void visit(const MatMulBlock* op) override {  // C too: blocks after the first add to it
    names.insert({op->a, op->b, op->c});
    if (!op->b_rows.empty()) names.insert(op->b_rows);
    IRVisitor::visit(op);
  }
  void visit(const Atomic* op) override {  // read, modified, written
    names.insert(op->buffer);
    IRVisitor::visit(op);
  }
};

// What a statement writes; with `bindings_only`, just the names it binds
// (loop variables, lets, vars, allocations), not what it assigns or stores.
class Writes : public IRVisitor {
 public:
  explicit Writes(bool bindings_only) : bindings_only_(bindings_only) {}
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
  void visit(const For* op) override {
    names.insert(op->var);
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override { names.insert(op->name); }
  void visit(const Assign* op) override {
    if (!bindings_only_) names.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    if (!bindings_only_) names.insert(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Atomic* op) override {
    if (!bindings_only_) names.insert(op->buffer);
  }
  void visit(const MatMulBlock* op) override {
    if (!bindings_only_) names.insert(op->c);
  }
  void visit(const BlockReduce* op) override {
    if (!bindings_only_) names.insert(op->name);
  }
  void visit(const TileMma* op) override {
    if (!bindings_only_) names.insert(op->step == TileMma::Step::Store ? op->d : op->acc);
  }
  void visit(const AsyncCopy* op) override {
    if (!bindings_only_ && op->step == AsyncCopy::Step::Start) names.insert(op->dst);
  }
  // Binds the element names for its epilogue; fills the stages.
  void visit(const WarpgroupProduct* op) override {
    names.insert({op->batch_var, op->row, op->col, op->value});
    if (!bindings_only_) names.insert(op->stage);
    include(op->epilogue);
  }
  void visit(const WarpgroupAttention* op) override {
    names.insert({op->batch_var, op->row, op->col, op->value});
    if (!bindings_only_) names.insert(op->stage);
    include(op->epilogue);
  }

 private:
  bool bindings_only_;
};

}  // namespace

std::set<std::string> reads(const Stmt& s) {
  Reads r;
  r.include(s);
  return r.names;
}

std::set<std::string> writes(const Stmt& s) {
  Writes w(/*bindings_only=*/false);
  w.include(s);
  return w.names;
}

std::set<std::string> binds(const Stmt& s) {
  Writes w(/*bindings_only=*/true);
  w.include(s);
  return w.names;
}

std::set<std::string> reads(const Expr& e) {
  Reads r;
  r.include(e);
  return r.names;
}

std::set<std::string> mutable_names(const Kernel& k) {
  struct Mutable : IRVisitor {
    using IRVisitor::visit;
    std::set<std::string> names;
    void visit(const Decl* op) override {
      names.insert(op->name);
      IRVisitor::visit(op);
    }
    void visit(const Allocate* op) override { names.insert(op->name); }
  } m;
  m.include(k.body);
  for (const Param& p : k.params)
    if (p.role == ParamRole::Output) m.names.insert(p.name);
  return m.names;
}

bool reads_any(const Expr& e, const std::set<std::string>& names) {
  for (const std::string& n : reads(e))
    if (names.count(n)) return true;
  return false;
}

}  // namespace zyntax::cir
