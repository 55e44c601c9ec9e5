#include "cir/output_coverage.hpp"

#include <string>
#include <vector>

#include "cir/reads.hpp"

namespace zyntax::cir {

namespace {

bool is_const(const Expr& e, int64_t v) {
  auto c = e.as<IntImm>();
  return c && c->value == v;
}

bool covers(const Block& b, const Param& out, std::vector<std::string>& vars) {
  size_t axis = vars.size();
  for (const Stmt& s : b) {
    if (axis == out.type.rank()) {
      auto st = s.as<Store>();
      if (!st || st->buffer != out.name || st->axes.size() != axis) continue;
      bool exact = true;
      for (size_t a = 0; a < axis && exact; ++a) {
        auto v = st->axes[a].is_slice ? nullptr : st->axes[a].index.as<Var>();
        exact = v && v->name == vars[a];
      }
      if (exact) return true;
      continue;
    }
    auto f = s.as<For>();
    auto extent = out.type.shape[axis].as<IntImm>();
    if (!f || !extent || !is_const(f->lo, 0) || !is_const(f->step, 1) || !is_const(f->hi, extent->value)) continue;
    vars.push_back(f->var);
    bool ok = covers(f->body, out, vars);
    vars.pop_back();
    if (ok) return true;
  }
  return false;
}

}  // namespace

bool writes_whole_output(const Kernel& k) {
  if (k.kind == KernelKind::Reduce) return false;  // written through accumulators
  // `out[i] += x[i]` reads what it writes: the output must start zeroed.
  for (const Stmt& s : k.body)
    if (reads(s).count(k.output().name)) return false;
  std::vector<std::string> vars;
  return covers(k.body, k.output(), vars);
}

}  // namespace zyntax::cir
