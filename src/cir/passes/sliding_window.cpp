#include "cir/passes/sliding_window.hpp"

#include <algorithm>

#include "cir/affine.hpp"
#include "cir/passes/guard_range.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"

namespace zyntax::cir {

namespace {

Expr var(const std::string& name) { return Var::make(name, Type::scalar(DType::I64)); }

// Whether `e` reads o and k only through o + k: with o replaced by o - k, k is gone.
bool slides_with(const Expr& e, const Substitution& shift, const std::set<std::string>& partners) {
  return !e.defined() || !reads_any(simplify(substitute(e, shift)), partners);
}

// The columns zero at both ends of every row of P: where the guard, at the
// last column loop's window position P is filled at, holds only from a
// constant first column and below a constant last one. Never so many that
// a row is narrower than its real pixels.
int64_t shared_columns(const ProductForm& m, const SlidingWindow& w) {
  if (!m.guard.defined()) return 0;
  size_t last = w.partner.size() - 1;
  const std::string& o = m.cols.loops[last].var;
  Substitution at = {{m.depth.loops[w.partner[last]].var, i64(w.partner_at(m, last))}};
  std::optional<GuardRange> range = guard_range(simplify(substitute(m.guard, at)), o);
  if (!range) return 0;
  int64_t X = w.extent[last], leading = 0, trailing = 0;
  for (const Expr& l : range->lower)
    if (std::optional<int64_t> v = constant_value(simplify(l))) leading = std::max(leading, *v);
  for (const Expr& u : range->upper)
    if (std::optional<int64_t> v = constant_value(simplify(u))) trailing = std::max(trailing, X - *v);
  int64_t room = X - m.cols.loops[last].extent;
  return std::clamp<int64_t>(std::min(leading, trailing), 0, room);
}

}  // namespace

int64_t SlidingWindow::width(size_t t) const { return t + 1 == extent.size() ? extent[t] - shared : extent[t]; }

int64_t SlidingWindow::plane() const {
  int64_t p = 1;
  for (size_t t = 0; t < extent.size(); ++t) p *= width(t);
  return p;
}

int64_t SlidingWindow::stride(size_t t) const {
  int64_t s = 1;
  for (size_t u = t + 1; u < extent.size(); ++u) s *= width(u);
  return s;
}

int64_t SlidingWindow::columns(const ProductForm& m) const { return m.cols.loops[0].extent * stride(0); }

double SlidingWindow::useful(const ProductForm& m) const {
  return static_cast<double>(m.cols.size()) / static_cast<double>(columns(m));
}

LoopGroup SlidingWindow::virtual_pixels(const ProductForm& m) const {
  LoopGroup g = image(m);
  g.loops[0].extent = m.cols.loops[0].extent;
  return g;
}

LoopGroup SlidingWindow::image(const ProductForm& m) const {
  LoopGroup g;
  for (size_t t = 0; t < extent.size(); ++t) g.loops.push_back({m.cols.loops[t].var, 0, width(t)});
  return g;
}

LoopGroup SlidingWindow::channel_group(const ProductForm& m) const {
  LoopGroup g;
  for (size_t c : channels) g.loops.push_back(m.depth.loops[c]);
  return g;
}

Expr SlidingWindow::offset(const ProductForm& m) const {
  LoopGroup ch = channel_group(m);
  Expr off = i64(0);
  for (size_t u = 0; u < ch.loops.size(); ++u)
    off = off + (var(ch.loops[u].var) - i64(ch.loops[u].lo)) * i64(ch.weight(u) * plane());
  for (size_t t = 0; t < partner.size(); ++t) {
    const LoopGroup::Loop& k = m.depth.loops[partner[t]];
    Expr step = mirrored[t] ? i64(k.lo + k.extent - 1) - var(k.var) : var(k.var) - i64(k.lo);
    off = off + step * i64(stride(t));
  }
  return simplify(off);
}

int64_t SlidingWindow::partner_at(const ProductForm& m, size_t t) const {
  const LoopGroup::Loop& k = m.depth.loops[partner[t]];
  return mirrored[t] ? k.lo + k.extent - 1 : k.lo;
}

int64_t SlidingWindow::max_offset(const ProductForm& m) const {
  int64_t off = (channel_group(m).size() - 1) * plane();
  for (size_t t = 0; t < partner.size(); ++t) off += (m.depth.loops[partner[t]].extent - 1) * stride(t);
  return off;
}

std::optional<SlidingWindow> find_sliding_window(const ProductForm& m) {
  if (m.guard.defined() && m.guard_on_x) return std::nullopt;
  SlidingWindow w;
  std::vector<bool> taken(m.depth.loops.size(), false);
  Substitution shift;
  std::set<std::string> partners;
  for (const LoopGroup::Loop& o : m.cols.loops) {
    std::optional<size_t> found;
    bool mirrored = false;
    for (size_t d = 0; d < m.depth.loops.size() && !found; ++d) {
      const std::string& k = m.depth.loops[d].var;
      if (taken[d] || !reads_any(m.y, {o.var}) || !reads_any(m.y, {k})) continue;
      for (bool mirror : {false, true}) {
        Substitution one = {{o.var, mirror ? var(o.var) + var(k) : var(o.var) - var(k)}};
        if (!found && slides_with(m.y, one, {k}) && slides_with(m.guard, one, {k})) found = d, mirrored = mirror;
      }
    }
    if (!found) return std::nullopt;
    taken[*found] = true;
    const LoopGroup::Loop& k = m.depth.loops[*found];
    w.partner.push_back(*found);
    w.mirrored.push_back(mirrored);
    w.extent.push_back(o.extent + k.extent - 1);
    shift[o.var] = mirrored ? var(o.var) + var(k.var) : var(o.var) - var(k.var);
    partners.insert(k.var);
  }
  // All together, in case two pairs share an index.
  if (!slides_with(m.y, shift, partners) || !slides_with(m.guard, shift, partners)) return std::nullopt;
  for (size_t d = 0; d < m.depth.loops.size(); ++d)
    if (!taken[d]) w.channels.push_back(d);
  w.shared = shared_columns(m, w);
  return w;
}

}  // namespace zyntax::cir
