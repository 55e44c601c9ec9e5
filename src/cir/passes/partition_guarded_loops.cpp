#include "cir/passes/partition_guarded_loops.hpp"

#include "cir/passes/guard_range.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

// An inner loop of at most this many trips is worth a copy of the outer one
// where its range is whole: it unrolls there.
constexpr int64_t kMaxSplitTrips = 16;

bool runs_on_cpu(LoopKind k) { return k != LoopKind::GpuBlock && k != LoopKind::GpuThread; }

bool is_true(const Expr& e) {
  auto b = e.as<BoolImm>();
  return b && b->value;
}

bool unit_step(const For& f) {
  auto s = f.step.as<IntImm>();
  return s && s->value == 1;
}

// Statements that bind no name (so a copy of them declares nothing twice).
bool binds_nothing(const Block& b) {
  for (const Stmt& s : b) {
    if (auto i = s.as<If>()) {
      if (!binds_nothing(i->then_body) || !binds_nothing(i->else_body)) return false;
    } else if (!s.as<Store>() && !s.as<Assign>()) {
      return false;
    }
  }
  return true;
}

class Partition {
 public:
  Block block(const Block& b) {
    Block out;
    for (const Stmt& s : b) stmt(s, out);
    return out;
  }

 private:
  void stmt(const Stmt& s, Block& out) {
    if (auto i = s.as<If>()) {
      out.push_back(make_if(i->cond, block(i->then_body), block(i->else_body), i->span));
      return;
    }
    auto f = s.as<For>();
    if (!f) {
      out.push_back(s);
      return;
    }
    Block body = block(f->body);
    auto guarded = body.size() == 1 ? body[0].as<If>() : nullptr;
    if (!guarded || !guarded->else_body.empty() || !runs_on_cpu(f->loop_kind)) {
      loop(*f, f->lo, f->hi, std::move(body), out);
      return;
    }
    std::optional<GuardRange> range = unit_step(*f) ? guard_range(guarded->cond, f->var) : std::nullopt;
    Expr uniform;
    Block loops;
    if (range) {
      Expr lo = f->lo, hi = f->hi;
      for (const Expr& l : range->lower) lo = max(lo, l);
      for (const Expr& u : range->upper) hi = min(hi, u);
      uniform = range->uniform;
      loop(*f, lo, hi, guarded->then_body, loops);
    } else {
      // Not a range: what does not depend on the loop is still tested once.
      GuardSplit split = split_uniform(guarded->cond, f->var);
      if (is_true(split.uniform)) {
        loop(*f, f->lo, f->hi, std::move(body), out);
        return;
      }
      uniform = split.uniform;
      loop(*f, f->lo, f->hi, {make_if(split.rest, guarded->then_body, {}, guarded->span)}, loops);
    }
    if (is_true(uniform)) {
      out.insert(out.end(), loops.begin(), loops.end());
    } else {
      out.push_back(make_if(uniform, loops, {}, guarded->span));
    }
  }

  // for var in lo..hi: body, split where an inner loop's range is whole.
  void loop(const For& f, Expr lo, Expr hi, Block body, Block& out) {
    if (!split_where_whole(f, lo, hi, body, out))
      out.push_back(make_for(f.var, std::move(lo), std::move(hi), f.step, std::move(body), f.loop_kind, f.factor, f.span));
  }

  // for z in lo..hi:                         for z in lo..a:  <as before>
  //   for dz in max(c, L(z))..min(d, U(z)):  for z in a..b:   for dz in c..d: ...
  //     ...                              →   for z in b..hi:  <as before>
  //
  // with a..b where every L(z) <= c and U(z) >= d (guard_range of that), c and
  // d constants: in the middle the inner loop has a constant, short range
  // and unrolls, leaving z innermost over plain loads (a convolution window
  // away from the padding).
  bool split_where_whole(const For& f, const Expr& lo, const Expr& hi, const Block& body, Block& out) {
    auto inner = body.size() == 1 ? body[0].as<For>() : nullptr;
    if (!inner || !unit_step(f) || !unit_step(*inner) || !runs_on_cpu(f.loop_kind) || !binds_nothing(inner->body))
      return false;
    std::vector<Expr> lows = chain_operands(inner->lo, BinaryOp::Max), highs = chain_operands(inner->hi, BinaryOp::Min);
    std::optional<int64_t> c, d;
    Expr whole;
    auto require = [&](Expr cond) { whole = whole.defined() ? Binary::make(BinaryOp::And, whole, cond) : cond; };
    for (const Expr& l : lows) {
      if (auto k = l.as<IntImm>()) c = c ? std::max(*c, k->value) : k->value;
    }
    for (const Expr& u : highs) {
      if (auto k = u.as<IntImm>()) d = d ? std::min(*d, k->value) : k->value;
    }
    if (!c || !d || *d - *c > kMaxSplitTrips || *d <= *c) return false;
    for (const Expr& l : lows)
      if (!l.as<IntImm>()) {
        if (!reads_any(l, {f.var})) return false;
        require(Binary::make(BinaryOp::Le, l, i64(*c)));
      }
    for (const Expr& u : highs)
      if (!u.as<IntImm>()) {
        if (!reads_any(u, {f.var})) return false;
        require(Binary::make(BinaryOp::Ge, u, i64(*d)));
      }
    if (!whole.defined()) return false;
    std::optional<GuardRange> range = guard_range(simplify(whole), f.var);
    if (!range || !is_true(range->uniform)) return false;
    Expr a = lo, b = hi;
    for (const Expr& l : range->lower) a = max(a, l);
    a = min(a, hi);
    for (const Expr& u : range->upper) b = min(b, u);
    b = max(a, b);
    // Each copy binds its own names (a kernel declares a name once).
    auto copy = [&](Expr from, Expr to, Expr inner_lo, Expr inner_hi) {
      std::string z = f.var + "%s" + std::to_string(counter_), dz = inner->var + "%s" + std::to_string(counter_);
      ++counter_;
      Substitution rename = {{f.var, Var::make(z, Type::scalar(DType::I64))},
                             {inner->var, Var::make(dz, Type::scalar(DType::I64))}};
      Stmt over_dz = make_for(dz, substitute(inner_lo, rename), substitute(inner_hi, rename), inner->step,
                              substitute(inner->body, rename), inner->loop_kind, inner->factor, inner->span);
      out.push_back(make_for(z, from, to, f.step, {over_dz}, f.loop_kind, f.factor, f.span));
    };
    copy(lo, a, inner->lo, inner->hi);
    copy(a, b, i64(*c), i64(*d));
    copy(b, hi, inner->lo, inner->hi);
    return true;
  }

  int counter_ = 0;
};

}  // namespace

Kernel partition_guarded_loops(const Kernel& k) {
  Kernel out = k;
  out.body = Partition().block(k.body);
  out = simplify(out);
  verify_or_throw(out, "partition_guarded_loops");
  return out;
}

}  // namespace zyntax::cir
