#include "cir/passes/gpu_loops.hpp"

#include "cir/affine.hpp"
#include "cir/mutator.hpp"
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
  thread_body.push_back(strided_thread_loop(f, std::move(body), thread_var, threads, first, stride).as<For>()->body[0]);
  for (const Partial& p : partials) thread_body.push_back(make_store(p.part, {AxisSel::at(t)}, Var::make(p.name, Type::scalar(p.dtype)), f.span));
  out.threads = make_for(thread_var, i64(0), i64(threads), i64(1), std::move(thread_body), LoopKind::GpuThread, 0, f.span);
  for (size_t n = 0; n < partials.size(); ++n)
    out.reductions.push_back(make_block_reduce(totals[n], reduce_op_of(partials[n].op), partials[n].part, i64(threads), f.span));
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

std::optional<std::vector<Expr>> single_yield_target(const For& loop) {
  std::vector<const Yield*> yields = yields_in(loop.body);
  if (yields.empty()) return std::nullopt;
  std::set<std::string> inside = declared_in(loop);
  std::string first;
  for (const Yield* op : yields) {
    if (op->index.defined()) return std::nullopt;
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
