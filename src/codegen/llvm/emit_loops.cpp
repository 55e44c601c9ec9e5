#include "codegen/llvm/emitter.hpp"
#include "codegen/llvm/loop_metadata.hpp"

#include <llvm/IR/MDBuilder.h>

#include <algorithm>

#include "cir/affine.hpp"
#include "cir/equal.hpp"
#include "cir/reads.hpp"
#include "cir/visitor.hpp"

namespace zyntax::codegen {

namespace {

using cir::Expr;

bool has_async_copies(const cir::For& f) {
  struct Find : cir::IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const cir::AsyncCopy*) override { found = true; }
  } find;
  find.include(f.body);
  return find.found;
}

// Whether a GPU block loop holds a warpgroup product: a persistent block
// that strides over its tiles itself, launched one block per iteration.
bool has_warpgroup_product(const cir::For& f) {
  struct Find : cir::IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const cir::WarpgroupProduct*) override { found = true; }
    void visit(const cir::WarpgroupAttention*) override { found = true; }
  } find;
  find.include(f.body);
  return find.found;
}

// Integer arithmetic that cannot fault: no memory, no division by a variable.
bool hoistable(const Expr& e) {
  switch (e->kind) {
    case cir::ExprKind::IntImm:
    case cir::ExprKind::Var: return is_int(e->type.dtype);
    case cir::ExprKind::Cast: return is_int(e->type.dtype) && hoistable(e.as<cir::Cast>()->value);
    case cir::ExprKind::Unary: return e.as<cir::Unary>()->op == UnaryOp::Neg && hoistable(e.as<cir::Unary>()->a);
    case cir::ExprKind::Binary: {
      auto b = e.as<cir::Binary>();
      switch (b->op) {
        case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: case BinaryOp::Min: case BinaryOp::Max:
          return hoistable(b->a) && hoistable(b->b);
        case BinaryOp::Div: case BinaryOp::Mod: {
          auto c = b->b.as<cir::IntImm>();
          return c && c->value > 0 && hoistable(b->a);
        }
        default: return false;
      }
    }
    default: return false;
  }
}

// idx = c * var + (terms fixed before the loop), |c| < 2^31.
bool affine_in(const Expr& idx, const std::string& var, const std::set<std::string>& bound) {
  if (!cir::is_i64_scalar(idx) || !hoistable(idx)) return false;
  cir::Affine form = cir::linearize(idx);
  for (const auto& [key, term] : form.terms) {
    auto v = term.expr.as<cir::Var>();
    if (v && v->name == var) {
      int64_t c = static_cast<int64_t>(term.coeff);
      if (c <= -(int64_t{1} << 31) || c >= (int64_t{1} << 31)) return false;
    } else if (cir::reads_any(term.expr, bound)) {
      return false;
    }
  }
  return true;
}

}  // namespace

void Emitter::emit_for(const cir::For& f, bool outer) {
  llvm::Value* stride = b_.getInt64(1);
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Value* lo = b_.CreateSExt(expr(f.lo), i64);
  llvm::Value* hi = b_.CreateSExt(expr(f.hi), i64);
  llvm::Value* step = b_.CreateSExt(expr(f.step), i64);
  if (!f.step.as<cir::IntImm>()) check(b_.CreateICmpSGT(step, b_.getInt64(0)), f.span, "loop step must be positive");
  // (hi - lo - 1) / step + 1 in unsigned arithmetic: exact for any range and
  // step (hi - lo + step - 1 would overflow near 2^63). Counts past 2^63 read
  // as unsigned wherever they are compared.
  llvm::Value* span = b_.CreateSub(hi, lo);
  llvm::Value* trips = b_.CreateSelect(b_.CreateICmpSGT(hi, lo),
                                       b_.CreateAdd(b_.CreateUDiv(b_.CreateSub(span, b_.getInt64(1)), step), b_.getInt64(1)),
                                       b_.getInt64(0));
  llvm::Value* first = b_.getInt64(0);
  bool gpu_loop = gpu_ && (f.loop_kind == cir::LoopKind::GpuBlock || f.loop_kind == cir::LoopKind::GpuThread);
  if (gpu_loop) {
    // Block loops stride over the grid's blocks, thread loops over the block's threads.
    bool block = f.loop_kind == cir::LoopKind::GpuBlock;
    first = gpu_coordinate(block ? cir::GpuIndexKind::BlockIdx : cir::GpuIndexKind::ThreadIdx, f.factor);
    stride = gpu_coordinate(block ? cir::GpuIndexKind::GridDim : cir::GpuIndexKind::BlockDim, f.factor);
    // A thread's asynchronous copies and groups are its own: one iteration each.
    if (!block && has_async_copies(f))
      check(b_.CreateICmpEQ(trips, stride), f.span, "a GPU thread loop with asynchronous copies has not one iteration per thread of the block");
    // A persistent block runs its iteration once, with no loop around it
    // (the register reallocation of a warpgroup product's roles needs
    // straight-line code around them).
    if (block && has_warpgroup_product(f)) {
      check(b_.CreateICmpEQ(trips, stride), f.span, "a GPU block loop of a warpgroup product has not one iteration per block of the grid");
      gpu_block_depth_ += 1;
      llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "block.once." + f.var, fn_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "block.done." + f.var, fn_);
      b_.CreateCondBr(b_.CreateICmpULT(first, trips), body, done);
      b_.SetInsertPoint(body);
      values_[f.var] = b_.CreateAdd(lo, b_.CreateMul(first, step), f.var);
      this->block(f.body);
      gpu_block_depth_ -= 1;
      if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
      b_.SetInsertPoint(done);
      return;
    }
  } else if (outer && gpu_) {
    first = global_thread_;
    stride = thread_count_;
  } else if (outer) {
    first = b_.CreateSelect(b_.CreateICmpSGT(begin_, first), begin_, first);
    trips = b_.CreateSelect(b_.CreateICmpULT(end_, trips), end_, trips);
  }
  std::vector<Site> sites = outer ? std::vector<Site>{} : provable_sites(f);
  gpu_block_depth_ += f.loop_kind == cir::LoopKind::GpuBlock;
  gpu_thread_depth_ += f.loop_kind == cir::LoopKind::GpuThread;
  struct Leave {
    int& blocks;
    int& threads;
    const cir::For& f;
    ~Leave() {
      blocks -= f.loop_kind == cir::LoopKind::GpuBlock;
      threads -= f.loop_kind == cir::LoopKind::GpuThread;
    }
  } leave{gpu_block_depth_, gpu_thread_depth_, f};
  if (sites.empty()) return emit_loop(f, lo, step, first, trips, stride);

  // Versioned: when every index is in bounds at the first and the last
  // iteration (and so, being affine in the loop variable, at all of them),
  // a copy of the loop without bounds checks runs, which can vectorise.
  llvm::Value* ok = in_bounds_at_ends(f, sites, lo, step, first, trips);
  llvm::BasicBlock* fast = llvm::BasicBlock::Create(ctx_, "for.unchecked." + f.var, fn_);
  llvm::BasicBlock* slow = llvm::BasicBlock::Create(ctx_, "for.checked." + f.var, fn_);
  llvm::BasicBlock* merged = llvm::BasicBlock::Create(ctx_, "for.merged." + f.var, fn_);
  b_.CreateCondBr(ok, fast, slow, llvm::MDBuilder(ctx_).createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(fast);
  for (const Site& s : sites) proven_.insert(s.first);
  emit_loop(f, lo, step, first, trips, stride);
  for (const Site& s : sites) proven_.erase(s.first);
  if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(merged);
  b_.SetInsertPoint(slow);
  emit_loop(f, lo, step, first, trips, stride, true);
  if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(merged);
  b_.SetInsertPoint(merged);
}

// Iterations first, first + stride, ... below trips.
void Emitter::emit_loop(const cir::For& f, llvm::Value* lo, llvm::Value* step, llvm::Value* first, llvm::Value* trips,
               llvm::Value* stride, bool checked) {
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "for.head." + f.var, fn_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "for.body." + f.var, fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "for.end." + f.var, fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* k = b_.CreatePHI(i64, 2, "k." + f.var);
  k->addIncoming(first, pre);
  b_.CreateCondBr(b_.CreateICmpULT(k, trips), body, done);
  b_.SetInsertPoint(body);
  values_[f.var] = b_.CreateAdd(lo, b_.CreateMul(k, step), f.var);
  unsigned before = fn_->getInstructionCount();
  block(f.body);
  if (!b_.GetInsertBlock()->getTerminator()) {
    llvm::Value* next = b_.CreateAdd(k, stride);
    k->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* latch = b_.CreateBr(header);
    // LLVM's loop vectoriser takes time quadratic in a loop's size (a sum of
    // 400 exp terms: 6 s): past this size a loop stays scalar, so that
    // compile time grows linearly with a kernel's expression.
    constexpr unsigned kMaxVectorizedBody = 12000;
    if (fn_->getInstructionCount() - before > kMaxVectorizedBody)
      latch->setMetadata(llvm::LLVMContext::MD_loop, no_vectorize_hint());
    else if (f.loop_kind == cir::LoopKind::Vectorized && f.factor > 1 && target_.vectorize_hints() && !checked)
      latch->setMetadata(llvm::LLVMContext::MD_loop, vectorize_hint(f.factor));
    if (f.loop_kind == cir::LoopKind::Unrolled) latch->setMetadata(llvm::LLVMContext::MD_loop, unroll_metadata(ctx_, f.factor));
  }
  b_.SetInsertPoint(done);
}

// Loop metadata asking for vectors of `width` lanes and no interleaving: a
// schedule marks short loops (a few vectors long) this way, which the cost
// model would otherwise interleave past their trip count.
llvm::MDNode* Emitter::no_vectorize_hint() {
  llvm::Metadata* off = llvm::ConstantAsMetadata::get(b_.getFalse());
  llvm::SmallVector<llvm::Metadata*, 2> ops = {nullptr, llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"), off})};
  llvm::MDNode* node = llvm::MDNode::getDistinct(ctx_, ops);
  node->replaceOperandWith(0, node);
  return node;
}

llvm::MDNode* Emitter::vectorize_hint(int width) {
  llvm::Type* i32 = b_.getInt32Ty();
  auto option = [&](const char* name, llvm::Metadata* value) {
    return llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name), value});
  };
  llvm::Metadata* on = llvm::ConstantAsMetadata::get(b_.getTrue());
  llvm::SmallVector<llvm::Metadata*, 4> ops = {nullptr, option("llvm.loop.vectorize.enable", on),
                                               option("llvm.loop.vectorize.width", llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, width))),
                                               option("llvm.loop.interleave.count", llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, 1)))};
  llvm::MDNode* node = llvm::MDNode::getDistinct(ctx_, ops);
  node->replaceOperandWith(0, node);
  return node;
}

// The element accesses of an innermost loop, when every one of their
// indices is affine in the loop variable with a coefficient of moderate
// size and otherwise reads only values fixed before the loop (and can be
// computed before it without faulting). Empty when any access is not so.
std::vector<Emitter::Site> Emitter::provable_sites(const cir::For& f) {
  class Sites : public cir::IRVisitor {
   public:
    std::vector<Site> sites;
    std::set<std::string> bound;  // names the body binds or changes
    bool nested = false;
    using IRVisitor::visit;

   protected:
    void visit(const cir::For* op) override { nested = true; }
    void visit(const cir::Let* op) override { bound.insert(op->name); IRVisitor::visit(op); }
    void visit(const cir::Decl* op) override { bound.insert(op->name); IRVisitor::visit(op); }
    void visit(const cir::Assign* op) override { bound.insert(op->name); IRVisitor::visit(op); }
    void visit(const cir::Allocate* op) override { nested = true; }
    void visit(const cir::MatMulBlock* op) override { nested = true; }
    void visit(const cir::Atomic* op) override { nested = true; }
    void visit(const cir::Store* op) override {
      sites.push_back({&op->axes, op->buffer});
      IRVisitor::visit(op);
    }
    void visit(const cir::Access* op) override {
      sites.push_back({&op->axes, op->buffer});
      IRVisitor::visit(op);
    }
  };
  Sites v;
  v.bound.insert(f.var);
  for (const cir::Stmt& s : f.body) v.include(s);
  if (v.nested || v.sites.empty()) return {};
  for (const auto& [axes, name] : v.sites) {
    if (!buffers_.count(name)) return {};
    for (const cir::AxisSel& a : *axes)
      if (a.is_slice || !affine_in(a.index, f.var, v.bound)) return {};
  }
  return v.sites;
}



// Every index of `sites` in bounds at the first and at the last iteration
// (or no iteration at all); at most 2^32 iterations, so no product wraps.
llvm::Value* Emitter::in_bounds_at_ends(const cir::For& f, const std::vector<Site>& sites,
                               llvm::Value* lo, llvm::Value* step, llvm::Value* first, llvm::Value* trips) {
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Value* v0 = b_.CreateAdd(lo, b_.CreateMul(first, step));
  llvm::Value* v1 = b_.CreateAdd(lo, b_.CreateMul(b_.CreateSub(trips, b_.getInt64(1)), step));
  llvm::Value* ok = b_.CreateICmpULT(trips, b_.getInt64(int64_t{1} << 32));
  auto saved = values_.find(f.var) != values_.end() ? values_[f.var] : nullptr;
  // One check per distinct site: a chain of equal checks on one value costs
  // LLVM's InstCombine time quadratic in its length.
  std::vector<Site> distinct;
  for (const Site& site : sites) {
    auto same = [&](const Site& kept) { return kept.second == site.second && cir::equal(*kept.first, *site.first); };
    if (std::none_of(distinct.begin(), distinct.end(), same)) distinct.push_back(site);
  }
  for (llvm::Value* at : {v0, v1}) {
    values_[f.var] = at;
    for (const auto& [axes, name] : distinct) {
      const Buffer& buf = buffer(name);
      for (size_t a = 0; a < axes->size(); ++a) {
        llvm::Value* extent = b_.CreateSExt(expr(buf.type.shape[a]), i64);
        llvm::Value* idx = b_.CreateSExt(expr((*axes)[a].index), i64);
        ok = b_.CreateAnd(ok, b_.CreateICmpULT(idx, extent));
      }
    }
  }
  if (saved) values_[f.var] = saved; else values_.erase(f.var);
  return b_.CreateOr(b_.CreateICmpULE(trips, first), ok);
}

}  // namespace zyntax::codegen
