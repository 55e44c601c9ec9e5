#include "cir/flop_count.hpp"

#include "cir/affine.hpp"
#include "cir/visitor.hpp"
#include "support/trip_count.hpp"

namespace zyntax::cir {

namespace {

class FlopCounter : public IRVisitor {
 public:
  explicit FlopCounter(bool every_operation) : every_(every_operation) {}
  double flops = 0;
  bool known = true;

  // A tile's elements; a tile sized by a loop variable (a ragged last
  // block) makes the count unknown rather than wrong.
  double elements(const Type& t) {
    double n = 1;
    for (const Expr& d : t.shape) {
      std::optional<int64_t> v = constant_value(d);
      if (!v) {
        known = false;
        return 0;
      }
      n *= static_cast<double>(*v);
    }
    return n;
  }

  void visit(const For* op) override {
    std::optional<int64_t> lo = constant_value(op->lo), hi = constant_value(op->hi), step = constant_value(op->step);
    if (!lo || !hi || !step || *step <= 0) {
      known = false;
      return;
    }
    double outer = scale_;
    scale_ *= static_cast<double>(trip_count(*lo, *hi, *step));
    include(op->body);
    scale_ = outer;
  }
  void visit(const Binary* op) override {
    if (every_ || (is_float(op->type.dtype) && op->op <= BinaryOp::Max && op->op != BinaryOp::Mod))
      flops += scale_ * std::max(1.0, elements(op->type));
    IRVisitor::visit(op);
  }
  void visit(const Math* op) override {
    if (every_ || is_float(op->type.dtype)) flops += scale_ * std::max(1.0, elements(op->type));
    IRVisitor::visit(op);
  }
  void visit(const Dot* op) override {
    flops += scale_ * 2 * elements(op->a->type);
    IRVisitor::visit(op);
  }
  void visit(const MatMul* op) override {
    // [m, k] @ [k, n]: 2mnk = 2 * (m * k) * n.
    const Type& b = op->b->type;
    std::optional<int64_t> n = b.rank() ? constant_value(b.shape.back()) : std::optional<int64_t>(1);
    if (!n) known = false;
    flops += scale_ * 2 * elements(op->a->type) * static_cast<double>(n.value_or(0));
    IRVisitor::visit(op);
  }
  void visit(const Reduce* op) override {
    if (every_ || is_float(op->type.dtype)) flops += scale_ * elements(op->value->type);
    IRVisitor::visit(op);
  }
  // Counted as operations only.
  void visit(const Access* op) override {
    if (every_) flops += scale_ * std::max(1.0, elements(op->type));
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    if (every_) flops += scale_;
    IRVisitor::visit(op);
  }
  void visit(const Assign* op) override {
    if (every_) flops += scale_;
    IRVisitor::visit(op);
  }
  void visit(const Yield* op) override {
    if (every_) flops += scale_;
    IRVisitor::visit(op);
  }

 private:
  bool every_;
  double scale_ = 1;
};

}  // namespace

std::optional<double> count_flops(const Kernel& k) {
  FlopCounter c(/*every_operation=*/false);
  c.include(k.body);
  if (!c.known) return std::nullopt;
  return c.flops;
}

std::optional<double> count_operations(const Kernel& k) {
  FlopCounter c(/*every_operation=*/true);
  c.include(k.body);
  if (!c.known) return std::nullopt;
  return c.flops;
}

}  // namespace zyntax::cir
