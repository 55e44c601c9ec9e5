#include "cir/equal_everywhere.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "cir/equal.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// An integer or bool value as the simplifier's constants hold it.
std::optional<int64_t> as_int(const std::optional<Scalar>& s) {
  if (!s || !(is_int(s->dtype) || is_bool(s->dtype))) return std::nullopt;
  return is_unsigned_int(s->dtype) ? static_cast<int64_t>(s->u) : s->i;
}

std::optional<int64_t> value_at(const Expr& e, const Substitution& point) {
  if (std::optional<int64_t> v = as_int(evaluate_at(e, point))) return v;
  // What the direct evaluation cannot tell (an expression whose parts have
  // no value on their own, `x / 0 * 0`), the simplifier may.
  Expr v = simplify(substitute(e, point));
  if (auto i = v.as<IntImm>()) return i->value;
  if (auto b = v.as<BoolImm>()) return b->value ? 1 : 0;
  return std::nullopt;
}

// Calls at(point) at every iteration of the loops whose variables `names`
// (or the bounds of such loops) name, while it returns true; false where
// a name is bound by no loop, a bound is not a constant, or there are more
// than max_points iterations. The bounds are simplified first where
// `simplified` (which may drop names they read).
bool every_point(std::set<std::string> needed, const std::vector<const For*>& loops, const Substitution& lets, int64_t max_points,
                 bool simplified, const std::function<bool(const Substitution&)>& at) {
  auto prepare = [&](const Expr& e) { return simplified ? simplify(substitute(e, lets)) : substitute(e, lets); };
  // Outermost first, with their bounds (which may name outer loops' variables).
  struct Used {
    const For* loop;
    Expr lo, hi, step;
  };
  std::vector<Used> used;
  for (size_t i = loops.size(); i-- > 0;) {
    const For* f = loops[i];
    if (!needed.erase(f->var)) continue;
    Used u{f, prepare(f->lo), prepare(f->hi), prepare(f->step)};
    for (const Expr& bound : {u.lo, u.hi, u.step})
      for (const std::string& n : reads(bound)) needed.insert(n);
    used.push_back(std::move(u));
  }
  if (!needed.empty()) return false;  // names no loop binds
  std::reverse(used.begin(), used.end());

  int64_t points = 0;
  Substitution point;
  std::function<bool(size_t)> every = [&](size_t depth) -> bool {
    if (depth == used.size()) return ++points <= max_points && at(point);
    const Used& u = used[depth];
    std::optional<int64_t> l = value_at(u.lo, point), h = value_at(u.hi, point), s = value_at(u.step, point);
    if (!l || !h || !s || *s <= 0) return false;
    const For* f = u.loop;
    for (int64_t i = *l; i < *h; i += *s) {
      point[f->var] = IntImm::make(i, DType::I64, f->span);
      if (!every(depth + 1)) return false;
    }
    point.erase(f->var);
    return true;
  };
  return every(0);
}

}  // namespace

bool equal_everywhere(const Expr& a, const Expr& b, const std::vector<const For*>& loops, const Substitution& lets,
                      int64_t max_points) {
  auto names = [](const Expr& u, const Expr& v) {
    std::set<std::string> needed = reads(u);
    for (const std::string& n : reads(v)) needed.insert(n);
    return needed;
  };
  // First as written, lets substituted: the lets resolve into large
  // expressions that are slow to simplify, and evaluating them at each point
  // needs no simplifying. A value that differs at a point settles it, as
  // does every point agreeing.
  Expr x = substitute(a, lets), y = substitute(b, lets);
  if (equal(x, y)) return true;
  bool differs = false;
  bool agree = every_point(names(x, y), loops, lets, max_points, /*simplified=*/false, [&](const Substitution& point) {
    std::optional<int64_t> u = as_int(evaluate_at(x, point)), v = as_int(evaluate_at(y, point));
    if (!u || !v) return false;
    differs = *u != *v;
    return !differs;
  });
  if (agree || differs) return agree;
  // What that could not tell (a name no loop binds that simplifying
  // cancels, `n - n`; a part with no value alone), simplified.
  x = simplify(x);
  y = simplify(y);
  if (equal(x, y)) return true;
  return every_point(names(x, y), loops, lets, max_points, /*simplified=*/true, [&](const Substitution& point) {
    std::optional<int64_t> u = value_at(x, point), v = value_at(y, point);
    return u && v && *u == *v;
  });
}

std::optional<int64_t> largest_everywhere(const Expr& e, const std::vector<const For*>& loops, const Substitution& lets,
                                          int64_t max_points) {
  Expr x = simplify(substitute(e, lets));
  std::optional<int64_t> most;
  bool all = every_point(reads(x), loops, lets, max_points, /*simplified=*/true, [&](const Substitution& point) {
    std::optional<int64_t> v = value_at(x, point);
    if (v) most = std::max(most.value_or(*v), *v);
    return v.has_value();
  });
  if (!all) return std::nullopt;
  return most;
}

Substitution resolved_lets(const Kernel& k) {
  struct Lets : IRVisitor {
    using IRVisitor::visit;
    std::map<std::string, int> count;
    std::vector<const Let*> order;
    void visit(const Let* op) override {
      ++count[op->name];
      order.push_back(op);
      IRVisitor::visit(op);
    }
  } lets;
  lets.include(k.body);
  Substitution out;
  for (const Let* l : lets.order)
    if (lets.count[l->name] == 1) out[l->name] = substitute(l->value, out);
  return out;
}

}  // namespace zyntax::cir
