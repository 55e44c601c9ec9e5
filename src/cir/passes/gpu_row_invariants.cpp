#include "cir/passes/gpu_row_invariants.hpp"

#include <vector>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

bool cheap(MathFn fn) {
  switch (fn) {
    case MathFn::Abs: case MathFn::Min: case MathFn::Max: case MathFn::Fma: case MathFn::Floor: case MathFn::Ceil:
    case MathFn::Round: case MathFn::Trunc: case MathFn::Sign: case MathFn::Relu: case MathFn::Clamp:
      return true;
    default:
      return false;
  }
}

bool costly(const Expr& e) {
  struct Find : IRVisitor {
    using IRVisitor::visit;
    bool found = false;
    void visit(const Math* op) override {
      found = found || !cheap(op->fn);
      IRVisitor::visit(op);
    }
  } f;
  f.include(e);
  return f.found;
}

// Replaces each largest qualifying subexpression by its column's element.
class Hoist : public IRMutator {
 public:
  Hoist(std::string row, int64_t most_rows, std::set<std::string> varying, FreshNames& fresh)
      : row_(std::move(row)), most_rows_(most_rows), varying_(std::move(varying)), fresh_(fresh) {}

  // A column's shared array: an element per row.
  Type column_type(DType dt) const { return Type::tensor(dt, {i64(most_rows_)}); }

  struct Column {
    Expr value;
    std::string name;
  };
  std::vector<Column> columns;

  using IRMutator::mutate;
  Expr mutate(const Expr& e) override {
    if (!qualifies(e)) return IRMutator::mutate(e);
    for (const Column& c : columns)
      if (equal(c.value, e)) return element(c.name, e);
    columns.push_back({e, fresh_(row_ + "%col")});
    return element(columns.back().name, e);
  }

 private:
  bool qualifies(const Expr& e) const {
    if (!e.defined() || !e->type.is_scalar() || !is_float(e->type.dtype)) return false;
    std::set<std::string> names = reads(e);
    if (!names.count(row_)) return false;
    for (const std::string& n : names)
      if (varying_.count(n)) return false;
    return costly(e);
  }

  Expr element(const std::string& column, const Expr& e) const {
    return make_access(column, column_type(e->type.dtype), {AxisSel::at(index_var(row_))}, e->span);
  }

  std::string row_;
  int64_t most_rows_;
  std::set<std::string> varying_;
  FreshNames& fresh_;
};

}  // namespace

std::optional<RowInvariants> hoist_row_invariants(const For& nest, const std::set<std::string>& changing, int64_t most_rows, FreshNames& fresh) {
  const For* cols = nest.body.size() == 1 ? nest.body[0].as<For>() : nullptr;
  auto zero = nest.lo.as<IntImm>();
  auto step = nest.step.as<IntImm>();
  if (!cols || !zero || zero->value != 0 || !step || step->value != 1 || most_rows <= 0) return std::nullopt;
  if (nest.loop_kind != LoopKind::Serial || cols->loop_kind != LoopKind::Serial) return std::nullopt;
  if (reads_any(cols->lo, {nest.var}) || reads_any(cols->hi, {nest.var}) || reads_any(cols->step, {nest.var})) return std::nullopt;
  // What changes along a row: the column, what its body declares, what the nest changes.
  std::set<std::string> varying = declared_in(*cols);
  varying.insert(cols->var);
  varying.insert(changing.begin(), changing.end());
  Hoist hoist(nest.var, most_rows, varying, fresh);
  // Only the column body's own statements: what a condition or an inner
  // loop guards is not evaluated for every row.
  Block body;
  for (const Stmt& s : cols->body) {
    if (auto st = s.as<Store>()) body.push_back(make_store(st->buffer, st->axes, hoist.mutate(st->value), st->span));
    else if (auto d = s.as<Decl>()) body.push_back(make_decl(d->name, d->type, hoist.mutate(d->init), d->span));
    else if (auto l = s.as<Let>()) body.push_back(make_let(l->name, hoist.mutate(l->value), l->span));
    else if (auto a = s.as<Assign>()) body.push_back(make_assign(a->name, hoist.mutate(a->value), a->span));
    else body.push_back(s);
  }
  if (hoist.columns.empty()) return std::nullopt;
  RowInvariants out;
  for (const auto& c : hoist.columns) {
    out.columns.push_back(make_allocate(c.name, hoist.column_type(c.value->type.dtype), MemorySpace::Shared, nest.span));
    std::string row = fresh(nest.var);
    Expr value = substitute(c.value, {{nest.var, index_var(row)}});
    out.fills.push_back(make_for(row, nest.lo, nest.hi, nest.step, {make_store(c.name, {AxisSel::at(index_var(row))}, value, nest.span)},
                                 LoopKind::Serial, 0, nest.span));
  }
  Stmt inner = make_for(cols->var, cols->lo, cols->hi, cols->step, std::move(body), LoopKind::Serial, 0, cols->span);
  out.nest = make_for(nest.var, nest.lo, nest.hi, nest.step, {inner}, LoopKind::Serial, 0, nest.span);
  return out;
}

}  // namespace zyntax::cir
