#include "cir/passes/element_maps.hpp"

#include <utility>

#include "cir/equal.hpp"
#include "cir/equal_everywhere.hpp"
#include "cir/reads.hpp"

namespace zyntax::cir {

bool is_var(const Expr& e, const std::string& name) {
  auto v = e.as<Var>();
  return v && v->name == name;
}

bool is_zero(const Expr& e) {
  auto c = e.as<IntImm>();
  return c && c->value == 0;
}

ExtentAwareMutator::ExtentAwareMutator(const Kernel& k) : kernel_lets_(resolved_lets(k)), changing_(mutable_names(k)) {}

bool ExtentAwareMutator::unchanging(const Expr& e) const { return !reads_any(substitute(e, kernel_lets_), changing_); }

Stmt ExtentAwareMutator::visit(const For* op) {
  loops_.push_back(op);
  Stmt s = IRMutator::visit(op);
  loops_.pop_back();
  return s;
}

SameExtent ExtentAwareMutator::same_extent(const Block& b, size_t end) const {
  Substitution lets;
  for (size_t i = 0; i < end && i < b.size(); ++i)
    if (auto l = b[i].as<Let>()) lets[l->name] = substitute(l->value, lets);
  return [this, lets](const Expr& x, const Expr& y) {
    Expr u = substitute(x, lets), v = substitute(y, lets);
    return equal(u, v) || equal_everywhere(u, v, loops_, kernel_lets_);
  };
}

std::optional<ElementMap> element_map(const Stmt& s) {
  auto rows = s.as<For>();
  const For* cols = rows && rows->body.size() == 1 ? rows->body[0].as<For>() : nullptr;
  const Store* store = cols && cols->body.size() == 1 ? cols->body[0].as<Store>() : nullptr;
  if (!store) return std::nullopt;
  for (const For* f : {rows, cols}) {
    auto step = f->step.as<IntImm>();
    if (f->loop_kind != LoopKind::Serial || !is_zero(f->lo) || !step || step->value != 1) return std::nullopt;
  }
  if (store->axes.size() != 2 || store->axes[0].is_slice || store->axes[1].is_slice || !is_var(store->axes[0].index, rows->var) ||
      !is_var(store->axes[1].index, cols->var))
    return std::nullopt;
  return ElementMap{rows, cols, store};
}

ElementReads::ElementReads(std::string buffer, std::string row, std::string col, Expr n0, Expr n1, Expr element, SameExtent same)
    : buffer_(std::move(buffer)),
      row_(std::move(row)),
      col_(std::move(col)),
      n0_(std::move(n0)),
      n1_(std::move(n1)),
      element_(std::move(element)),
      same_(std::move(same)) {}

Expr ElementReads::visit(const Access* op) {
  if (op->buffer != buffer_) return IRMutator::visit(op);
  if (op->axes.size() != 2 || op->axes[0].is_slice || op->axes[1].is_slice || !at(op->axes[0].index, row_, n0_) ||
      !at(op->axes[1].index, col_, n1_))
    only_own_element = false;
  return element_.defined() ? element_ : IRMutator::visit(op);
}

bool ElementReads::at(const Expr& index, const std::string& v, const Expr& n) const {
  if (is_var(index, v)) return true;
  auto s = index.as<Select>();
  if (!s || !is_zero(s->t)) return false;
  auto c = s->cond.as<Binary>();
  auto one = c ? c->b.as<IntImm>() : nullptr;
  return c && c->op == BinaryOp::Eq && one && one->value == 1 && same_(c->a, n) && at(s->f, v, n);
}

bool reads_only_element(const Expr& e, const std::string& buffer, const ElementMap& at, const SameExtent& same) {
  ElementReads r(buffer, at.rows->var, at.cols->var, at.rows->hi, at.cols->hi, Expr(), same);
  r.mutate(e);
  return r.only_own_element;
}

}  // namespace zyntax::cir
