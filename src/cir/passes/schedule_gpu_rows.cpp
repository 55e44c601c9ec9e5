#include "cir/passes/schedule_gpu_rows.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cir/affine.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// `v = v op e` (or `op(v, e)`, either operand order) with op one of + * min
// max and e not reading v: the op and e.
struct FoldStep {
  BinaryOp op;
  Expr operand;
};

std::optional<FoldStep> fold_step(const Assign& a) {
  auto is_acc = [&](const Expr& e) { return e.as<Var>() && e.as<Var>()->name == a.name; };
  Expr x, y;
  std::optional<BinaryOp> op;
  if (auto b = a.value.as<Binary>()) {
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Mul || b->op == BinaryOp::Min || b->op == BinaryOp::Max) op = b->op;
    x = b->a, y = b->b;
  } else if (auto m = a.value.as<Math>(); m && m->args.size() == 2 && (m->fn == MathFn::Min || m->fn == MathFn::Max)) {
    op = m->fn == MathFn::Min ? BinaryOp::Min : BinaryOp::Max;
    x = m->args[0], y = m->args[1];
  }
  if (!op) return std::nullopt;
  Expr operand = is_acc(x) ? y : is_acc(y) ? x : Expr();
  if (!operand.defined() || reads_any(operand, {a.name}) || operand->type.dtype != a.value->type.dtype) return std::nullopt;
  return FoldStep{*op, operand};
}

ReduceOp reduce_op_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return ReduceOp::Sum;
    case BinaryOp::Mul: return ReduceOp::Product;
    case BinaryOp::Min: return ReduceOp::Min;
    default: return ReduceOp::Max;
  }
}

Expr identity_of(BinaryOp op, DType t) {
  Scalar s = reduce_identity(reduce_op_of(op), t);
  return is_float(t) ? FloatImm::make(s.f, t) : IntImm::make(is_signed_int(t) ? s.i : static_cast<int64_t>(s.u), t);
}

// The names a loop declares: its variable, and its lets, vars, loops and
// arrays at any depth.
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

// index = k * var + (terms reading nothing the loop declares): k; nothing
// when another term reads what the loop declares.
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

// A check of an inner loop's body. Statements no inner loop of a row may
// hold (yields, atomics, GPU statements, shared arrays, register blocks)
// fail every check.
class InnerLoopCheck : public IRVisitor {
 public:
  explicit InnerLoopCheck(const For& loop) : loop_(loop), inside_(declared_in(loop)) {}

  bool run() {
    include(loop_.body);
    return ok_;
  }

  using IRVisitor::visit;

 protected:
  void visit(const Allocate* op) override {
    if (op->space == MemorySpace::Shared) ok_ = false;
  }
  void visit(const Yield*) override { ok_ = false; }
  void visit(const Atomic*) override { ok_ = false; }
  void visit(const Barrier*) override { ok_ = false; }
  void visit(const BlockReduce*) override { ok_ = false; }
  void visit(const MatMulBlock*) override { ok_ = false; }

  const For& loop_;
  std::set<std::string> inside_;  // the names the loop declares
  bool ok_ = true;
};

// Whether the iterations of an output loop are independent: no var from
// outside assigned, nothing but `out` and its own arrays stored to, `out`
// never read, and every store to `out` at an index that moves with the loop
// variable (so two iterations never write one element).
class Independence : public InnerLoopCheck {
 public:
  Independence(const For& loop, std::string out) : InnerLoopCheck(loop), out_(std::move(out)) {}
  using InnerLoopCheck::visit;

 protected:
  void visit(const Assign* op) override {
    if (!inside_.count(op->name)) ok_ = false;
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    if (op->buffer == out_) {
      bool moves = false;
      for (const AxisSel& a : op->axes) moves = moves || (!a.is_slice && loop_coefficient(a.index, loop_.var, inside_).value_or(0) != 0);
      ok_ = ok_ && moves;
    } else if (!inside_.count(op->buffer)) {
      ok_ = false;
    }
    IRVisitor::visit(op);
  }
  void visit(const Access* op) override {
    if (op->buffer == out_) ok_ = false;
    IRVisitor::visit(op);
  }

 private:
  std::string out_;
};

// Whether every access of a param (input or output) whose index moves with
// the loop moves along its last axis, one element per iteration: then the
// threads of a warp, taking consecutive iterations, touch consecutive
// elements. (Where an access moves along another axis, a thread per row
// reads the rows side by side and coalesces better.)
class Contiguous : public InnerLoopCheck {
 public:
  Contiguous(const For& loop, const Kernel& k) : InnerLoopCheck(loop) {
    for (const Param& p : k.params) params_.insert(p.name);
  }
  using InnerLoopCheck::visit;

 protected:
  void visit(const Access* op) override {
    check(op->axes, params_.count(op->buffer) > 0);
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    check(op->axes, params_.count(op->buffer) > 0);
    IRVisitor::visit(op);
  }

 private:
  void check(const std::vector<AxisSel>& axes, bool param) {
    if (!param || axes.empty()) return;
    bool moves = false;
    for (const AxisSel& a : axes) moves = moves || a.is_slice || reads_any(a.index, inside_);
    if (!moves) return;
    for (size_t i = 0; i + 1 < axes.size(); ++i)
      if (axes[i].is_slice || reads_any(axes[i].index, inside_)) return void(ok_ = false);
    const AxisSel& last = axes.back();
    ok_ = ok_ && !last.is_slice && loop_coefficient(last.index, loop_.var, inside_) == std::optional<uint64_t>(1);
  }

  std::set<std::string> params_;
};

// What a fold loop's body does: which row vars it folds, with which op, and
// whether it keeps to the rules (no stores, the vars assigned only by fold
// steps, read nowhere else, names of its own assigned freely).
class FoldCheck : public InnerLoopCheck {
 public:
  FoldCheck(const For& loop, const std::set<std::string>& row_vars) : InnerLoopCheck(loop), row_vars_(row_vars) {}

  // The folded vars and their ops, in order of first fold; empty if the
  // loop is not a fold.
  std::vector<std::pair<std::string, BinaryOp>> folds() {
    if (!run()) return {};
    for (const std::vector<Expr>* exprs : {&operands_, &others_})
      for (const Expr& e : *exprs)
        if (reads_any(e, accs_)) return {};
    return folds_;
  }

  using InnerLoopCheck::visit;

 protected:
  void visit(const Assign* op) override {
    if (!row_vars_.count(op->name)) {
      if (!inside_.count(op->name)) ok_ = false;
      others_.push_back(op->value);
      return;
    }
    std::optional<FoldStep> step = fold_step(*op);
    if (!step || op->value->type.dtype == DType::Bool) {
      ok_ = false;
      return;
    }
    auto it = std::find_if(folds_.begin(), folds_.end(), [&](const auto& f) { return f.first == op->name; });
    if (it == folds_.end()) folds_.push_back({op->name, step->op});
    else if (it->second != step->op) ok_ = false;
    accs_.insert(op->name);
    operands_.push_back(step->operand);
  }
  // Every other expression is collected to check, once all vars are known,
  // that none reads a folded var.
  void visit(const Let* op) override { others_.push_back(op->value); }
  void visit(const Decl* op) override {
    if (op->init.defined()) others_.push_back(op->init);
  }
  void visit(const If* op) override {
    others_.push_back(op->cond);
    include(op->then_body);
    include(op->else_body);
  }
  void visit(const For* op) override {
    others_.insert(others_.end(), {op->lo, op->hi, op->step});
    include(op->body);
  }
  void visit(const Check* op) override { others_.push_back(op->cond); }
  void visit(const Store*) override { ok_ = false; }

 private:
  const std::set<std::string>& row_vars_;
  std::vector<std::pair<std::string, BinaryOp>> folds_;
  std::set<std::string> accs_;
  std::vector<Expr> operands_, others_;
};

// Renames vars, assignment targets included.
class Rename : public IRMutator {
 public:
  explicit Rename(std::map<std::string, std::string> names) : names_(std::move(names)) {}
  using IRMutator::visit;

 protected:
  Expr visit(const Var* op) override {
    auto it = names_.find(op->name);
    return it == names_.end() ? IRMutator::visit(op) : Var::make(it->second, op->type, op->span);
  }
  Stmt visit(const Assign* op) override {
    Expr v = mutate(op->value);
    auto it = names_.find(op->name);
    return make_assign(it == names_.end() ? op->name : it->second, v, op->span);
  }

 private:
  std::map<std::string, std::string> names_;
};

// Statements with no loop, allocation or GPU statement inside.
bool straight_line(const Block& b) {
  for (const Stmt& s : b) {
    if (auto i = s.as<If>()) {
      if (!straight_line(i->then_body) || !straight_line(i->else_body)) return false;
    } else if (s->kind != StmtKind::Let && s->kind != StmtKind::Decl && s->kind != StmtKind::Assign && s->kind != StmtKind::Store &&
               s->kind != StmtKind::Check) {
      return false;
    }
  }
  return true;
}

bool has_store(const Stmt& s) {
  if (s.as<Store>()) return true;
  if (auto i = s.as<If>()) {
    for (const Stmt& t : i->then_body) if (has_store(t)) return true;
    for (const Stmt& t : i->else_body) if (has_store(t)) return true;
  }
  return false;
}

class RowScheduler {
 public:
  RowScheduler(const Kernel& k, int threads) : k_(k), threads_(threads) {
    for (const DimParam& d : k.dims) taken_.insert(d.name);
    for (const Param& p : k.params) taken_.insert(p.name);
    for (const Stmt& s : k.body) {
      std::set<std::string> w = writes(s);
      taken_.insert(w.begin(), w.end());
    }
  }

  std::optional<Kernel> run(std::string* why_not) {
    auto fail = [&](std::string why) -> std::optional<Kernel> {
      if (why_not) *why_not = std::move(why);
      return std::nullopt;
    };
    if (k_.kind == KernelKind::Reduce) return fail("reduce kernels fold into one accumulator per output element");
    auto outer = k_.body.size() == 1 ? k_.body[0].as<For>() : nullptr;
    if (!outer || outer->loop_kind != LoopKind::Parallel) return fail("the kernel is not one parallel loop");
    std::optional<Block> body = row(outer->body);
    if (!body) return fail(why_);
    Kernel out = k_;
    out.body = {make_for(outer->var, outer->lo, outer->hi, outer->step, std::move(*body), LoopKind::GpuBlock, 0, outer->span)};
    verify_or_throw(out, "schedule_gpu_rows");
    return out;
  }

 private:
  std::optional<Block> row(const Block& body) {
    Block out;
    std::set<std::string> row_vars;
    bool shared = false;
    int loops = 0;
    for (const Stmt& s : body) {
      if (s->kind == StmtKind::Decl) {
        if (!s.as<Decl>()->type.is_scalar()) return give_up("a tile var in the row");
        row_vars.insert(s.as<Decl>()->name);
        emit(out, s);
        continue;
      }
      if (s->kind != StmtKind::For) {
        if (!straight_line({s})) return give_up("a row statement other than loops and straight-line code");
        if (!has_store(s)) {
          emit(out, s);  // every thread computes the same values
          continue;
        }
        // Stores made once, by the block's first thread.
        std::set<std::string> assigned = writes(s);
        for (const std::string& v : row_vars)
          if (assigned.count(v)) return give_up("a row statement that both stores and assigns a var");
        emit(out, make_for(fresh("once%t"), i64(0), i64(1), i64(1), {s}, LoopKind::GpuThread, 0, s->span));
        continue;
      }
      const For& f = *s.as<For>();
      if (f.loop_kind != LoopKind::Serial && f.loop_kind != LoopKind::Vectorized && f.loop_kind != LoopKind::Unrolled)
        return give_up("an inner loop already scheduled");
      if (!is_i64_scalar(f.lo) || !is_i64_scalar(f.hi) || !is_i64_scalar(f.step)) return give_up("an inner loop with bounds that are not i64");
      ++loops;
      if (!Contiguous(f, k_).run()) return give_up("an inner loop that reads or writes across rows rather than along them");
      std::vector<std::pair<std::string, BinaryOp>> folds = FoldCheck(f, row_vars).folds();
      if (!folds.empty()) {
        fold_loop(f, folds, out);
        shared = true;
        continue;
      }
      if (!Independence(f, k_.output().name).run()) return give_up("an inner loop that is neither a fold nor independent iterations writing the output");
      emit(out, thread_loop(f, f.body));
    }
    if (loops == 0) return give_up("no inner loop to share out");
    // The next row writes the shared arrays again.
    if (shared) out.push_back(make_barrier());
    return out;
  }

  // Appends a statement, after a barrier where it touches the output that
  // another thread may have written, or writes what another may have read,
  // since the last barrier.
  void emit(Block& out, const Stmt& s) {
    const std::string& name = k_.output().name;
    bool r = reads(s).count(name) > 0, w = writes(s).count(name) > 0;
    if (((r || w) && out_written_) || (w && out_read_)) {
      out.push_back(make_barrier(FenceScope::Block, s->span));
      out_written_ = out_read_ = false;
    }
    out_written_ = out_written_ || w;
    out_read_ = out_read_ || r;
    out.push_back(s);
  }

  // A fold loop as per-thread partial folds, one shared array and one
  // block_reduce per var, then the var combined with the block's result.
  void fold_loop(const For& f, const std::vector<std::pair<std::string, BinaryOp>>& folds, Block& out) {
    std::map<std::string, std::string> partial_of;
    std::vector<std::string> parts;
    Block thread_body;
    for (const auto& [var, op] : folds) {
      DType t = type_of(f, var);
      parts.push_back(fresh(var + "%part"));
      partial_of[var] = fresh(var + "%p");
      out.push_back(make_allocate(parts.back(), Type::tensor(t, {i64(threads_)}), MemorySpace::Shared, f.span));
      thread_body.push_back(make_decl(partial_of[var], Type::scalar(t), identity_of(op, t), f.span));
    }
    Stmt loop = thread_loop(f, Rename(partial_of).mutate(f.body));
    auto tl = loop.as<For>();
    thread_body.push_back(tl->body[0]);
    Expr tv = Var::make(tl->var, Type::scalar(DType::I64));
    for (size_t n = 0; n < folds.size(); ++n) {
      DType t = type_of(f, folds[n].first);
      thread_body.push_back(make_store(parts[n], {AxisSel::at(tv)}, Var::make(partial_of[folds[n].first], Type::scalar(t)), f.span));
    }
    emit(out, make_for(tl->var, tl->lo, tl->hi, tl->step, std::move(thread_body), LoopKind::GpuThread, 0, f.span));
    for (size_t n = 0; n < folds.size(); ++n) {
      const auto& [var, op] = folds[n];
      DType t = type_of(f, var);
      std::string total = fresh(var + "%all");
      out.push_back(make_block_reduce(total, reduce_op_of(op), parts[n], i64(threads_), f.span));
      out.push_back(make_assign(var, Binary::make(op, Var::make(var, Type::scalar(t)), Var::make(total, Type::scalar(t))), f.span));
    }
    // The block reduction's barriers order every access made before it.
    out_written_ = out_read_ = false;
  }

  // The dtype of a var a loop folds (from its first assignment).
  static DType type_of(const For& f, const std::string& var) {
    struct Find : IRVisitor {
      const std::string& var;
      std::optional<DType> t;
      explicit Find(const std::string& v) : var(v) {}
      using IRVisitor::visit;
      void visit(const Assign* op) override {
        if (op->name == var && !t) t = op->value->type.dtype;
      }
    } find(var);
    find.include(f.body);
    return find.t.value_or(DType::F32);
  }

  // gpu_thread for t in 0..T: for v in lo + t*step..hi step T*step: body
  Stmt thread_loop(const For& f, Block body) {
    std::string t = fresh(f.var + "%t");
    Expr tv = Var::make(t, Type::scalar(DType::I64));
    Expr lo = simplify(Binary::make(BinaryOp::Add, f.lo, Binary::make(BinaryOp::Mul, tv, f.step)));
    Expr step = simplify(Binary::make(BinaryOp::Mul, i64(threads_), f.step));
    Stmt strided = make_for(f.var, lo, f.hi, step, std::move(body), LoopKind::Serial, 0, f.span);
    return make_for(t, i64(0), i64(threads_), i64(1), {strided}, LoopKind::GpuThread, 0, f.span);
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int n = 2; taken_.count(name); ++n) name = base + std::to_string(n);
    taken_.insert(name);
    return name;
  }

  std::optional<Block> give_up(std::string why) {
    why_ = std::move(why);
    return std::nullopt;
  }

  const Kernel& k_;
  int threads_;
  std::set<std::string> taken_;
  std::string why_;
  bool out_written_ = false, out_read_ = false;  // by some thread since the last barrier
};

}  // namespace

std::optional<Kernel> schedule_gpu_rows(const Kernel& k, int threads, std::string* why_not) {
  return RowScheduler(k, threads).run(why_not);
}

}  // namespace zyntax::cir
