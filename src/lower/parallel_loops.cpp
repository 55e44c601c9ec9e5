#include "lower/parallel_loops.hpp"

#include <set>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"
#include "cir/reads.hpp"
#include "cir/visitor.hpp"

namespace zyntax {

namespace {

using cir::Expr;

bool is_var(const Expr& e, const std::string& name) {
  auto v = e.as<cir::Var>();
  return v && v->name == name;
}

// The same element: equal indices, no slices.
bool same_element(const std::vector<cir::AxisSel>& a, const std::vector<cir::AxisSel>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].is_slice || b[k].is_slice || !cir::equal(a[k].index, b[k].index)) return false;
  return true;
}

// The reads of `out` in a piece of CIR.
struct OutReads : cir::IRVisitor {
  std::vector<const cir::Access*> found;
  using IRVisitor::visit;
  void visit(const cir::Access* op) override {
    if (op->buffer == "out") found.push_back(op);
    IRVisitor::visit(op);
  }
};

// `out[I] = out[I] op e` (or `e op out[I]`, op commutative) as an atomic
// update of out[I] by e: + (and - as + of -e), min, max; e must not read
// out. Nothing for any other store.
std::optional<cir::Stmt> atomic_form(const cir::Store& st) {
  if (st.buffer != "out" || st.axes.empty() || !st.value->type.is_scalar()) return std::nullopt;
  std::vector<Expr> index;
  for (const cir::AxisSel& a : st.axes) {
    if (a.is_slice) return std::nullopt;
    index.push_back(a.index);
  }
  if (st.value->type.dtype == DType::Bool) return std::nullopt;
  // The operation and its two operands: `x op y`, or `min(x, y)` / `max(x, y)`.
  std::optional<BinaryOp> how;
  Expr x, y;
  if (auto b = st.value.as<cir::Binary>()) {
    how = b->op;
    x = b->a;
    y = b->b;
  } else if (auto m = st.value.as<cir::Math>(); m && m->args.size() == 2 && (m->fn == MathFn::Min || m->fn == MathFn::Max)) {
    how = m->fn == MathFn::Min ? BinaryOp::Min : BinaryOp::Max;
    x = m->args[0];
    y = m->args[1];
  }
  if (!how) return std::nullopt;
  auto own = [&](const Expr& e) {
    auto a = e.as<cir::Access>();
    return a && a->buffer == "out" && same_element(a->axes, st.axes);
  };
  bool left = own(x);
  if (!left && !own(y)) return std::nullopt;
  Expr e = left ? y : x;
  if (cir::reads_any(e, {"out"})) return std::nullopt;
  cir::AtomicOp op;
  switch (*how) {
    case BinaryOp::Add: op = cir::AtomicOp::Add; break;
    case BinaryOp::Sub:
      if (!left) return std::nullopt;
      op = cir::AtomicOp::Add;
      e = cir::Unary::make(UnaryOp::Neg, e, e->span);
      break;
    case BinaryOp::Min: op = cir::AtomicOp::Min; break;
    case BinaryOp::Max: op = cir::AtomicOp::Max; break;
    default: return std::nullopt;
  }
  return cir::make_atomic(op, "out", std::move(index), std::move(e), cir::FenceScope::Device, st.span);
}

// Checks one loop body. Its iterations are independent when they touch
// disjoint elements of `out`: one axis is indexed with `var` itself in
// every store to it and every read of it (so an iteration reads only what
// it writes), yields go to their own output element, and nothing declared
// outside is assigned inside. Failing that, they may still update `out`
// atomically (Verdict::WithAtomics): every access to it is an update
// `out[I] = out[I] op e` whose index changes with the iteration (a
// scatter: `out[ids[i], j] += x[i, j]`, a histogram).
class IndependenceCheck {
 public:
  explicit IndependenceCheck(std::string var) : var_(std::move(var)) {}

  enum class Verdict { Dependent, Independent, WithAtomics };

  Verdict run(const cir::Block& body) {
    block(body);
    if (!ok_ || (atomics_ && (!stores_.empty() || !reads_.empty()))) return Verdict::Dependent;
    if (disjoint()) return Verdict::Independent;
    return updates_only() ? Verdict::WithAtomics : Verdict::Dependent;
  }

 private:
  void block(const cir::Block& b) {
    for (const cir::Stmt& s : b) stmt(s);
  }

  // Records the reads of `out` in an expression or a statement without blocks.
  template <class Node>
  void note_reads(const Node& n) {
    OutReads r;
    r.include(n);
    reads_.insert(reads_.end(), r.found.begin(), r.found.end());
  }

  void stmt(const cir::Stmt& s) {
    if (!ok_) return;
    if (auto f = s.as<cir::For>()) {
      declared_.insert(f->var);
      for (const Expr& e : {f->lo, f->hi, f->step}) note_reads(e);
      block(f->body);
    } else if (auto i = s.as<cir::If>()) {
      note_reads(i->cond);
      block(i->then_body);
      block(i->else_body);
    } else if (auto st = s.as<cir::Store>()) {
      note_reads(s);
      if (st->buffer == "out") {
        stores_.push_back(st);
        iteration_dependent_.push_back(index_changes(st->axes));
      } else if (!declared_.count(st->buffer)) {
        ok_ = false;
      }
    } else if (auto a = s.as<cir::Atomic>()) {
      note_reads(s);
      if (a->buffer == "out") atomics_ = true;
      else if (!declared_.count(a->buffer)) ok_ = false;
    } else if (s.as<cir::MatMulBlock>()) {
      ok_ = false;
    } else {
      note_reads(s);
      if (auto l = s.as<cir::Let>()) {
        declared_.insert(l->name);
      } else if (auto d = s.as<cir::Decl>()) {
        declared_.insert(d->name);
      } else if (auto al = s.as<cir::Allocate>()) {
        declared_.insert(al->name);
      } else if (auto as = s.as<cir::Assign>()) {
        if (!declared_.count(as->name)) ok_ = false;
      } else if (auto y = s.as<cir::Yield>()) {
        bool indexed = false;
        for (const Expr& e : y->out_index) indexed = indexed || is_var(e, var_);
        if (!indexed) ok_ = false;
      }
    }
  }

  bool indexed_at(const std::vector<cir::AxisSel>& axes, size_t p) const {
    if (p >= axes.size()) return false;
    const cir::AxisSel& ax = axes[p];
    return (!ax.is_slice && is_var(ax.index, var_)) || (ax.is_slice && is_var(ax.lo, var_));
  }

  // Some axis is indexed with the variable in every store and every read.
  bool disjoint() const {
    if (stores_.empty()) return reads_.empty();
    for (size_t p = 0; p < stores_[0]->axes.size(); ++p) {
      bool all = true;
      for (const cir::Store* st : stores_) all = all && indexed_at(st->axes, p);
      for (const cir::Access* r : reads_) all = all && indexed_at(r->axes, p);
      if (all) return true;
    }
    return false;
  }

  // Every store is an atomic update at an index that changes with the
  // iteration, and the updates' own reads are the only reads.
  bool updates_only() const {
    if (stores_.empty() || reads_.size() != stores_.size()) return false;
    for (size_t n = 0; n < stores_.size(); ++n)
      if (!iteration_dependent_[n] || !atomic_form(*stores_[n])) return false;
    return true;
  }

  bool index_changes(const std::vector<cir::AxisSel>& axes) const {
    std::set<std::string> inside = declared_;
    inside.insert(var_);
    for (const cir::AxisSel& a : axes)
      if (!a.is_slice && cir::reads_any(a.index, inside)) return true;
    return false;
  }

  std::string var_;
  std::set<std::string> declared_;
  std::vector<const cir::Store*> stores_;
  std::vector<bool> iteration_dependent_;
  std::vector<const cir::Access*> reads_;
  bool atomics_ = false;
  bool ok_ = true;
};

struct ToAtomics : cir::IRMutator {
  using IRMutator::visit;
  cir::Stmt visit(const cir::Store* op) override {
    if (op->buffer != "out") return IRMutator::visit(op);
    return *atomic_form(*op);
  }
};

cir::Block mark(const cir::Block& b, bool top_level);

cir::Stmt mark_loop(const cir::For& f, bool top_level) {
  using Verdict = IndependenceCheck::Verdict;
  Verdict v = f.loop_kind == cir::LoopKind::Serial ? IndependenceCheck(f.var).run(f.body) : Verdict::Dependent;
  // Atomics only where no enclosing loop owns the elements: an inner loop
  // over a row's terms is a reduction, kept in order.
  if (v == Verdict::Dependent || (v == Verdict::WithAtomics && !top_level))
    return cir::make_for(f.var, f.lo, f.hi, f.step, f.body, f.loop_kind, f.factor, f.span);
  cir::Block body = v == Verdict::WithAtomics ? ToAtomics().mutate(f.body) : f.body;
  // Go on into a perfectly nested inner loop.
  if (body.size() == 1 && body[0].as<cir::For>()) body = mark(body, false);
  return cir::make_for(f.var, f.lo, f.hi, f.step, std::move(body), cir::LoopKind::Parallel, 0, f.span);
}

cir::Block mark(const cir::Block& b, bool top_level) {
  cir::Block out;
  for (const cir::Stmt& s : b) {
    auto f = s.as<cir::For>();
    out.push_back(f ? mark_loop(*f, top_level) : s);
  }
  return out;
}

}  // namespace

void mark_parallel_loops(cir::Kernel& k) { k.body = mark(k.body, true); }

}  // namespace zyntax
