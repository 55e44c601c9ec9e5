#include "cir/passes/gpu_register_blocks.hpp"

#include <string>
#include <vector>

#include "cir/equal.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

bool unit_step(const For& f) {
  auto s = f.step.as<IntImm>();
  return s && s->value == 1 && f.loop_kind == LoopKind::Serial;
}

}  // namespace

std::optional<DotProductNest> dot_product_nest(const For& rows) {
  const For* cols = rows.body.size() == 1 ? rows.body[0].as<For>() : nullptr;
  if (!cols || !unit_step(rows) || !unit_step(*cols) || cols->body.size() != 3) return std::nullopt;
  auto acc = cols->body[0].as<Decl>();
  auto terms = cols->body[1].as<For>();
  auto store = cols->body[2].as<Store>();
  if (!acc || !acc->type.is_scalar() || !terms || terms->loop_kind != LoopKind::Serial || !store || terms->body.size() != 1) return std::nullopt;
  auto fold = terms->body[0].as<Assign>();
  if (!fold || fold->name != acc->name) return std::nullopt;
  std::set<std::string> loop_vars = {rows.var, cols->var, acc->name};
  if (reads_any(terms->lo, loop_vars) || reads_any(terms->hi, loop_vars) || reads_any(terms->step, loop_vars)) return std::nullopt;
  if (reads_any(cols->lo, {rows.var}) || reads_any(cols->hi, {rows.var})) return std::nullopt;
  for (const AxisSel& a : store->axes)
    if (a.is_slice) return std::nullopt;
  // A thread reads its clamped rows and columns, which other threads store:
  // the dot products must not read what the nest stores, and its epilogue
  // (run for the thread's own outputs alone) only the element it stores
  // (flash attention's `o = a * o + P V`).
  if (reads(Stmt(cols->body[1])).count(store->buffer) || reads(acc->init).count(store->buffer)) return std::nullopt;
  struct OwnElementOnly : IRVisitor {
    using IRVisitor::visit;
    const Store* store;
    bool ok = true;
    void visit(const Access* op) override {
      if (op->buffer == store->buffer) {
        bool same = op->axes.size() == store->axes.size();
        for (size_t k = 0; same && k < op->axes.size(); ++k)
          same = !op->axes[k].is_slice && equal(op->axes[k].index, store->axes[k].index);
        ok = ok && same;
      }
      IRVisitor::visit(op);
    }
  } own;
  own.store = store;
  own.include(store->value);
  if (!own.ok) return std::nullopt;
  return DotProductNest{&rows, cols, acc, terms, fold, store};
}

Stmt register_blocked(const DotProductNest& n, int64_t threads, FreshNames& fresh, int64_t block_rows, int64_t block_cols) {
  const For& rows = *n.rows;
  const For& cols = *n.cols;
  const int64_t row_threads = threads / kRegisterColumns;
  const std::string i = rows.var, j = cols.var;

  Block tile;
  // Row a of the thread's block, and column b, clamped into the tile.
  std::vector<std::string> row_of(block_rows, i), col_of(block_cols, j);
  for (int64_t a = 1; a < block_rows; ++a) {
    row_of[a] = fresh(i + "%" + std::to_string(a));
    tile.push_back(make_let(row_of[a], simplify(min(index_var(i) + i64(a * row_threads), rows.hi - i64(1))), rows.span));
  }
  for (int64_t b = 1; b < block_cols; ++b) {
    col_of[b] = fresh(j + "%" + std::to_string(b));
    tile.push_back(make_let(col_of[b], simplify(min(index_var(j) + i64(b * kRegisterColumns), cols.hi - i64(1))), cols.span));
  }

  struct Output {
    int64_t a, b;
    std::string acc;
    Substitution at;  // i, j and acc as this output's
  };
  std::vector<Output> outputs;
  for (int64_t a = 0; a < block_rows; ++a)
    for (int64_t b = 0; b < block_cols; ++b) {
      std::string acc = fresh(n.acc->name + "%" + std::to_string(a) + "%" + std::to_string(b));
      outputs.push_back({a, b, acc, {{i, index_var(row_of[a])}, {j, index_var(col_of[b])}, {n.acc->name, Var::make(acc, n.acc->type)}}});
    }

  for (const Output& o : outputs) tile.push_back(make_decl(o.acc, n.acc->type, substitute(n.acc->init, o.at), n.acc->span));
  Block folds;
  for (const Output& o : outputs) folds.push_back(make_assign(o.acc, substitute(n.fold->value, o.at), n.fold->span));
  const For& terms = *n.terms;
  tile.push_back(make_for(terms.var, terms.lo, terms.hi, terms.step, std::move(folds), LoopKind::Serial, 0, terms.span));

  for (const Output& o : outputs) {
    std::vector<AxisSel> axes = n.store->axes;
    for (AxisSel& ax : axes) ax.index = substitute(ax.index, o.at);
    Stmt store = make_store(n.store->buffer, std::move(axes), substitute(n.store->value, o.at), n.store->span);
    // Row and column 0 are the loops' own, inside the tile; the others are
    // clamped copies, stored only where they are not past the end.
    Expr inside;
    if (o.a > 0) inside = less_than(index_var(i) + i64(o.a * row_threads), rows.hi);
    if (o.b > 0) {
      Expr c = less_than(index_var(j) + i64(o.b * kRegisterColumns), cols.hi);
      inside = inside.defined() ? both(inside, c) : c;
    }
    tile.push_back(inside.defined() ? make_if(simplify(inside), {store}, {}, n.store->span) : store);
  }

  std::string t = fresh(i + "%t");
  std::string row = fresh(t + "%row"), col = fresh(t + "%col");
  Stmt col_loop = make_for(j, simplify(cols.lo + index_var(col)), cols.hi, i64(block_cols * kRegisterColumns), std::move(tile), LoopKind::Serial,
                           0, cols.span);
  Stmt row_loop = make_for(i, simplify(rows.lo + index_var(row)), rows.hi, i64(block_rows * row_threads), {col_loop}, LoopKind::Serial, 0, rows.span);
  Block body = {make_let(row, index_var(t) / i64(kRegisterColumns), rows.span), make_let(col, mod(index_var(t), kRegisterColumns), rows.span),
                row_loop};
  return make_for(t, i64(0), i64(threads), i64(1), std::move(body), LoopKind::GpuThread, 0, rows.span);
}

}  // namespace zyntax::cir
