#include "cir/passes/gpu_loops.hpp"

#include <limits>

#include "cir/affine.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/collapse_parallel_loops.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/printer.hpp"
#include "cir/reads.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

Expr index_var(const std::string& name) { return Var::make(name, Type::scalar(DType::I64)); }
Expr less_than(Expr a, Expr b) { return Binary::make(BinaryOp::Lt, std::move(a), std::move(b)); }
Expr both(Expr a, Expr b) { return Binary::make(BinaryOp::And, std::move(a), std::move(b)); }
Expr mod(const Expr& a, int64_t m) { return m == 1 ? i64(0) : a - a / i64(m) * i64(m); }

std::set<std::string> declared_in(const For& loop) {
  struct Declared : IRVisitor {
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const For* op) override {
      names.insert(op->var);
      IRVisitor::visit(op);
    }
    void visit(const Let* op) override { names.insert(op->name); }
    void visit(const Decl* op) override { names.insert(op->name); }
    void visit(const Allocate* op) override { names.insert(op->name); }
    void visit(const BlockReduce* op) override { names.insert(op->name); }
  } d;
  d.visit(&loop);
  return d.names;
}

FreshNames::FreshNames(const Kernel& k) {
  for (const DimParam& d : k.dims) taken_.insert(d.name);
  for (const Param& p : k.params) taken_.insert(p.name);
  for (const Stmt& s : k.body) {
    std::set<std::string> w = writes(s);
    taken_.insert(w.begin(), w.end());
  }
}

std::string FreshNames::operator()(const std::string& base) {
  std::string name = base;
  for (int n = 2; taken_.count(name); ++n) name = base + std::to_string(n);
  taken_.insert(name);
  return name;
}

std::optional<uint64_t> loop_coefficient(const Expr& index, const std::string& var, const std::set<std::string>& inside) {
  if (!is_i64_scalar(index)) return std::nullopt;
  uint64_t k = 0;
  for (const auto& [key, term] : linearize(index).terms) {
    auto v = term.expr.as<Var>();
    if (v && v->name == var) k = term.coeff;
    else if (reads_any(term.expr, inside)) return std::nullopt;
  }
  return k;
}

Stmt strided_thread_loop(const For& f, Block body, const std::string& thread_var, int64_t threads, const Expr& first, const Expr& stride) {
  Expr t = index_var(thread_var);
  Expr lo = simplify(Binary::make(BinaryOp::Add, f.lo, Binary::make(BinaryOp::Mul, Binary::make(BinaryOp::Add, first, t), f.step)));
  Expr step = simplify(Binary::make(BinaryOp::Mul, stride, f.step));
  Stmt strided = make_for(f.var, lo, f.hi, step, std::move(body), LoopKind::Serial, 0, f.span);
  return make_for(thread_var, i64(0), i64(threads), i64(1), {strided}, LoopKind::GpuThread, 0, f.span);
}

ReduceOp reduce_op_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return ReduceOp::Sum;
    case BinaryOp::Mul: return ReduceOp::Product;
    case BinaryOp::Min: return ReduceOp::Min;
    default: return ReduceOp::Max;
  }
}

Expr fold_identity(BinaryOp op, DType t) {
  Scalar s = reduce_identity(reduce_op_of(op), t);
  return is_float(t) ? FloatImm::make(s.f, t) : IntImm::make(is_signed_int(t) ? s.i : static_cast<int64_t>(s.u), t);
}

BlockFold block_fold(const For& f, Block body, const std::vector<Partial>& partials, const std::vector<std::string>& totals,
                     const std::string& thread_var, int64_t threads, const Expr& first, const Expr& stride) {
  BlockFold out;
  Block thread_body;
  Expr t = index_var(thread_var);
  for (const Partial& p : partials) {
    out.arrays.push_back(make_allocate(p.part, Type::tensor(p.dtype, {i64(threads)}), MemorySpace::Shared, f.span));
    thread_body.push_back(make_decl(p.name, Type::scalar(p.dtype), fold_identity(p.op, p.dtype), f.span));
  }
  Stmt strided = strided_thread_loop(f, std::move(body), thread_var, threads, first, stride);
  thread_body.push_back(strided.as<For>()->body[0]);
  for (const Partial& p : partials) thread_body.push_back(make_store(p.part, {AxisSel::at(t)}, Var::make(p.name, Type::scalar(p.dtype)), f.span));
  out.threads = make_for(thread_var, i64(0), i64(threads), i64(1), std::move(thread_body), LoopKind::GpuThread, 0, f.span);
  for (size_t n = 0; n < partials.size(); ++n)
    out.reductions.push_back(make_block_reduce(totals[n], reduce_op_of(partials[n].op), partials[n].part, i64(threads), f.span));
  return out;
}

std::optional<Block> arg_block_fold(const For& f, ReduceOp op, const std::vector<Expr>& target, int64_t threads, FreshNames& fresh) {
  std::vector<const Yield*> yields = yields_in(f.body);
  if (yields.empty() || !is_arg_reduce(op)) return std::nullopt;
  DType vt = yields[0]->value->type.dtype;
  for (const Yield* y : yields)
    if (!y->index.defined() || y->value->type.dtype != vt) return std::nullopt;
  if (!is_float(vt) && !is_int(vt)) return std::nullopt;
  DType wt = vt == DType::F16 || vt == DType::BF16 ? DType::F32 : vt;
  Type w = Type::scalar(wt), i = Type::scalar(DType::I64);
  BinaryOp pick = op == ReduceOp::ArgMax ? BinaryOp::Max : BinaryOp::Min;
  const Expr none = i64(std::numeric_limits<int64_t>::max());  // no iteration yet
  static const auto is_nan = [](const Expr& e) { return Binary::make(BinaryOp::Ne, e, e); };
  std::string best = fresh("arg%best"), place = fresh("arg%place"), index = fresh("arg%index");
  Expr best_v = Var::make(best, w), place_v = Var::make(place, i);

  // Each yield becomes: take the value when it is this thread's first or
  // strictly better (a NaN best stays; a NaN value takes over).
  struct Update : IRMutator {
    Update(FreshNames& fresh, const For& f, Type w, Expr best_v, Expr place_v, std::string index, BinaryOp pick, Expr none)
        : fresh_(fresh), f_(f), w_(std::move(w)), best_v_(std::move(best_v)), place_v_(std::move(place_v)), index_(std::move(index)), pick_(pick), none_(std::move(none)) {}
    using IRMutator::mutate;
    Block mutate(const Block& b) override {
      Block out;
      for (const Stmt& s : b) {
        auto y = s.as<Yield>();
        if (!y) {
          if (Stmt r = IRMutator::mutate(s); r.defined()) out.push_back(r);
          continue;
        }
        std::string x = fresh_("arg%x");
        out.push_back(make_let(x, y->value->type.dtype == w_.dtype ? y->value : Cast::make(w_.dtype, y->value, y->span), y->span));
        Expr xv = Var::make(x, w_);
        Expr better = Binary::make(pick_ == BinaryOp::Max ? BinaryOp::Gt : BinaryOp::Lt, xv, best_v_);
        if (is_float(w_.dtype))
          better = both(Unary::make(UnaryOp::Not, is_nan(best_v_)), Binary::make(BinaryOp::Or, is_nan(xv), better));
        Expr first = Binary::make(BinaryOp::Eq, place_v_, none_);
        Expr index = y->index->type.dtype == DType::I64 ? y->index : Cast::make(DType::I64, y->index, y->span);
        out.push_back(make_if(Binary::make(BinaryOp::Or, first, better),
                              {make_assign(best_v_.as<Var>()->name, xv, y->span), make_assign(place_v_.as<Var>()->name, index_var(f_.var), y->span),
                               make_assign(index_, index, y->span)},
                              {}, y->span));
      }
      return out;
    }
    FreshNames& fresh_;
    const For& f_;
    Type w_;
    Expr best_v_, place_v_;
    std::string index_;
    BinaryOp pick_;
    Expr none_;
  } update(fresh, f, w, best_v, place_v, index, pick, none);
  Block body = update.mutate(f.body);

  std::string best_part = fresh("arg%best_part"), place_part = fresh("arg%place_part"), index_part = fresh("arg%index_part"),
              key_part = fresh("arg%key_part");
  std::string t = fresh(f.var + "%t"), t2 = fresh(f.var + "%t"), once = fresh("once%t");
  Type slots_w = Type::tensor(wt, {i64(threads)}), slots_i = Type::tensor(DType::I64, {i64(threads)});
  Block out = {make_allocate(best_part, slots_w, MemorySpace::Shared, f.span), make_allocate(place_part, slots_i, MemorySpace::Shared, f.span),
               make_allocate(index_part, slots_i, MemorySpace::Shared, f.span), make_allocate(key_part, slots_i, MemorySpace::Shared, f.span)};
  auto slot = [](const std::string& array, const Type& type, const std::string& thread) {
    return make_access(array, type, {AxisSel::at(index_var(thread))});
  };

  // Pass 1: each thread's first best, its place and index.
  Block mine = {make_decl(best, w, fold_identity(pick, wt), f.span), make_decl(place, i, none, f.span), make_decl(index, i, i64(0), f.span)};
  Stmt strided = strided_thread_loop(f, std::move(body), t, threads, i64(0), i64(threads));
  mine.push_back(strided.as<For>()->body[0]);
  mine.push_back(make_store(best_part, {AxisSel::at(index_var(t))}, best_v, f.span));
  mine.push_back(make_store(place_part, {AxisSel::at(index_var(t))}, place_v, f.span));
  mine.push_back(make_store(index_part, {AxisSel::at(index_var(t))}, Var::make(index, i), f.span));
  out.push_back(make_for(t, i64(0), i64(threads), i64(1), std::move(mine), LoopKind::GpuThread, 0, f.span));

  // Pass 2: the best value; the earliest place holding it.
  std::string top = fresh("arg%top"), first = fresh("arg%first");
  out.push_back(make_block_reduce(top, reduce_op_of(pick), best_part, i64(threads), f.span));
  Expr top_v = Var::make(top, w), b = slot(best_part, slots_w, t2), p = slot(place_part, slots_i, t2);
  Expr holds = Binary::make(BinaryOp::Eq, b, top_v);
  if (is_float(wt)) holds = Binary::make(BinaryOp::Or, holds, both(is_nan(b), is_nan(top_v)));
  Expr key = Select::make(both(Binary::make(BinaryOp::Ne, p, none), holds), p, none);
  out.push_back(make_for(t2, i64(0), i64(threads), i64(1), {make_store(key_part, {AxisSel::at(index_var(t2))}, key, f.span)},
                         LoopKind::GpuThread, 0, f.span));
  out.push_back(make_block_reduce(first, ReduceOp::Min, key_part, i64(threads), f.span));

  // The thread that met the earliest place holds its index.
  Expr first_v = index_var(first);
  Expr owner = simplify(mod((first_v - f.lo) / f.step, threads));
  Expr value = wt == vt ? top_v : Cast::make(vt, top_v);
  Stmt yield = make_yield(value, make_access(index_part, slots_i, {AxisSel::at(owner)}), target, f.span);
  Stmt if_any = make_if(Binary::make(BinaryOp::Ne, first_v, none), {yield}, {}, f.span);
  out.push_back(make_for(once, i64(0), i64(1), i64(1), {if_any}, LoopKind::GpuThread, 0, f.span));
  return out;
}

std::vector<const Yield*> yields_in(const Block& b) {
  struct Yields : IRVisitor {
    std::vector<const Yield*> found;
    using IRVisitor::visit;
    void visit(const Yield* op) override { found.push_back(op); }
  } y;
  y.include(b);
  return y.found;
}

std::optional<std::vector<Expr>> single_yield_target(const For& loop, bool indexed) {
  std::vector<const Yield*> yields = yields_in(loop.body);
  if (yields.empty()) return std::nullopt;
  std::set<std::string> inside = declared_in(loop);
  std::string first;
  for (const Yield* op : yields) {
    if (op->index.defined() != indexed) return std::nullopt;
    std::string text;
    for (const Expr& e : op->out_index) {
      if (reads_any(e, inside)) return std::nullopt;
      text += print(e) + ";";
    }
    if (op != yields[0] && text != first) return std::nullopt;
    first = text;
  }
  return yields[0]->out_index;
}

bool only_yields(const For& loop) {
  struct Check : IRVisitor {
    std::set<std::string> inside;
    bool ok = true;
    using IRVisitor::visit;
    void visit(const Store*) override { ok = false; }
    void visit(const Atomic*) override { ok = false; }
    void visit(const Barrier*) override { ok = false; }
    void visit(const BlockReduce*) override { ok = false; }
    void visit(const MatMulBlock*) override { ok = false; }
    void visit(const AsyncCopy*) override { ok = false; }
    void visit(const Allocate* op) override { ok = ok && op->space != MemorySpace::Shared; }
    void visit(const Assign* op) override {
      ok = ok && inside.count(op->name);
      IRVisitor::visit(op);
    }
  } c;
  c.inside = declared_in(loop);
  c.include(loop.body);
  return c.ok;
}

std::optional<SingleElementFold> single_element_fold(const Kernel& k, bool indexed, std::string* why_not) {
  auto fail = [&](std::string why) -> std::optional<SingleElementFold> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  auto loop = k.body.size() == 1 ? k.body[0].as<For>() : nullptr;
  if (!loop || loop->loop_kind != LoopKind::Serial) return fail("the kernel is not one serial loop");
  Stmt merged = merge_loop_nest(k.body[0], LoopKind::Serial);
  const For& f = *merged.as<For>();
  std::optional<std::vector<Expr>> target = single_yield_target(f, indexed);
  if (!target) return fail("the loop does not yield to one output element");
  if (!only_yields(f)) return fail("the loop does more than yield");
  return SingleElementFold{merged, *target};
}

Block yields_into(const Block& body, const std::string& partial, BinaryOp op, DType partial_dtype) {
  struct Fold : IRMutator {
    std::string partial;
    BinaryOp op;
    DType t;
    using IRMutator::visit;
    Stmt visit(const Yield* y) override {
      Expr v = y->value->type.dtype == t ? y->value : Cast::make(t, y->value, y->span);
      return make_assign(partial, Binary::make(op, Var::make(partial, Type::scalar(t), y->span), v, y->span), y->span);
    }
  } fold;
  fold.partial = partial;
  fold.op = op;
  fold.t = partial_dtype;
  return fold.mutate(body);
}

}  // namespace zyntax::cir
