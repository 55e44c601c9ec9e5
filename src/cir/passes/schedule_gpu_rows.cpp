#include "cir/passes/schedule_gpu_rows.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cir/affine.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/gpu_loops.hpp"
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

// A check of an inner loop's body, run over the body.
class LoopCheck : public IRVisitor {
 public:
  explicit LoopCheck(const For& loop) : loop_(loop), inside_(declared_in(loop)) {}

  bool run() {
    include(loop_.body);
    return ok_;
  }

  using IRVisitor::visit;

 protected:
  const For& loop_;
  std::set<std::string> inside_;  // the names the loop declares
  bool ok_ = true;
};

// A check that statements no inner loop of a row may hold (yields, atomics,
// GPU statements, shared arrays, register blocks) fail.
class InnerLoopCheck : public LoopCheck {
 public:
  explicit InnerLoopCheck(const For& loop) : LoopCheck(loop) {}
  using LoopCheck::visit;

 protected:
  void visit(const Allocate* op) override {
    if (op->space == MemorySpace::Shared) ok_ = false;
  }
  void visit(const Yield*) override { ok_ = false; }
  void visit(const Atomic*) override { ok_ = false; }
  void visit(const Barrier*) override { ok_ = false; }
  void visit(const BlockReduce*) override { ok_ = false; }
  void visit(const MatMulBlock*) override { ok_ = false; }
  void visit(const AsyncCopy*) override { ok_ = false; }
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
class Contiguous : public LoopCheck {
 public:
  Contiguous(const For& loop, const Kernel& k) : LoopCheck(loop) {
    for (const Param& p : k.params) params_.insert(p.name);
  }
  using LoopCheck::visit;

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
  FoldCheck(const For& loop, const std::map<std::string, DType>& row_vars) : InnerLoopCheck(loop), row_vars_(row_vars) {}

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
  const std::map<std::string, DType>& row_vars_;
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
  RowScheduler(const Kernel& k, int threads) : k_(k), threads_(threads), fresh(k) {}

  std::optional<Kernel> run(std::string* why_not) {
    auto fail = [&](std::string why) -> std::optional<Kernel> {
      if (why_not) *why_not = std::move(why);
      return std::nullopt;
    };
    if (k_.kind == KernelKind::Reduce && !reduce_binary_op(k_.reduce_op) && !is_arg_reduce(k_.reduce_op))
      return fail(std::string("a reduce(") + reduce_op_name(k_.reduce_op) + ") kernel: block reductions fold with + * min max argmin argmax");
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
    std::map<std::string, DType> row_vars;  // the row's scalar vars
    bool shared = false;
    int loops = 0;
    for (const Stmt& s : body) {
      if (s->kind == StmtKind::Decl) {
        if (!s.as<Decl>()->type.is_scalar()) return give_up("a tile var in the row");
        row_vars[s.as<Decl>()->name] = s.as<Decl>()->type.dtype;
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
        for (const auto& [v, dtype] : row_vars)
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
      if (k_.kind == KernelKind::Reduce) {
        if (!yield_loop(f, out)) return give_up("an inner loop of a reduce kernel that does more than yield to one element");
        shared = true;
        continue;
      }
      std::vector<std::pair<std::string, BinaryOp>> folds = FoldCheck(f, row_vars).folds();
      if (!folds.empty()) {
        fold_loop(f, folds, row_vars, out);
        shared = true;
        continue;
      }
      if (!Independence(f, k_.output().name).run()) return give_up("an inner loop that is neither a fold nor independent iterations writing the output");
      emit(out, strided_thread_loop(f, f.body, fresh(f.var + "%t"), threads_, i64(0), i64(threads_)));
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

  // The loop shared out over the block's threads (block_fold), its thread
  // loop placed after any barrier the output's accesses need: the totals.
  std::vector<std::string> block_fold(const For& f, Block body, const std::vector<Partial>& partials, Block& out) {
    std::vector<std::string> totals;
    for (const Partial& p : partials) totals.push_back(fresh(p.name + "%all"));
    BlockFold fold = cir::block_fold(f, std::move(body), partials, totals, fresh(f.var + "%t"), threads_, i64(0), i64(threads_));
    out.insert(out.end(), fold.arrays.begin(), fold.arrays.end());
    emit(out, fold.threads);
    out.insert(out.end(), fold.reductions.begin(), fold.reductions.end());
    // The block reduction's barriers order every access made before it.
    out_written_ = out_read_ = false;
    return totals;
  }

  // A fold loop: each var folded through a partial, then combined with the
  // block's total.
  void fold_loop(const For& f, const std::vector<std::pair<std::string, BinaryOp>>& folds, const std::map<std::string, DType>& row_vars,
                 Block& out) {
    std::map<std::string, std::string> partial_of;
    std::vector<Partial> partials;
    for (const auto& [var, op] : folds) {
      partial_of[var] = fresh(var + "%p");
      partials.push_back({partial_of[var], fresh(var + "%part"), op, row_vars.at(var)});
    }
    std::vector<std::string> totals = block_fold(f, Rename(partial_of).mutate(f.body), partials, out);
    for (size_t n = 0; n < folds.size(); ++n) {
      const auto& [var, op] = folds[n];
      Type t = Type::scalar(partials[n].dtype);
      out.push_back(make_assign(var, Binary::make(op, Var::make(var, t), Var::make(totals[n], t)), f.span));
    }
  }

  // A reduce kernel's loop yielding to one output element: its values
  // folded through a partial in the accumulator's dtype, the block's total
  // yielded once.
  bool yield_loop(const For& f, Block& out) {
    bool arg = is_arg_reduce(k_.reduce_op);
    std::optional<std::vector<Expr>> target = single_yield_target(f, arg);
    if (!target || !only_yields(f)) return false;
    if (arg) {
      std::optional<Block> fold = arg_block_fold(f, k_.reduce_op, *target, threads_, fresh);
      if (!fold) return false;
      for (const Stmt& s : *fold) emit(out, s);
      out_written_ = out_read_ = false;  // the block reductions' barriers order what came before
      return true;
    }
    BinaryOp op = *reduce_binary_op(k_.reduce_op);
    DType acc = reduce_accumulator_dtype(k_.reduce_op, k_.output().type.dtype);
    Partial p{fresh("yield%p"), fresh("yield%part"), op, acc};
    std::string total = block_fold(f, yields_into(f.body, p.name, op, acc), {p}, out)[0];
    Stmt yield = make_yield(Var::make(total, Type::scalar(acc)), Expr(), *target, f.span);
    out.push_back(make_for(fresh("once%t"), i64(0), i64(1), i64(1), {yield}, LoopKind::GpuThread, 0, f.span));
    return true;
  }

  std::optional<Block> give_up(std::string why) {
    why_ = std::move(why);
    return std::nullopt;
  }

  const Kernel& k_;
  int threads_;
  FreshNames fresh;
  std::string why_;
  bool out_written_ = false, out_read_ = false;  // by some thread since the last barrier
};

}  // namespace

std::optional<Kernel> schedule_gpu_rows(const Kernel& k, int threads, std::string* why_not) {
  return RowScheduler(k, threads).run(why_not);
}

}  // namespace zyntax::cir
