#include "cir/passes/fuse_product_epilogues.hpp"

#include <optional>

#include "cir/mutator.hpp"
#include "cir/passes/element_maps.hpp"
#include "cir/passes/gpu_register_blocks.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

class Fuse : public ExtentAwareMutator {
 public:
  using ExtentAwareMutator::ExtentAwareMutator;
  using IRMutator::mutate;

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
  std::optional<Block> fuse_at(const Block& b, size_t a) const {
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
    SameExtent same = same_extent(b, m);
    const Expr &n0 = dots->rows->hi, &n1 = dots->cols->hi;
    std::optional<ElementMap> map = m < b.size() ? element_map(b[m]) : std::nullopt;
    if (!map || map->store->buffer == p || !same(map->rows->hi, n0) || !same(map->cols->hi, n1) ||
        reads(map->store->value).count(map->store->buffer))
      return std::nullopt;
    for (size_t after = m + 1; after < b.size(); ++after)
      if (reads(b[after]).count(p)) return std::nullopt;
    // The map's value with the product's element replaced, over the product's loop variables.
    ElementReads element(p, map->rows->var, map->cols->var, n0, n1, ps.value, same);
    Expr value = element.mutate(map->store->value);
    if (!element.only_own_element) return std::nullopt;
    value = substitute(value, {{map->rows->var, index_var(dots->rows->var)}, {map->cols->var, index_var(dots->cols->var)}});
    const For& cols = *dots->cols;
    // A map into an array the product reads (`o = a * o + P V` stored back
    // into o): each element must be read only where it is written, so the
    // product's loops read nothing of it and the value only its own element.
    const std::string& target = map->store->buffer;
    for (size_t i = 0; i + 1 < cols.body.size(); ++i)
      if (reads(cols.body[i]).count(target)) return std::nullopt;
    if (!reads_only_element(value, target, ElementMap{dots->rows, dots->cols, &ps}, same)) return std::nullopt;

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
  Kernel out = Fuse(k).mutate(k);
  verify_or_throw(out, "fuse_product_epilogues");
  return out;
}

}  // namespace zyntax::cir
