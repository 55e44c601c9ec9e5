#include "cir/passes/fold_broadcast_extents.hpp"

#include <vector>

#include "cir/equal_everywhere.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

// Enumerations stop here: a condition that names a nest's own loops is not
// worth more (it is left as written).
constexpr int64_t kMostPoints = 1 << 14;

bool is_int_const(const Expr& e, int64_t v) { return e.as<IntImm>() && e.as<IntImm>()->value == v; }

class FoldBroadcasts : public IRMutator {
 public:
  explicit FoldBroadcasts(const Kernel& k) : lets_(resolved_lets(k)) {}
  using IRMutator::visit;

 protected:
  Stmt visit(const For* op) override {
    loops_.push_back(op);
    Stmt s = IRMutator::visit(op);
    loops_.pop_back();
    return s;
  }

  Stmt visit(const Let* op) override {
    Expr v = mutate(op->value);
    if (v->type.is_scalar() && v->type.dtype == DType::I64) {
      v = branch_taken(v);
      // The same value at every iteration (a key block's extent when the
      // block size divides the length): that constant, which the GPU
      // schedules can pad rows by and unroll loops over.
      if (!v.as<IntImm>())
        if (std::optional<int64_t> most = largest_everywhere(v, loops_, lets_, kMostPoints);
            most && equal_everywhere(v, i64(*most), loops_, lets_, kMostPoints))
          v = i64(*most);
    }
    if (v.same_as(op->value)) return handle_of(op);
    return make_let(op->name, v, op->span);
  }

  Expr visit(const Select* op) override {
    Expr cond = mutate(op->cond), t = mutate(op->t), f = mutate(op->f);
    // select(X == 1, 0, i) in a loop over i in 0..E, X equal to E everywhere.
    auto c = cond.as<Binary>();
    if (c && c->op == BinaryOp::Eq && is_int_const(c->b, 1) && is_int_const(t, 0)) {
      if (auto i = f.as<Var>()) {
        for (size_t depth = loops_.size(); depth-- > 0;) {
          const For* loop = loops_[depth];
          if (loop->var != i->name) continue;
          std::vector<const For*> outside(loops_.begin(), loops_.begin() + static_cast<std::ptrdiff_t>(depth));
          if (is_int_const(loop->lo, 0) && is_int_const(loop->step, 1) &&
              equal_everywhere(c->a, loop->hi, outside, lets_, kMostPoints))
            return f;
          break;
        }
      }
    }
    if (!cond->type.is_scalar() || cond->type.dtype != DType::Bool || !t->type.is_scalar() || !is_int(t->type.dtype)) {
      if (cond.same_as(op->cond) && t.same_as(op->t) && f.same_as(op->f)) return handle_of(op);
      return Select::make(cond, t, f, op->span);
    }
    if (!cond.as<BoolImm>()) {
      if (equal_everywhere(cond, BoolImm::make(true), loops_, lets_, kMostPoints)) return t;
      if (equal_everywhere(cond, BoolImm::make(false), loops_, lets_, kMostPoints)) return f;
    }
    if (cond.same_as(op->cond) && t.same_as(op->t) && f.same_as(op->f)) return handle_of(op);
    return Select::make(cond, t, f, op->span);
  }

 private:
  // The branch of an integer select that it equals everywhere, recursively.
  Expr branch_taken(const Expr& e) const {
    auto s = e.as<Select>();
    if (!s) return e;
    if (equal_everywhere(e, s->t, loops_, lets_, kMostPoints)) return branch_taken(s->t);
    if (equal_everywhere(e, s->f, loops_, lets_, kMostPoints)) return branch_taken(s->f);
    return e;
  }

  Substitution lets_;
  std::vector<const For*> loops_;
};

}  // namespace

Kernel fold_broadcast_extents(const Kernel& k) {
  Kernel out = simplify(FoldBroadcasts(k).mutate(k));
  verify_or_throw(out, "fold_broadcast_extents");
  return out;
}

}  // namespace zyntax::cir
