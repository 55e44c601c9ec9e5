#include "cir/passes/reuse_row_values.hpp"

#include <set>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

// Replaces every expression equal to `from` by `to`.
class Replace : public IRMutator {
 public:
  Replace(Expr from, Expr to) : from_(std::move(from)), to_(std::move(to)) {}
  int count = 0;
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override {
    if (e.defined() && equal(e, from_)) {
      ++count;
      return to_;
    }
    return IRMutator::mutate(e);
  }

 private:
  Expr from_, to_;
};

bool same_range(const For& a, const For& b) {
  return equal(a.lo, b.lo) && equal(a.hi, b.hi) && equal(a.step, b.step);
}

class Rewriter {
 public:
  explicit Rewriter(const Param& out) : out_(out) {}

  Block block(const Block& in) {
    Block b = in;
    for (size_t a = 0; a < b.size(); ++a) {
      if (auto f = b[a].as<For>()) b[a] = make_for(f->var, f->lo, f->hi, f->step, block(f->body), f->loop_kind, f->factor, f->span);
      else if (auto i = b[a].as<If>()) b[a] = make_if(i->cond, block(i->then_body), block(i->else_body), i->span);
    }
    for (size_t a = 0; a < b.size(); ++a)
      for (size_t z = a + 1; z < b.size(); ++z)
        if (rewrite(b, a, z)) break;
    return b;
  }

 private:
  // b[a]: for ja: s = s + E(ja);  b[z]: for jb: out[.., jb, ..] = V containing E(jb).
  bool rewrite(Block& b, size_t a, size_t z) {
    auto la = b[a].as<For>();
    auto lb = b[z].as<For>();
    if (!la || !lb || la->body.size() != 1 || lb->body.size() != 1 || !same_range(*la, *lb)) return false;
    auto acc = la->body[0].as<Assign>();
    auto store = lb->body[0].as<Store>();
    if (!acc || !store || store->buffer != out_.name) return false;
    auto sum = acc->value.as<Binary>();
    if (!sum || sum->op != BinaryOp::Add) return false;
    auto self = sum->a.as<Var>();
    if (!self || self->name != acc->name) return false;
    // The summed value, or what a widening conversion widens (an f32 row
    // summed in f64): the output keeps the value before it is widened.
    Expr e = sum->b;
    const Cast* widen = e.as<Cast>();
    if (widen && e->type.dtype != out_.type.dtype) e = widen->value;
    else widen = nullptr;
    if (!e->type.is_scalar() || e->type.dtype != out_.type.dtype) return false;
    // The output element: indexed by jb itself on one axis, by values fixed
    // for the loop on the others.
    const std::string& ja = la->var;
    const std::string& jb = lb->var;
    bool by_jb = false;
    for (const AxisSel& ax : store->axes) {
      if (ax.is_slice) return false;
      auto v = ax.index.as<Var>();
      if (v && v->name == jb) by_jb = true;
      else if (reads_any(ax.index, {jb})) return false;
    }
    if (!by_jb) return false;
    // E reads ja, not the output or the running sum; nothing between the
    // loops writes what E or the indices read, or touches the output.
    std::set<std::string> e_reads = reads(e);
    if (!e_reads.count(ja) || e_reads.count(out_.name) || e_reads.count(acc->name)) return false;
    std::set<std::string> watched = e_reads;
    for (const AxisSel& ax : store->axes)
      for (const std::string& n : reads(ax.index)) watched.insert(n);
    watched.insert(out_.name);
    watched.erase(ja);
    watched.erase(jb);
    for (size_t m = a + 1; m < z; ++m) {
      for (const std::string& n : writes(b[m]))
        if (watched.count(n)) return false;
      if (reads(b[m]).count(out_.name)) return false;
    }
    Expr e_b = substitute(e, {{ja, Var::make(jb, Type::scalar(DType::I64))}});
    Expr element = make_access(out_.name, out_.type, store->axes, store->span);
    Replace r(e_b, element);
    Expr v = r.mutate(store->value);
    if (r.count == 0) return false;

    // The first loop keeps the value; the second reads it back.
    std::string t = acc->name + "%row";
    std::vector<AxisSel> at_a;
    for (const AxisSel& ax : store->axes) at_a.push_back(AxisSel::at(substitute(ax.index, {{jb, Var::make(ja, Type::scalar(DType::I64))}})));
    Expr tv = Var::make(t, e->type);
    Block body_a = {make_let(t, e, acc->span), make_store(out_.name, at_a, tv, store->span),
                    make_assign(acc->name, Binary::make(BinaryOp::Add, sum->a, widen ? Cast::make(sum->b->type.dtype, tv, widen->span) : tv, sum->span),
                                acc->span)};
    b[a] = make_for(la->var, la->lo, la->hi, la->step, body_a, la->loop_kind, la->factor, la->span);
    b[z] = make_for(lb->var, lb->lo, lb->hi, lb->step, {make_store(store->buffer, store->axes, v, store->span)}, lb->loop_kind,
                    lb->factor, lb->span);
    return true;
  }

  const Param& out_;
};

}  // namespace

Kernel reuse_row_values(const Kernel& k) {
  if (k.kind == KernelKind::Reduce) return k;
  Kernel out = k;
  out.body = Rewriter(k.output()).block(k.body);
  verify_or_throw(out, "reuse_row_values");
  return out;
}

}  // namespace zyntax::cir
