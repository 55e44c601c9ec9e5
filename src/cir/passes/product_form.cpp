#include "cir/passes/product_form.hpp"

#include <cmath>
#include <map>

#include "cir/affine.hpp"
#include "cir/reads.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

struct Range {
  int64_t lo, extent;
};

// Whether evaluating an expression is safe for every value of its loops,
// also where the guard fails: every element it reads lies inside its input
// (each index a loop variable whose whole range fits the axis, or a constant
// that does), and it divides no integers. The factor that is not guarded is
// evaluated everywhere by packing, where the original skipped it.
class SafeEverywhere : public IRVisitor {
 public:
  SafeEverywhere(const Kernel& k, std::map<std::string, Range> ranges) : kernel_(k), ranges_(std::move(ranges)) {}
  bool ok = true;

  void visit(const Access* op) override {
    const Param* param = kernel_.find_param(op->buffer);
    if (!param || param->role != ParamRole::Input || op->axes.size() != param->type.rank()) {
      ok = false;
      return;
    }
    for (size_t d = 0; d < op->axes.size(); ++d) {
      const AxisSel& a = op->axes[d];
      auto extent = constant_value(param->type.shape[d]);
      if (a.is_slice || !extent) {
        ok = false;
        return;
      }
      if (auto v = a.index.as<Var>(); v && ranges_.count(v->name)) {
        Range r = ranges_.at(v->name);
        ok = ok && r.lo >= 0 && r.lo + r.extent <= *extent;
      } else if (auto c = constant_value(a.index)) {
        ok = ok && *c >= 0 && *c < *extent;
      } else {
        ok = false;
      }
    }
  }
  void visit(const Binary* op) override {
    if ((op->op == BinaryOp::Div || op->op == BinaryOp::Mod) && !is_float(op->type.dtype)) ok = false;
    IRVisitor::visit(op);
  }
  void visit(const Dot*) override { ok = false; }
  void visit(const Reduce*) override { ok = false; }
  void visit(const MatMul*) override { ok = false; }
  void visit(const Transpose*) override { ok = false; }
  void visit(const Fill*) override { ok = false; }

 private:
  const Kernel& kernel_;
  std::map<std::string, Range> ranges_;
};

// Splits the parallel loops into batch, row and column groups with X reading
// the rows and not the columns, Y the reverse; attaches the guard.
bool assign_groups(const Kernel& kernel, ProductForm& m, const Expr& x, const Expr& y) {
  size_t n = m.loops.size();
  size_t cols_at = n;
  while (cols_at > 0 && !reads_any(x, {m.loops[cols_at - 1]->var})) --cols_at;
  size_t rows_at = cols_at;
  while (rows_at > 0 && !reads_any(y, {m.loops[rows_at - 1]->var})) --rows_at;
  if (cols_at == n || rows_at == cols_at) return false;
  m.rows = {};
  m.cols = {};
  for (size_t d = rows_at; d < n; ++d)
    (d < cols_at ? m.rows : m.cols).loops.push_back({m.loops[d]->var, 0, m.extent(*m.loops[d])});
  m.rows_at = rows_at;
  m.cols_at = cols_at;
  m.x = x;
  m.y = y;
  if (!m.guard.defined()) return true;
  bool on_rows = reads_any(m.guard, m.rows.names()), on_cols = reads_any(m.guard, m.cols.names());
  if (on_rows && on_cols) return false;
  m.guard_on_x = on_rows;
  std::map<std::string, Range> ranges;
  for (const For* f : m.loops) ranges[f->var] = {0, m.extent(*f)};
  for (const LoopGroup::Loop& l : m.depth.loops) ranges[l.var] = {l.lo, l.extent};
  SafeEverywhere safe(kernel, ranges);
  safe.include(m.unguarded());
  return safe.ok;
}

}  // namespace

int64_t LoopGroup::size() const {
  int64_t s = 1;
  for (const Loop& l : loops) s *= l.extent;
  return s;
}

std::set<std::string> LoopGroup::names() const {
  std::set<std::string> s;
  for (const Loop& l : loops) s.insert(l.var);
  return s;
}

int64_t LoopGroup::weight(size_t t) const {
  int64_t w = 1;
  for (size_t u = t + 1; u < loops.size(); ++u) w *= loops[u].extent;
  return w;
}

Substitution LoopGroup::at(const Expr& flat) const {
  Substitution s;
  for (size_t t = 0; t < loops.size(); ++t) {
    Expr q = weight(t) == 1 ? flat : flat / i64(weight(t));
    if (t > 0) q = q - (q / i64(loops[t].extent)) * i64(loops[t].extent);
    s[loops[t].var] = loops[t].lo == 0 ? q : q + i64(loops[t].lo);
  }
  return s;
}

int64_t ProductForm::extent(const For& f) const { return *constant_value(f.hi); }

int64_t ProductForm::batch() const {
  int64_t b = 1;
  for (size_t d = 0; d < rows_at; ++d) b *= extent(*loops[d]);
  return b;
}

Block ProductForm::tile_lets(const std::string& tile, int64_t row_tiles, int64_t col_tiles, const std::string& bt, const std::string& rt,
                             const std::string& ct) const {
  Expr t = Var::make(tile, Type::scalar(DType::I64));
  auto var = [](const std::string& name) { return Var::make(name, Type::scalar(DType::I64)); };
  Block out = {make_let(bt, t / i64(row_tiles * col_tiles)), make_let(rt, t / i64(col_tiles) - var(bt) * i64(row_tiles)),
               make_let(ct, t - t / i64(col_tiles) * i64(col_tiles))};
  // The batch loops' variables, from the batch element (the last fastest).
  int64_t stride = batch();
  for (size_t d = 0; d < rows_at; ++d) {
    int64_t ext = extent(*loops[d]);
    stride /= ext;
    Expr q = var(bt) / i64(stride);
    out.push_back(make_let(loops[d]->var, q - q / i64(ext) * i64(ext)));
  }
  return out;
}

std::optional<ProductForm> match_product(const Kernel& kernel) {
  if (!kernel.dims.empty()) return std::nullopt;
  ProductForm m;
  const Block* body = &kernel.body;
  while (body->size() == 1) {
    auto f = (*body)[0].as<For>();
    if (!f || f->loop_kind != LoopKind::Parallel || constant_value(f->lo) != 0 || constant_value(f->step) != 1 || !constant_value(f->hi) ||
        *constant_value(f->hi) <= 0)
      return std::nullopt;
    m.loops.push_back(f);
    body = &f->body;
  }
  if (m.loops.size() < 2 || body->size() != 3) return std::nullopt;
  m.sum_decl = (*body)[0];
  m.reduction = (*body)[1];
  m.store_stmt = (*body)[2];
  m.sum = m.sum_decl.as<Decl>();
  m.store = m.store_stmt.as<Store>();
  const For* loop = m.reduction.as<For>();
  if (!m.sum || !loop || !m.store) return std::nullopt;
  const Param& out = kernel.output();
  std::set<std::string> forbidden = {m.sum->name, out.name};

  // var s: f32 = init
  if (!m.sum->type.is_scalar() || m.sum->type.dtype != DType::F32 || !m.sum->init.defined()) return std::nullopt;
  auto zero = m.sum->init.as<FloatImm>();
  if (!zero || zero->value != 0.0 || std::signbit(zero->value)) {
    m.init = m.sum->init;
    if (!m.init->type.is_scalar() || m.init->type.dtype != DType::F32 || reads_any(m.init, forbidden)) return std::nullopt;
  }

  // for k.. (nested): lets, then [if guard:] s = s + X * Y
  while (true) {
    auto lo = constant_value(loop->lo), hi = constant_value(loop->hi);
    if (!lo || !hi || *hi <= *lo || constant_value(loop->step) != 1) return std::nullopt;
    m.depth.loops.push_back({loop->var, *lo, *hi - *lo});
    if (loop->body.size() != 1 || !loop->body[0].as<For>()) break;
    loop = loop->body[0].as<For>();
  }
  const Block& inner = loop->body;
  if (inner.empty()) return std::nullopt;
  Substitution lets;
  for (size_t s = 0; s + 1 < inner.size(); ++s) {
    auto let = inner[s].as<Let>();
    if (!let) return std::nullopt;
    lets[let->name] = substitute(let->value, lets);
  }
  const Assign* assign = inner.back().as<Assign>();
  if (auto guarded = inner.back().as<If>()) {
    if (guarded->then_body.size() != 1 || !guarded->else_body.empty()) return std::nullopt;
    assign = guarded->then_body[0].as<Assign>();
    m.guard = substitute(guarded->cond, lets);
    if (reads_any(m.guard, forbidden)) return std::nullopt;
  }
  if (!assign || assign->name != m.sum->name) return std::nullopt;
  auto add = assign->value.as<Binary>();
  if (!add || add->op != BinaryOp::Add) return std::nullopt;
  auto self = add->a.as<Var>();
  auto mul = add->b.as<Binary>();
  if (!self || self->name != m.sum->name || !mul || mul->op != BinaryOp::Mul) return std::nullopt;
  Expr a = substitute(mul->a, lets), b = substitute(mul->b, lets);
  if (reads_any(a, forbidden) || reads_any(b, forbidden)) return std::nullopt;

  // out[b.., i.., j..] = f(s), the output laid out as the loops.
  if (m.store->buffer != out.name || !is_float(out.type.dtype) || m.store->axes.size() != m.loops.size() ||
      out.type.rank() != m.loops.size())
    return std::nullopt;
  for (size_t d = 0; d < m.loops.size(); ++d) {
    const AxisSel& s = m.store->axes[d];
    auto v = s.is_slice ? nullptr : s.index.as<Var>();
    if (!v || v->name != m.loops[d]->var || constant_value(out.type.shape[d]) != m.extent(*m.loops[d])) return std::nullopt;
  }
  if (reads_any(m.store->value, {out.name})) return std::nullopt;

  if (assign_groups(kernel, m, a, b) || assign_groups(kernel, m, b, a)) return m;
  return std::nullopt;
}

}  // namespace zyntax::cir
