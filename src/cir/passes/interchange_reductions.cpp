#include "cir/passes/interchange_reductions.hpp"

#include <set>

#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

// Arrays larger than this stay as they are (the accumulators live on the stack).
constexpr int64_t kMaxAccumulatorBytes = 64 << 10;

class Interchange {
 public:
  Block block(const Block& b) {
    Block out;
    for (const Stmt& s : b) {
      if (auto f = s.as<For>()) {
        if (rewrite(*f, out)) continue;
        out.push_back(make_for(f->var, f->lo, f->hi, f->step, block(f->body), f->loop_kind, f->factor, f->span));
      } else if (auto i = s.as<If>()) {
        out.push_back(make_if(i->cond, block(i->then_body), block(i->else_body), i->span));
      } else {
        out.push_back(s);
      }
    }
    return out;
  }

 private:
  std::string fresh(const std::string& base) { return base + "%" + std::to_string(counter_++); }

  // for j: { var s = init; for k: s = s op e; store ... s ... }
  bool rewrite(const For& f, Block& out) {
    auto lo = f.lo.as<IntImm>(), hi = f.hi.as<IntImm>(), step = f.step.as<IntImm>();
    if (!lo || !hi || !step || lo->value != 0 || step->value != 1 || hi->value <= 0 || f.body.size() != 3) return false;
    auto decl = f.body[0].as<Decl>();
    auto inner = f.body[1].as<For>();
    auto store = f.body[2].as<Store>();
    if (!decl || !inner || !store || !decl->type.is_scalar() || !decl->init.defined()) return false;
    if (hi->value * static_cast<int64_t>(dtype_size(decl->type.dtype)) > kMaxAccumulatorBytes) return false;
    if (inner->body.size() != 1) return false;
    auto assign = inner->body[0].as<Assign>();
    if (!assign || assign->name != decl->name) return false;
    auto op = assign->value.as<Binary>();
    if (!op || (op->op != BinaryOp::Add && op->op != BinaryOp::Mul && op->op != BinaryOp::Min && op->op != BinaryOp::Max))
      return false;
    auto self = op->a.as<Var>();
    if (!self || self->name != decl->name) return false;
    const std::string& j = f.var;
    const std::string& s = decl->name;
    // The inner loop's range must not depend on j, and the term must not read
    // the running value or what the loop writes.
    std::set<std::string> written = {store->buffer, s};
    for (const Expr& e : {inner->lo, inner->hi, inner->step})
      if (reads_any(e, {j, s})) return false;
    if (reads_any(op->b, written) || reads_any(decl->init, written)) return false;

    std::string acc = fresh(s + "acc");
    Type acc_type = Type::tensor(decl->type.dtype, {f.hi});
    auto acc_of = [&](const std::string& jv) { return make_access(acc, acc_type, {AxisSel::at(Var::make(jv, Type::scalar(DType::I64)))}); };
    auto over_j = [&](const std::string& jv, Block body) {
      return make_for(jv, f.lo, f.hi, f.step, std::move(body), LoopKind::Serial, 0, f.span);
    };
    auto rename_j = [&](const std::string& jv) { return Substitution{{j, Var::make(jv, Type::scalar(DType::I64))}}; };

    out.push_back(make_allocate(acc, acc_type, MemorySpace::Local, f.span));
    std::string j0 = fresh(j);
    out.push_back(over_j(j0, {make_store(acc, {AxisSel::at(Var::make(j0, Type::scalar(DType::I64)))},
                                         substitute(decl->init, rename_j(j0)), decl->span)}));
    std::string j1 = fresh(j);
    Expr term = substitute(op->b, rename_j(j1));
    Block step_body = {make_store(acc, {AxisSel::at(Var::make(j1, Type::scalar(DType::I64)))},
                                  Binary::make(op->op, acc_of(j1), term, op->span), assign->span)};
    out.push_back(make_for(inner->var, inner->lo, inner->hi, inner->step, {over_j(j1, step_body)}, inner->loop_kind,
                           inner->factor, inner->span));
    std::string j2 = fresh(j);
    Substitution finish = rename_j(j2);
    finish[s] = acc_of(j2);
    out.push_back(over_j(j2, substitute(Block{f.body[2]}, finish)));
    return true;
  }

  int counter_ = 0;
};

}  // namespace

Kernel interchange_reductions(const Kernel& k) {
  Kernel out = k;
  out.body = Interchange().block(k.body);
  out = simplify(out);
  verify_or_throw(out, "interchange_reductions");
  return out;
}

}  // namespace zyntax::cir
