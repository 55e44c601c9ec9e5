#include "lower/parallel_loops.hpp"

#include <set>

namespace zyntax {

namespace {

using cir::Expr;

bool is_var(const Expr& e, const std::string& name) {
  auto v = e.as<cir::Var>();
  return v && v->name == name;
}

// Checks one loop body: every write to `out` is indexed by `var` directly,
// and nothing declared outside is assigned inside.
class IndependenceCheck {
 public:
  explicit IndependenceCheck(std::string var) : var_(std::move(var)) {}

  bool run(const cir::Block& body) {
    block(body);
    return ok_;
  }

 private:
  void block(const cir::Block& b) {
    for (const cir::Stmt& s : b) stmt(s);
  }

  void stmt(const cir::Stmt& s) {
    if (!ok_) return;
    if (auto f = s.as<cir::For>()) {
      declared_.insert(f->var);
      block(f->body);
    } else if (auto i = s.as<cir::If>()) {
      block(i->then_body);
      block(i->else_body);
    } else if (auto l = s.as<cir::Let>()) {
      declared_.insert(l->name);
    } else if (auto d = s.as<cir::Decl>()) {
      declared_.insert(d->name);
    } else if (auto a = s.as<cir::Allocate>()) {
      declared_.insert(a->name);
    } else if (auto a = s.as<cir::Assign>()) {
      if (!declared_.count(a->name)) ok_ = false;
    } else if (auto st = s.as<cir::Store>()) {
      if (st->buffer == "out") {
        bool indexed = false;
        for (const cir::AxisSel& ax : st->axes)
          indexed = indexed || (!ax.is_slice && is_var(ax.index, var_)) || (ax.is_slice && is_var(ax.lo, var_));
        if (!indexed) ok_ = false;
      } else if (!declared_.count(st->buffer)) {
        ok_ = false;
      }
    } else if (auto y = s.as<cir::Yield>()) {
      bool indexed = false;
      for (const Expr& e : y->out_index) indexed = indexed || is_var(e, var_);
      if (!indexed) ok_ = false;
    } else if (s.as<cir::Atomic>() || s.as<cir::MatMulBlock>()) {
      ok_ = false;
    }
  }

  std::string var_;
  std::set<std::string> declared_;
  bool ok_ = true;
};

cir::Block mark(const cir::Block& b);

cir::Stmt mark_loop(const cir::For& f) {
  if (f.loop_kind != cir::LoopKind::Serial || !IndependenceCheck(f.var).run(f.body))
    return cir::make_for(f.var, f.lo, f.hi, f.step, f.body, f.loop_kind, f.factor, f.span);
  // Go on into a perfectly nested inner loop.
  cir::Block body = f.body;
  if (body.size() == 1 && body[0].as<cir::For>()) body = mark(body);
  return cir::make_for(f.var, f.lo, f.hi, f.step, std::move(body), cir::LoopKind::Parallel, 0, f.span);
}

cir::Block mark(const cir::Block& b) {
  cir::Block out;
  for (const cir::Stmt& s : b) {
    auto f = s.as<cir::For>();
    out.push_back(f ? mark_loop(*f) : s);
  }
  return out;
}

}  // namespace

void mark_parallel_loops(cir::Kernel& k) { k.body = mark(k.body); }

}  // namespace zyntax
