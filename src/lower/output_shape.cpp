#include "lower/output_shape.hpp"

#include <map>
#include <set>

#include "cir/equal.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/printer.hpp"
#include "cir/reads.hpp"
#include "cir/visitor.hpp"
#include "cir/substitute.hpp"

namespace zyntax {

namespace {

using cir::Expr;

struct Loop {
  Expr lo, hi, step;
};

class ShapeInference {
 public:
  explicit ShapeInference(DiagnosticEngine& diags) : diags_(diags) {}

  std::optional<std::vector<Expr>> run(const cir::Block& body) {
    walk(body);
    if (failed_) return std::nullopt;
    if (!shape_) return std::vector<Expr>{};  // the caller reports a kernel that never writes
    if (declared_) return *declared_;
    std::vector<Expr> shape;
    for (size_t k = 0; k < shape_->size(); ++k) {
      if (!(*shape_)[k].defined()) {
        const Unsized& u = unsized_.at(k);
        diags_.error(u.span, "cannot tell the size of axis " + std::to_string(k) + " of 'out' from `" + u.index + "`")
            .with_hint("index out with loop variables over ranges (`out[i, j]` for `i in 0..M, j in 0..N`), or give out "
                       "its shape first: `out = zeros(M, N)`");
        return std::nullopt;
      }
      shape.push_back((*shape_)[k]);
    }
    return shape;
  }

 private:
  void walk(const cir::Block& b) {
    for (const cir::Stmt& s : b) {
      if (auto f = s.as<cir::For>()) {
        loops_[f->var] = {f->lo, f->hi, f->step};
        walk(f->body);
        loops_.erase(f->var);
      } else if (auto i = s.as<cir::If>()) {
        walk(i->then_body);
        walk(i->else_body);
      } else if (auto l = s.as<cir::Let>()) {
        lets_[l->name] = l->value;
      } else if (auto d = s.as<cir::Decl>()) {
        mutables_.insert(d->name);
      } else if (auto st = s.as<cir::Store>(); st && st->buffer == "out") {
        store(*st);
      }
    }
  }

  void store(const cir::Store& st) {
    std::vector<Expr> shape;
    size_t slices = 0;
    for (size_t k = 0; k < st.axes.size(); ++k) {
      const cir::AxisSel& a = st.axes[k];
      std::optional<Expr> extent;
      if (!a.is_slice) {
        if (auto ub = bound(a.index, true)) extent = nothing_if_never_run(*ub + cir::i64(1), a.index);
      } else {
        ++slices;
        extent = slice_extent(a);
      }
      if (!extent) {
        // A data-dependent index (`out[ids[i], j] += ...`): another store
        // must give this axis its size; the index is checked when it runs.
        std::string text = a.is_slice ? (a.hi.defined() ? cir::print(a.hi) : std::string("an open slice")) : cir::print(a.index);
        unsized_.emplace(k, Unsized{st.span, text});
        shape.push_back(Expr());
        continue;
      }
      shape.push_back(cir::simplify(*extent));
    }
    // Axes of a stored tile that no index or slice covered.
    const std::vector<Expr>& vshape = st.value->type.shape;
    size_t consumed = st.axes.empty() ? 0 : slices;
    for (size_t k = consumed; k < vshape.size(); ++k) {
      cir::Expr extent = cir::simplify(inline_lets(vshape[k]));
      if (!invariant(extent)) {
        diags_.error(st.span, "the size of this tile changes from one iteration to the next, so it cannot set the size of 'out'")
            .with_hint("write the tile into a slice of out, as in `out[b, q:q + 64] = t`");
        failed_ = true;
        return;
      }
      shape.push_back(extent);
    }
    if (st.axes.empty()) declare(shape);
    merge(shape, st.span);
  }

  // `out = zeros(M, N)` (out assigned whole) gives out its shape: stores
  // past it are out of bounds when they run, as documented, rather than
  // growing the output.
  void declare(const std::vector<Expr>& shape) {
    if (!declared_) {
      declared_ = shape;
      return;
    }
    if (declared_->size() != shape.size()) return;  // merge() reports the ranks
    for (size_t k = 0; k < shape.size(); ++k)
      if (!cir::equal((*declared_)[k], shape[k])) (*declared_)[k] = cir::simplify(cir::max((*declared_)[k], shape[k]));
  }

  // A loop that runs no iteration writes nothing: the axis an index over
  // it sets is 0 long then (`for i in 5..2`, a window longer than the
  // data), not what its range's end says. `extent` is the axis' size from
  // `index`; each loop the index reads that may be empty and does not
  // start at 0 scales it by min(max(hi - lo, 0), 1), with hi - lo bounded
  // over the outer loops. Loops from 0 (`for i in 0..n: out[i]`, `d * 2 + 1`
  // over `0..head_dim / 2`) keep their plain shapes.
  Expr nothing_if_never_run(Expr extent, const Expr& index) {
    for (const auto& [var, loop] : loops_) {
      if (!cir::reads_any(index, {var})) continue;
      std::optional<Expr> runs = bound(loop.hi - loop.lo, true);
      if (!runs) continue;
      Expr trips = cir::simplify(*runs);
      if (auto c = trips.as<cir::IntImm>()) {
        if (c->value <= 0) return cir::i64(0);
        continue;
      }
      std::optional<Expr> lo = bound(loop.lo, false);
      Expr first = lo ? cir::simplify(*lo) : Expr();
      auto zero = first.as<cir::IntImm>();
      if (zero && zero->value == 0) {
        // From 0, an index rising with the variable ends at or below 0
        // when the loop is empty, unless the range's end is below 0
        // (`0..n - 5`): stores there go nowhere.
        if (!never_negative(loop.hi)) extent = cir::max(extent, cir::i64(0));
        continue;
      }
      extent = extent * cir::min(cir::max(trips, cir::i64(0)), cir::i64(1));
    }
    return extent;
  }

  // Sizes and host integers, and what + * / min max make of them.
  static bool never_negative(const Expr& e) {
    if (auto c = e.as<cir::IntImm>()) return c->value >= 0;
    if (e.as<cir::Var>()) return true;
    auto b = e.as<cir::Binary>();
    if (!b) return false;
    bool keeps = b->op == BinaryOp::Add || b->op == BinaryOp::Mul || b->op == BinaryOp::Div || b->op == BinaryOp::Min ||
                 b->op == BinaryOp::Max;
    return keeps && never_negative(b->a) && never_negative(b->b);
  }

  void merge(const std::vector<Expr>& shape, Span span) {
    if (!shape_) {
      shape_ = shape;
      first_ = span;
      return;
    }
    if (shape_->size() != shape.size()) {
      diags_.error(span, "this writes 'out' with " + std::to_string(shape.size()) + " axes")
          .note(first_, "but here with " + std::to_string(shape_->size()));
      failed_ = true;
      return;
    }
    for (size_t k = 0; k < shape.size(); ++k) {
      Expr& have = (*shape_)[k];
      if (!shape[k].defined()) continue;
      if (!have.defined())
        have = shape[k];
      else if (!cir::equal(have, shape[k]))
        have = cir::simplify(cir::max(have, shape[k]));
    }
  }

  // `q:q + s` with `q in 0..n step s` tiles the whole range, clamped at n.
  std::optional<Expr> slice_extent(const cir::AxisSel& a) {
    if (!a.hi.defined()) return std::nullopt;
    if (auto v = a.lo.as<cir::Var>()) {
      auto it = loops_.find(v->name);
      if (it != loops_.end()) {
        const Loop& l = it->second;
        auto zero = l.lo.as<cir::IntImm>();
        if (zero && zero->value == 0 && cir::equal(cir::simplify(a.hi - a.lo), cir::simplify(l.step))) return l.hi;
      }
    }
    return bound(a.hi, true);
  }

  // `e` with the lets it mentions replaced by their values (transitively), so
  // that `let rows = 5` does not make a shape look loop-dependent.
  Expr inline_lets(Expr e) const {
    cir::Substitution values(lets_.begin(), lets_.end());
    for (int i = 0; i < 8; ++i) {
      Expr next = cir::substitute(e, values);
      if (next.same_as(e)) break;
      e = next;
    }
    return e;
  }

  bool invariant(const Expr& e) const {
    if (auto v = e.as<cir::Var>()) return !loops_.count(v->name) && !lets_.count(v->name) && !mutables_.count(v->name);
    if (e.as<cir::IntImm>() || e.as<cir::FloatImm>() || e.as<cir::BoolImm>()) return true;
    if (auto b = e.as<cir::Binary>()) return invariant(b->a) && invariant(b->b);
    if (auto c = e.as<cir::Cast>()) return invariant(c->value);
    if (auto u = e.as<cir::Unary>()) return invariant(u->a);
    return false;
  }

  // However the constant is written: `-1` is a negation of 1 until folded.
  static bool is_negative_const(const Expr& e) {
    Expr folded = cir::simplify(e);
    auto i = folded.as<cir::IntImm>();
    return i && i->value < 0;
  }

  // An upper (or lower) bound of an integer index over all loop iterations.
  std::optional<Expr> bound(const Expr& e, bool upper) {
    if (!e.defined() || !e->type.is_scalar() || !is_int(e->type.dtype)) return std::nullopt;
    // Ranges read only outer loops' variables, so this ends; a deep chain
    // (or a range that reads itself, which the front end refuses) has no bound.
    struct Depth {
      int& d;
      explicit Depth(int& x) : d(++x) {}
      ~Depth() { --d; }
    } depth(depth_);
    if (depth_ > 256) return std::nullopt;
    if (e.as<cir::IntImm>()) return e;
    if (auto v = e.as<cir::Var>()) {
      auto it = loops_.find(v->name);
      if (it != loops_.end()) {
        // A range may read outer loops' variables (`for j in 0..i + 3`):
        // bound those too.
        const Loop& l = it->second;
        if (!upper) return bound(l.lo, false);
        auto one = l.step.as<cir::IntImm>();
        if (one && one->value == 1) return bound(l.hi - cir::i64(1), true);
        return bound(l.lo + ((l.hi - cir::i64(1) - l.lo) / l.step) * l.step, true);
      }
      auto let = lets_.find(v->name);
      if (let != lets_.end()) return bound(let->second, upper);
      return e;  // a dimension or host value: fixed for the whole launch
    }
    if (auto c = e.as<cir::Cast>()) return bound(c->value, upper);
    auto b = e.as<cir::Binary>();
    if (!b) return std::nullopt;
    switch (b->op) {
      case BinaryOp::Add: {
        auto x = bound(b->a, upper), y = bound(b->b, upper);
        if (x && y) return *x + *y;
        return std::nullopt;
      }
      case BinaryOp::Sub: {
        auto x = bound(b->a, upper), y = bound(b->b, !upper);
        if (x && y) return *x - *y;
        return std::nullopt;
      }
      case BinaryOp::Mul: {
        // One factor fixed over the launch (taken as non-negative unless a negative constant).
        const Expr& f = invariant(b->b) ? b->b : b->a;
        const Expr& g = invariant(b->b) ? b->a : b->b;
        if (!invariant(f)) return std::nullopt;
        auto x = bound(g, is_negative_const(f) ? !upper : upper);
        if (x) return *x * f;
        return std::nullopt;
      }
      case BinaryOp::Div: {
        if (!invariant(b->b) || is_negative_const(b->b)) return std::nullopt;
        auto x = bound(b->a, upper);
        if (x) return *x / b->b;
        return std::nullopt;
      }
      case BinaryOp::Min:
      case BinaryOp::Max: {
        auto x = bound(b->a, upper), y = bound(b->b, upper);
        if (!x || !y) return std::nullopt;
        return b->op == BinaryOp::Min ? cir::min(*x, *y) : cir::max(*x, *y);
      }
      default: return std::nullopt;
    }
  }

  DiagnosticEngine& diags_;
  std::map<std::string, Loop> loops_;
  std::map<std::string, Expr> lets_;
  int depth_ = 0;  // bound()'s recursion
  std::set<std::string> mutables_;
  std::optional<std::vector<Expr>> shape_;  // undefined where only data-dependent indices wrote
  std::optional<std::vector<Expr>> declared_;  // from out assigned whole
  struct Unsized {
    Span span;
    std::string index;
  };
  std::map<size_t, Unsized> unsized_;  // the first such index per axis
  Span first_;
  bool failed_ = false;
};

}  // namespace

std::optional<std::vector<cir::Expr>> infer_output_shape(const cir::Block& body, DiagnosticEngine& diags) {
  return ShapeInference(diags).run(body);
}

bool check_whole_out_reads(const cir::Block& body, size_t out_rank, DiagnosticEngine& diags) {
  struct Reads : cir::IRVisitor {
    size_t rank;
    DiagnosticEngine& diags;
    bool ok = true;
    Reads(size_t r, DiagnosticEngine& d) : rank(r), diags(d) {}
    using cir::IRVisitor::visit;
    void visit(const cir::Access* op) override {
      if (op->buffer == "out" && op->axes.empty() && op->type.rank() != rank) {
        diags.error(op->span, "'out' has " + std::to_string(rank) + " axes but is read here whole, as a number")
            .with_hint("read one element, as in out[i, j]");
        ok = false;
      }
      cir::IRVisitor::visit(op);
    }
  } reads(out_rank, diags);
  reads.include(body);
  return reads.ok;
}

}  // namespace zyntax
