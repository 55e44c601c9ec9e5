#include "cir/passes/serialize_atomic_loops.hpp"

#include <map>

#include "cir/mutator.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

bool holds_atomics(const Block& b) {
  struct Find : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const Atomic*) override { found = true; }
  } f;
  f.include(b);
  return f.found;
}

// The update an atomic makes, as the statement a single thread would write.
Stmt plain_update(const Atomic& a, const Type& buffer_type) {
  std::vector<AxisSel> axes;
  for (const Expr& e : a.index) axes.push_back(AxisSel::at(e));
  Expr current = make_access(a.buffer, buffer_type, axes, a.span);
  Expr next;
  switch (a.op) {
    case AtomicOp::Add: next = Binary::make(BinaryOp::Add, current, a.value, a.span); break;
    case AtomicOp::Min: next = Binary::make(BinaryOp::Min, current, a.value, a.span); break;
    case AtomicOp::Max: next = Binary::make(BinaryOp::Max, current, a.value, a.span); break;
    case AtomicOp::And: next = Cast::make(buffer_type.dtype, Binary::make(BinaryOp::And, current, a.value, a.span), a.span); break;
    case AtomicOp::Or: next = Cast::make(buffer_type.dtype, Binary::make(BinaryOp::Or, current, a.value, a.span), a.span); break;
    case AtomicOp::Exchange: next = a.value; break;
  }
  return make_store(a.buffer, std::move(axes), std::move(next), a.span);
}

class Serialize : public IRMutator {
 public:
  explicit Serialize(const Kernel& k) {
    for (const Param& p : k.params) types_[p.name] = p.type;
  }
  using IRMutator::visit;

 protected:
  Stmt visit(const For* op) override {
    if (op->loop_kind != LoopKind::Parallel || !holds_atomics(op->body)) return IRMutator::visit(op);
    return make_for(op->var, op->lo, op->hi, op->step, mutate(op->body), LoopKind::Serial, 0, op->span);
  }
  Stmt visit(const Atomic* op) override {
    auto it = types_.find(op->buffer);
    return it == types_.end() ? IRMutator::visit(op) : plain_update(*op, it->second);
  }

 private:
  std::map<std::string, Type> types_;
};

}  // namespace

Kernel serialize_atomic_loops(const Kernel& k) { return Serialize(k).mutate(k); }

}  // namespace zyntax::cir
