#include "cir/passes/fuse_product_epilogues.hpp"

#include <map>
#include <optional>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/gpu_register_blocks.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

bool is_var(const Expr& e, const std::string& name) {
  auto v = e.as<Var>();
  return v && v->name == name;
}

bool is_zero(const Expr& e) {
  auto c = e.as<IntImm>();
  return c && c->value == 0;
}

// The two loops of an element-wise map `for i in 0..n0, j in 0..n1:
// S[i, j] = value` over a 2-D array.
struct Map {
  const For* rows;
  const For* cols;
  const Store* store;
};

std::optional<Map> element_map(const Stmt& s) {
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
  return Map{rows, cols, store};
}

// Replaces the product's element in the map's value by what the product
// stores; fails where the map reads the product anywhere else.
class ElementOfProduct : public IRMutator {
 public:
  ElementOfProduct(const std::string& product, const std::string& row, const std::string& col, Expr n0, Expr n1, Expr element,
                   const Substitution& lets)
      : product_(product), row_(row), col_(col), n0_(std::move(n0)), n1_(std::move(n1)), element_(std::move(element)), lets_(lets) {}

  bool ok = true;
  using IRMutator::visit;

 protected:
  Expr visit(const Access* op) override {
    if (op->buffer != product_) return IRMutator::visit(op);
    if (op->axes.size() != 2 || op->axes[0].is_slice || op->axes[1].is_slice || !at(op->axes[0].index, row_, n0_) ||
        !at(op->axes[1].index, col_, n1_))
      ok = false;
    return element_;
  }

 private:
  // `index` is the loop variable `v` of a loop over 0..n: `v` itself, or
  // the broadcast index `select(n == 1, 0, v)` (where n is 1, v is 0).
  bool at(const Expr& index, const std::string& v, const Expr& n) const {
    if (is_var(index, v)) return true;
    auto s = index.as<Select>();
    if (!s || !is_zero(s->t) || !is_var(s->f, v)) return false;
    auto c = s->cond.as<Binary>();
    auto one = c ? c->b.as<IntImm>() : nullptr;
    return c && c->op == BinaryOp::Eq && one && one->value == 1 && equal(substitute(c->a, lets_), n);
  }

  std::string product_, row_, col_;
  Expr n0_, n1_, element_;
  const Substitution& lets_;  // the lets before the map, by their values
};

class Fuse : public IRMutator {
 public:
  using IRMutator::mutate;
  using IRMutator::visit;

  Block mutate(const Block& in) override {
    Block b = IRMutator::mutate(in);
    // From the top after each fusion, whose product may take the next map
    // (a product copied into a let, then scaled); each removes a statement.
    for (size_t at = 0; at < b.size();) {
      std::optional<Block> fused = fuse_at(b, at);
      if (!fused) {
        ++at;
        continue;
      }
      b = std::move(*fused);
      at = 0;
    }
    return b;
  }

 private:
  // The block with the product nest at `a` and the map after it fused.
  static std::optional<Block> fuse_at(const Block& b, size_t a) {
    auto product = b[a].as<For>();
    std::optional<DotProductNest> dots = product ? dot_product_nest(*product) : std::nullopt;
    if (!dots || !is_zero(dots->rows->lo) || !is_zero(dots->cols->lo)) return std::nullopt;
    const Store& ps = *dots->store;
    const std::string& p = ps.buffer;
    if (ps.axes.size() != 2 || !is_var(ps.axes[0].index, dots->rows->var) || !is_var(ps.axes[1].index, dots->cols->var)) return std::nullopt;
    // The product's array, allocated in this block before it.
    std::optional<size_t> allocation;
    for (size_t i = 0; i < a; ++i)
      if (auto al = b[i].as<Allocate>(); al && al->name == p && al->space == MemorySpace::Local) allocation = i;
    if (!allocation) return std::nullopt;
    // Lets, checks and allocations up to the map, reading nothing of the product.
    size_t m = a + 1;
    for (; m < b.size(); ++m) {
      StmtKind kind = b[m]->kind;
      if (kind != StmtKind::Let && kind != StmtKind::Check && kind != StmtKind::Allocate) break;
      if (reads(b[m]).count(p)) return std::nullopt;
    }
    // The block's lets up to the map by their values, to compare extents.
    Substitution lets;
    for (size_t i = 0; i < m; ++i)
      if (auto l = b[i].as<Let>()) lets[l->name] = substitute(l->value, lets);
    Expr n0 = substitute(dots->rows->hi, lets), n1 = substitute(dots->cols->hi, lets);
    std::optional<Map> map = m < b.size() ? element_map(b[m]) : std::nullopt;
    if (!map || map->store->buffer == p || !equal(substitute(map->rows->hi, lets), n0) || !equal(substitute(map->cols->hi, lets), n1) ||
        reads(map->store->value).count(map->store->buffer))
      return std::nullopt;
    for (size_t after = m + 1; after < b.size(); ++after)
      if (reads(b[after]).count(p)) return std::nullopt;
    // The map's value with the product's element replaced, over the product's loop variables.
    ElementOfProduct element(p, map->rows->var, map->cols->var, n0, n1, ps.value, lets);
    Expr value = element.mutate(map->store->value);
    if (!element.ok) return std::nullopt;
    value = substitute(value, {{map->rows->var, index_var(dots->rows->var)}, {map->cols->var, index_var(dots->cols->var)}});

    const For& cols = *dots->cols;
    Block col_body = cols.body;
    col_body.back() = make_store(map->store->buffer, ps.axes, value, map->store->span);
    Stmt col_loop = make_for(cols.var, cols.lo, cols.hi, cols.step, std::move(col_body), cols.loop_kind, cols.factor, cols.span);
    const For& rows = *dots->rows;
    Stmt fused = make_for(rows.var, rows.lo, rows.hi, rows.step, {col_loop}, rows.loop_kind, rows.factor, rows.span);

    Block out;
    for (size_t i = 0; i < a; ++i)
      if (i != *allocation) out.push_back(b[i]);
    for (size_t i = a + 1; i < m; ++i) out.push_back(b[i]);
    out.push_back(fused);
    for (size_t i = m + 1; i < b.size(); ++i) out.push_back(b[i]);
    return out;
  }
};

}  // namespace

Kernel fuse_product_epilogues(const Kernel& k) {
  Kernel out = Fuse().mutate(k);
  verify_or_throw(out, "fuse_product_epilogues");
  return out;
}

}  // namespace zyntax::cir
