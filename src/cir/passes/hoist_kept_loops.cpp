#include "cir/passes/hoist_kept_loops.hpp"

#include <set>

#include "cir/passes/gpu_loops.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

Kernel hoist_kept_loops(const Kernel& k) {
  if (k.kind != KernelKind::Reduce || k.body.size() != 1 || !k.body[0].as<For>()) return k;
  // The nest, outermost first, and the body inside it.
  std::vector<const For*> nest;
  for (const For* f = k.body[0].as<For>(); f; f = f->body.size() == 1 ? f->body[0].as<For>() : nullptr) nest.push_back(f);
  const Block& inner = nest.back()->body;
  std::set<std::string> vars;
  for (const For* f : nest) vars.insert(f->var);
  for (const For* f : nest)
    if (f->loop_kind != LoopKind::Serial && f->loop_kind != LoopKind::Parallel) return k;
    else if (reads_any(f->lo, vars) || reads_any(f->hi, vars) || reads_any(f->step, vars)) return k;
  if (!only_yields(*nest[0])) return k;

  // Every yield's indices: the same kept loop variables.
  std::vector<const Yield*> yields = yields_in(inner);
  if (yields.empty()) return k;
  std::vector<std::string> kept;
  for (const Expr& e : yields[0]->out_index) {
    auto v = e.as<Var>();
    if (!v || !vars.count(v->name)) return k;
    kept.push_back(v->name);
  }
  for (const Yield* y : yields) {
    if (y->out_index.size() != kept.size()) return k;
    for (size_t a = 0; a < kept.size(); ++a)
      if (!y->out_index[a].as<Var>() || y->out_index[a].as<Var>()->name != kept[a]) return k;
  }
  std::set<std::string> kept_set(kept.begin(), kept.end());
  if (kept_set.size() != kept.size() || kept.empty()) return k;

  // Kept loops outside (parallel), reduced loops inside (serial), each
  // group in its written order.
  std::vector<const For*> order;
  for (const For* f : nest) if (kept_set.count(f->var)) order.push_back(f);
  size_t kept_count = order.size();
  for (const For* f : nest) if (!kept_set.count(f->var)) order.push_back(f);
  bool unchanged = true;
  for (size_t n = 0; n < nest.size(); ++n)
    unchanged = unchanged && order[n] == nest[n] && (n < kept_count) == (nest[n]->loop_kind == LoopKind::Parallel);
  if (unchanged) return k;
  Block body = inner;
  for (size_t n = order.size(); n-- > 0;) {
    const For& f = *order[n];
    body = {make_for(f.var, f.lo, f.hi, f.step, std::move(body), n < kept_count ? LoopKind::Parallel : LoopKind::Serial, 0, f.span)};
  }
  Kernel out = k;
  out.body = std::move(body);
  verify_or_throw(out, "hoist_kept_loops");
  return out;
}

}  // namespace zyntax::cir
