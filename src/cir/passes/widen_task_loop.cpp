#include "cir/passes/widen_task_loop.hpp"

#include <algorithm>
#include <optional>

#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"
#include "support/trip_count.hpp"

namespace zyntax::cir {

namespace {

// A loop's constant bounds; none when any of them is not a constant or the
// step is not positive.
struct ConstantRange {
  int64_t lo = 0, hi = 0, step = 1;
  int64_t trips() const { return trip_count(lo, hi, step); }
};

std::optional<ConstantRange> constant_range(const For& f) {
  auto lo = f.lo.as<IntImm>(), hi = f.hi.as<IntImm>(), step = f.step.as<IntImm>();
  if (!lo || !hi || !step || step->value <= 0) return std::nullopt;
  return ConstantRange{lo->value, hi->value, step->value};
}

class HoldsLoop : public IRVisitor {
 public:
  bool found = false;
  void visit(const For*) override { found = true; }
};

bool holds_loop(const Block& b) {
  HoldsLoop v;
  v.include(b);
  return v.found;
}

Expr add(Expr a, Expr b) { return Binary::make(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return Binary::make(BinaryOp::Mul, std::move(a), std::move(b)); }

// `outer`'s variable as the merged index `t` gives it: iteration t / n.
Stmt outer_let(const For& outer, const ConstantRange& r, const Expr& t, int64_t n) {
  return make_let(outer.var, simplify(add(i64(r.lo), mul(Binary::make(BinaryOp::Div, t, i64(n)), i64(r.step)))), outer.span);
}

// One step of widening: `s` (a parallel loop of too few iterations) merged
// with the parallel loop that is its whole body; none where it cannot be.
// Lets may come first (`let base = n * C`): they move into the merged body.
// `var s = init; <loops>; store`: one reduction per iteration.
bool one_reduction(const Block& body) {
  return body.size() == 3 && body[0].as<Decl>() && body[1].as<For>() && body[2].as<Store>();
}

std::optional<Stmt> widen_once(const Stmt& s, int64_t min_trips, int64_t block, int64_t reduction_trips, FreshNames& fresh) {
  auto outer = s.as<For>();
  if (!outer || outer->loop_kind != LoopKind::Parallel || outer->body.empty()) return std::nullopt;
  Block lets(outer->body.begin(), outer->body.end() - 1);
  for (const Stmt& l : lets)
    if (!l.as<Let>()) return std::nullopt;
  auto inner = outer->body.back().as<For>();
  if (!inner || inner->loop_kind != LoopKind::Parallel) return std::nullopt;
  std::optional<ConstantRange> ro = constant_range(*outer), ri = constant_range(*inner);
  if (!ro || !ri || ro->trips() == 0 || ri->trips() == 0) return std::nullopt;
  std::string t = fresh(outer->var + "%" + inner->var);
  Expr tv = Var::make(t, Type::scalar(DType::I64));

  bool reductions = reduction_trips > 0 && one_reduction(inner->body);
  if (holds_loop(inner->body) && !reductions) {
    int64_t n = ri->trips();
    Block body;
    body.push_back(outer_let(*outer, *ro, tv, n));
    body.insert(body.end(), lets.begin(), lets.end());
    body.push_back(make_let(inner->var, simplify(add(i64(ri->lo), mul(Binary::make(BinaryOp::Mod, tv, i64(n)), i64(ri->step)))),
                            inner->span));
    body.insert(body.end(), inner->body.begin(), inner->body.end());
    return make_for(t, i64(0), i64(ro->trips() * n), i64(1), std::move(body), LoopKind::Parallel, 0, outer->span);
  }

  // The innermost loop: blocks of whole vectors, as many as the threads need.
  int64_t wanted = ((reductions ? reduction_trips : min_trips) + ro->trips() - 1) / ro->trips();
  int64_t per = std::max(block, ri->trips() / wanted / block * block);
  int64_t blocks = (ri->trips() + per - 1) / per;
  if (blocks <= 1) return std::nullopt;
  Expr first = simplify(add(i64(ri->lo), mul(Binary::make(BinaryOp::Mod, tv, i64(blocks)), i64(per * ri->step))));
  Expr end = simplify(Binary::make(BinaryOp::Min, inner->hi, add(first, i64(per * ri->step))));
  Block body;
  body.push_back(outer_let(*outer, *ro, tv, blocks));
  body.insert(body.end(), lets.begin(), lets.end());
  body.push_back(make_for(inner->var, first, end, inner->step, inner->body, LoopKind::Parallel, inner->factor, inner->span));
  return make_for(t, i64(0), i64(ro->trips() * blocks), i64(1), std::move(body), LoopKind::Parallel, 0, outer->span);
}

}  // namespace

Kernel widen_task_loop(const Kernel& k, int64_t min_trips, int64_t block, int64_t reduction_trips) {
  if (k.kind == KernelKind::Reduce || k.body.size() != 1) return k;
  Kernel out = k;
  FreshNames fresh(k);
  Stmt& s = out.body[0];
  for (;;) {
    auto f = s.as<For>();
    std::optional<ConstantRange> r = f ? constant_range(*f) : std::nullopt;
    if (!r || r->trips() >= min_trips) break;
    std::optional<Stmt> wider = widen_once(s, min_trips, block, reduction_trips, fresh);
    if (!wider) break;
    s = *wider;
  }
  verify_or_throw(out, "widen_task_loop");
  return out;
}

}  // namespace zyntax::cir
