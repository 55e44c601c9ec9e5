#include "codegen/llvm/emitter.hpp"

#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <stdexcept>

#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/matmul_block.hpp"

namespace zyntax::codegen {

namespace {

using cir::allocation_bytes;
using cir::Expr;

// Local arrays up to this size live on the stack; larger ones (packed
// panels of a matrix product) on the heap, allocated once per call.
constexpr int64_t kMaxStackArrayBytes = 256 << 10;

// The loop a GPU kernel's threads share: the body's one parallel loop, of
// any bounds (a generic kernel's take its dimensions).
const cir::For* gpu_parallel_loop(const cir::Kernel& k) {
  if (k.body.size() != 1) return nullptr;
  auto f = k.body[0].as<cir::For>();
  return f && f->loop_kind == cir::LoopKind::Parallel ? f : nullptr;
}

bool has_gpu_block_loop(const cir::Kernel& k) {
  for (const cir::Stmt& s : k.body)
    if (auto f = s.as<cir::For>(); f && f->loop_kind == cir::LoopKind::GpuBlock) return true;
  return false;
}

void collect_large_allocations(const cir::Block& blk, std::vector<const cir::Allocate*>& out) {
  for (const cir::Stmt& s : blk) {
    if (auto a = s.as<cir::Allocate>(); a && a->space != cir::MemorySpace::Fragment && allocation_bytes(*a) > kMaxStackArrayBytes) out.push_back(a);
    if (auto f = s.as<cir::For>()) collect_large_allocations(f->body, out);
    if (auto i = s.as<cir::If>()) {
      collect_large_allocations(i->then_body, out);
      collect_large_allocations(i->else_body, out);
    }
  }
}

}  // namespace

Emitter::Emitter(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& name, const LlvmTarget& target)
    : k_(k),
      ctx_(ctx),
      b_(ctx),
      module_(std::make_unique<llvm::Module>("zyntax." + k.name, ctx)),
      name_(name),
      target_(target),
      gpu_(target.gpu()) {}

EmittedKernel Emitter::run() {
  target_.emit_entry(*this);
  if (gpu_) {
    // This thread's place in the grid, and the grid's size.
    using I = cir::GpuIndexKind;
    llvm::Value* block_dim = gpu_coordinate(I::BlockDim, 0);
    global_thread_ = b_.CreateAdd(b_.CreateMul(gpu_coordinate(I::BlockIdx, 0), block_dim), gpu_coordinate(I::ThreadIdx, 0), "thread");
    thread_count_ = b_.CreateMul(gpu_coordinate(I::GridDim, 0), block_dim, "threads");
  }
  allocate_heap_arrays();

  if (gpu_) {
    // Each thread takes iterations tid, tid + threads, ... of the parallel
    // loop; with none, thread 0 runs the whole body.
    if (const cir::For* f = gpu_parallel_loop(k_)) {
      emit_for(*f, /*outer=*/true);
    } else if (has_gpu_block_loop(k_)) {
      // Scheduled for the GPU: every thread runs the body, its block and
      // thread loops giving each thread its share.
      block(k_.body);
    } else {
      run_body_if(b_.CreateICmpEQ(global_thread_, b_.getInt64(0)));
    }
  } else if (outer_parallel_loop(k_)) {
    const cir::For& outer = *k_.body[0].as<cir::For>();
    if (k_.kind == cir::KernelKind::Reduce) task_var_ = outer.var;
    emit_for(outer, /*outer=*/true);
  } else {
    // No loop to split: run whole when the range holds iteration 0.
    run_body_if(b_.CreateAnd(b_.CreateICmpSLE(begin_, b_.getInt64(0)), b_.CreateICmpSGT(end_, b_.getInt64(0))));
  }
  if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(exit_);

  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*fn_, &os))
    throw std::logic_error("LLVM IR of kernel " + k_.name + " does not verify: " + os.str());
  EmittedKernel out;
  out.module = std::move(module_);
  out.function = name_;
  out.sites = std::move(sites_);
  return out;
}

void Emitter::start_body(llvm::Function* fn) {
  fn_ = fn;
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  exit_ = llvm::BasicBlock::Create(ctx_, "exit", fn_);
  b_.SetInsertPoint(exit_);
  b_.CreateRetVoid();
  b_.SetInsertPoint(entry_);
}

void Emitter::bind_parameters(const std::function<llvm::Value*(const std::string& name)>& next, bool by_pointer) {
  for (const cir::Param& p : k_.params) {
    llvm::Value* v = next(by_pointer ? p.name + ".ptr" : p.name);
    if (p.role == cir::ParamRole::Scalar)
      values_[p.name] = by_pointer ? load_scalar(p.type.dtype, v) : from_memory(p.type.dtype, v);
    else
      buffers_[p.name] = {v, p.type};
  }
  // A generic kernel takes its dimensions as arguments (specialised ones have none).
  for (const cir::DimParam& d : k_.dims) values_[d.name] = by_pointer ? b_.CreateLoad(b_.getInt64Ty(), next(""), d.name) : next(d.name);
  if (k_.kind == cir::KernelKind::Reduce) {
    bool arg = reduce_buffers(k_).arg;
    llvm::Value* acc = next("acc");
    llvm::Value* best = arg ? next("best") : nullptr;
    llvm::Value* has = arg ? next("has") : nullptr;
    bind_reduce_buffers(acc, best, has);
  }
}

void Emitter::mark_distinct_buffers(llvm::Function* fn) const {
  for (size_t i = 0; i < k_.params.size(); ++i) {
    llvm::Argument* a = fn->getArg(static_cast<unsigned>(i));
    cir::ParamRole role = k_.params[i].role;
    if (role == cir::ParamRole::Input) {
      a->addAttr(llvm::Attribute::NoAlias);
      a->addAttr(llvm::Attribute::ReadOnly);
    } else if (role == cir::ParamRole::Output && k_.kind != cir::KernelKind::Reduce) {
      a->addAttr(llvm::Attribute::NoAlias);
    }
  }
}

// Reduce kernels' accumulators (kernel_abi.hpp's ReduceBuffers); `best`
// and `has` are read only for argmin/argmax.
void Emitter::bind_reduce_buffers(llvm::Value* acc, llvm::Value* best, llvm::Value* has) {
  ReduceBuffers rb = reduce_buffers(k_);
  acc_ = {acc, cir::Type::scalar(rb.acc_dtype)};
  acc_.type.shape = k_.output().type.shape;
  if (rb.arg) {
    best_ = {best, cir::Type::tensor(rb.best_dtype, k_.output().type.shape)};
    has_ = {has, cir::Type::tensor(DType::Bool, k_.output().type.shape)};
  }
}

void Emitter::run_body_if(llvm::Value* runs) {
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
  b_.CreateCondBr(runs, body, exit_);
  b_.SetInsertPoint(body);
  block(k_.body);
}

// ------------------------------------------------------------ checks

// Branches to a failure exit unless `ok`; returns with the check's id in *status.
void Emitter::check(llvm::Value* ok, Span span, const std::string& what) {
  sites_.push_back({span, what});
  int32_t id = static_cast<int32_t>(sites_.size());
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "check.fail", fn_);
  llvm::BasicBlock* cont = llvm::BasicBlock::Create(ctx_, "check.ok", fn_);
  b_.CreateCondBr(ok, cont, fail, llvm::MDBuilder(ctx_).createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(fail);
  b_.CreateStore(b_.getInt32(id), status_);
  b_.CreateBr(exit_);
  b_.SetInsertPoint(cont);
}

// Row-major offset of an element, each index checked against its axis.
llvm::Value* Emitter::element_offset(const Buffer& buf, const std::vector<cir::AxisSel>& axes, Span span,
                            const std::string& name, bool write) {
  llvm::Value* offset = b_.getInt64(0);
  llvm::Value* ok = b_.getTrue();
  // A thread-private array's first index is this thread (the verifier's rule).
  for (size_t a = thread_private_.count(name) ? 1 : 0; a < axes.size(); ++a) {
    llvm::Value* extent = b_.CreateSExt(expr(buf.type.shape[a]), b_.getInt64Ty());
    llvm::Value* idx = b_.CreateSExt(expr(axes[a].index), b_.getInt64Ty());
    ok = b_.CreateAnd(ok, b_.CreateICmpULT(idx, extent));
    offset = b_.CreateAdd(b_.CreateMul(offset, extent), idx);
  }
  if (!proven_.count(&axes))
    check(ok, span, std::string(write ? "index out of bounds writing " : "index out of bounds reading ") + name);
  return offset;
}

llvm::Value* Emitter::element_ptr(const Buffer& buf, llvm::Value* offset) {
  return b_.CreateGEP(mem_type(buf.type.dtype), buf.ptr, offset);
}

const Emitter::Buffer& Emitter::buffer(const std::string& name) {
  auto it = buffers_.find(name);
  if (it == buffers_.end()) throw std::logic_error("LLVM lowering: unknown buffer " + name);
  return it->second;
}

// ------------------------------------------------------------ statements

void Emitter::emit_with(const std::map<std::string, llvm::Value*>& values, const cir::Block& body) {
  for (const auto& [name, value] : values) values_[name] = value;
  block(body);
}

void Emitter::block(const cir::Block& blk) {
  for (const cir::Stmt& s : blk) {
    if (b_.GetInsertBlock()->getTerminator()) return;
    stmt(s);
  }
}

void Emitter::stmt(const cir::Stmt& s) {
  switch (s->kind) {
    case cir::StmtKind::For: return emit_for(*s.as<cir::For>(), false);
    case cir::StmtKind::If: {
      auto i = s.as<cir::If>();
      llvm::Value* c = expr(i->cond);
      llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
      llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
      llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "endif", fn_);
      b_.CreateCondBr(c, then_bb, else_bb);
      b_.SetInsertPoint(then_bb);
      block(i->then_body);
      if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(merge);
      b_.SetInsertPoint(else_bb);
      block(i->else_body);
      if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(merge);
      b_.SetInsertPoint(merge);
      return;
    }
    case cir::StmtKind::Let: values_[s.as<cir::Let>()->name] = expr(s.as<cir::Let>()->value); return;
    case cir::StmtKind::Decl: {
      auto d = s.as<cir::Decl>();
      llvm::AllocaInst* slot = entry_alloca(reg_type(d->type.dtype), d->name);
      vars_[d->name] = {slot, d->type.dtype};
      llvm::Value* init = d->init.defined() ? expr(d->init) : llvm::Constant::getNullValue(reg_type(d->type.dtype));
      b_.CreateStore(init, slot);
      return;
    }
    case cir::StmtKind::Assign: {
      auto a = s.as<cir::Assign>();
      llvm::Value* v = accumulation(*a);
      b_.CreateStore(v ? v : expr(a->value), vars_.at(a->name).slot);
      return;
    }
    case cir::StmtKind::Store: {
      auto st = s.as<cir::Store>();
      const Buffer& buf = buffer(st->buffer);
      llvm::Value* v = expr(st->value);
      llvm::Value* off = element_offset(buf, st->axes, st->span, st->buffer, true);
      b_.CreateStore(to_memory(buf.type.dtype, v), element_ptr(buf, off));
      return;
    }
    case cir::StmtKind::Yield: return emit_yield(*s.as<cir::Yield>());
    case cir::StmtKind::Allocate: {
      auto a = s.as<cir::Allocate>();
      if (a->space == cir::MemorySpace::Fragment) {
        fragment_types_[a->name] = a->type;  // its registers come with its first tile_mma
        check_fragment_threads(a->name);
        return;
      }
      int64_t bytes = allocation_bytes(*a);
      if (gpu_ && a->space == cir::MemorySpace::Shared && gpu_block_depth_ > 0) {
        // The block's own shared memory, undefined until written.
        buffers_[a->name] = {block_shared_array(mem_type(a->type.dtype), bytes, a->name, a->offset), a->type};
        return;
      }
      if (gpu_ && a->space == cir::MemorySpace::Local && gpu_block_depth_ > 0 && gpu_thread_depth_ == 0) {
        // Thread-private: each thread keeps only its own row (the first
        // axis is the thread), which the thread loops must not stride past.
        int64_t threads = a->type.shape[0].as<cir::IntImm>()->value;
        check(b_.CreateICmpUGE(gpu_coordinate(cir::GpuIndexKind::BlockDim, 0), b_.getInt64(threads)), a->span,
              "the GPU block has fewer threads than the schedule's " + std::to_string(threads));
        uint64_t row = static_cast<uint64_t>(bytes) / dtype_size(a->type.dtype) / static_cast<uint64_t>(threads);
        buffers_[a->name] = {entry_alloca(llvm::ArrayType::get(mem_type(a->type.dtype), std::max<uint64_t>(row, 1)), a->name), a->type};
        thread_private_.insert(a->name);
        return;
      }
      llvm::Value* mem = nullptr;
      if (auto heap = heap_arrays_.find(a->name); heap != heap_arrays_.end()) {
        mem = heap->second;
      } else {
        llvm::Type* elem = mem_type(a->type.dtype);
        uint64_t n = static_cast<uint64_t>(bytes) / dtype_size(a->type.dtype);
        llvm::AllocaInst* slot = entry_alloca(llvm::ArrayType::get(elem, n), a->name);
        slot->setAlignment(llvm::Align(64));
        mem = slot;
      }
      // Zero-filled each time the allocation is reached, as the reference does
      // (a shared array; the local arrays of tiles are written before they are read).
      if (a->space == cir::MemorySpace::Shared)
        b_.CreateMemSet(mem, b_.getInt8(0), b_.getInt64(bytes), llvm::MaybeAlign(16));
      buffers_[a->name] = {mem, a->type};
      return;
    }
    case cir::StmtKind::Barrier:
      // In a GPU block, all its threads meet; elsewhere one thread runs
      // each iteration in order and there is nothing to wait for.
      if (gpu_ && gpu_block_depth_ > 0) target_.barrier(b_);
      return;
    case cir::StmtKind::BlockReduce: return emit_block_reduce(*s.as<cir::BlockReduce>());
    case cir::StmtKind::TileMma: return target_.emit_tile_mma(*this, *s.as<cir::TileMma>());
    case cir::StmtKind::AsyncCopy: return target_.emit_async_copy(*this, *s.as<cir::AsyncCopy>());
    case cir::StmtKind::WarpgroupProduct: return target_.emit_warpgroup_product(*this, *s.as<cir::WarpgroupProduct>());
    case cir::StmtKind::WarpgroupAttention: return target_.emit_warpgroup_attention(*this, *s.as<cir::WarpgroupAttention>());
    case cir::StmtKind::Check: {
      auto c = s.as<cir::Check>();
      check(expr(c->cond), c->span, c->message);
      return;
    }
    case cir::StmtKind::Atomic: return emit_atomic(*s.as<cir::Atomic>());
    case cir::StmtKind::MatMulBlock: return emit_matmul_block(*s.as<cir::MatMulBlock>());
  }
}

// Local arrays too large for the stack: allocated when the kernel starts
// and freed when it returns (every path leaves through exit_).
void Emitter::allocate_heap_arrays() {
  std::vector<const cir::Allocate*> large;
  collect_large_allocations(k_.body, large);
  if (large.empty()) return;
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx_);
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::FunctionCallee alloc = module_->getOrInsertFunction("aligned_alloc", ptr, i64, i64);
  llvm::FunctionCallee release = module_->getOrInsertFunction("free", b_.getVoidTy(), ptr);
  llvm::Value* ok = b_.getTrue();
  llvm::IRBuilder<> eb(exit_, exit_->getTerminator()->getIterator());
  for (const cir::Allocate* a : large) {
    int64_t bytes = (allocation_bytes(*a) + 63) / 64 * 64;
    llvm::Value* mem = b_.CreateCall(alloc, {b_.getInt64(64), b_.getInt64(bytes)}, a->name);
    heap_arrays_[a->name] = mem;
    ok = b_.CreateAnd(ok, b_.CreateIsNotNull(mem));
    eb.CreateCall(release, {mem});
  }
  check(ok, k_.span, "out of memory for the kernel's local arrays");
}


void Emitter::emit_matmul_block(const cir::MatMulBlock& m) {
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* f32 = b_.getFloatTy();
  auto value = [&](const Expr& e) { return b_.CreateSExt(expr(e), i64); };
  const Buffer& a = buffer(m.a);
  const Buffer& bb = buffer(m.b);
  const Buffer& c = buffer(m.c);
  llvm::Value* a_off = value(m.a_offset);
  llvm::Value* a_rs = value(m.a_row_stride);
  llvm::Value* a_ks = value(m.a_k_stride);
  llvm::Value* b_off = value(m.b_offset);
  llvm::Value* ldb = value(m.ldb);
  llvm::Value* kc = value(m.kc);
  llvm::Value* ldc = value(m.ldc);
  llvm::Value* mv = value(m.m_valid);
  llvm::Value* nv = value(m.n_valid);
  std::vector<cir::AxisSel> at;
  for (const Expr& e : m.c_index) at.push_back(cir::AxisSel::at(e));
  llvm::Value* c_off = element_offset(c, at, m.span, m.c, true);
  // The whole block must lie inside its buffers.
  auto numel = [&](const Buffer& buf) {
    llvm::Value* n = b_.getInt64(1);
    for (const Expr& d : buf.type.shape) n = b_.CreateMul(n, b_.CreateSExt(expr(d), i64));
    return n;
  };
  llvm::Value* ok = b_.CreateAnd(b_.CreateICmpSGE(kc, b_.getInt64(0)), b_.CreateICmpSGE(a_off, b_.getInt64(0)));
  ok = b_.CreateAnd(ok, b_.CreateICmpSGE(b_off, b_.getInt64(0)));
  ok = b_.CreateAnd(ok, b_.CreateAnd(b_.CreateICmpSGE(a_rs, b_.getInt64(0)), b_.CreateICmpSGE(a_ks, b_.getInt64(0))));
  llvm::Value* a_last = b_.CreateAdd(a_off, b_.CreateAdd(b_.CreateMul(b_.getInt64(m.rows - 1), a_rs),
                                                         b_.CreateMul(b_.CreateSub(kc, b_.getInt64(1)), a_ks)));
  ok = b_.CreateAnd(ok, b_.CreateOr(b_.CreateICmpEQ(kc, b_.getInt64(0)), b_.CreateICmpSLT(a_last, numel(a))));
  llvm::Value* rows = nullptr;
  if (m.b_rows.empty()) {
    llvm::Value* b_end = b_.CreateAdd(b_off, b_.CreateAdd(b_.CreateMul(b_.CreateSub(kc, b_.getInt64(1)), ldb), b_.getInt64(m.cols)));
    ok = b_.CreateAnd(ok, b_.CreateICmpSGE(ldb, b_.getInt64(m.cols)));
    ok = b_.CreateAnd(ok, b_.CreateOr(b_.CreateICmpEQ(kc, b_.getInt64(0)), b_.CreateICmpSLE(b_end, numel(bb))));
  } else {
    // The table's entries are the pass's window offsets, within its bound:
    // the bound and the table's range are checked, not every entry.
    const Buffer& table = buffer(m.b_rows);
    llvm::Value* at = value(m.b_rows_at);
    llvm::Value* b_end = b_.CreateAdd(b_off, b_.getInt64(m.b_rows_max + m.cols));
    ok = b_.CreateAnd(ok, b_.CreateOr(b_.CreateICmpEQ(kc, b_.getInt64(0)), b_.CreateICmpSLE(b_end, numel(bb))));
    ok = b_.CreateAnd(ok, b_.CreateAnd(b_.CreateICmpSGE(at, b_.getInt64(0)), b_.CreateICmpSLE(b_.CreateAdd(at, kc), numel(table))));
    rows = b_.CreateGEP(i64, table.ptr, at);
  }
  ok = b_.CreateAnd(ok, b_.CreateAnd(b_.CreateICmpSLE(mv, b_.getInt64(m.rows)), b_.CreateICmpSLE(nv, b_.getInt64(m.cols))));
  llvm::Value* last = b_.CreateAdd(c_off, b_.CreateAdd(b_.CreateMul(b_.CreateSub(mv, b_.getInt64(1)), ldc), nv));
  llvm::Value* empty = b_.CreateOr(b_.CreateICmpSLE(mv, b_.getInt64(0)), b_.CreateICmpSLE(nv, b_.getInt64(0)));
  ok = b_.CreateAnd(ok, b_.CreateOr(empty, b_.CreateICmpSLE(last, numel(c))));
  check(ok, m.span, "matmul block outside its buffers");
  MatMulBlockArgs args;
  args.rows = m.rows;
  args.cols = m.cols;
  args.a = b_.CreateGEP(f32, a.ptr, a_off);
  args.a_row_stride = a_rs;
  args.a_k_stride = a_ks;
  args.b = b_.CreateGEP(f32, bb.ptr, b_off);
  args.c = b_.CreateGEP(f32, c.ptr, c_off);
  args.kc = kc;
  args.ldb = ldb;
  args.b_rows = rows;
  args.ldc = ldc;
  args.m_valid = mv;
  args.n_valid = nv;
  args.accumulate = expr(m.accumulate);
  codegen::emit_matmul_block(b_, args);
}

// `s = s + e` on an f32/f64 variable: a running sum. Its add may be
// reassociated, so that the vectoriser can keep several partial sums; the
// result then differs from the sequential sum by rounding only (within
// the 1e-4 of long reductions). Null for anything else.
llvm::Value* Emitter::accumulation(const cir::Assign& a) {
  auto add = a.value.as<cir::Binary>();
  if (!add || add->op != BinaryOp::Add) return nullptr;
  DType t = add->type.dtype;
  if (t != DType::F32 && t != DType::F64) return nullptr;
  auto self = add->a.as<cir::Var>();
  if (!self || self->name != a.name) return nullptr;
  llvm::Value* sum = b_.CreateFAdd(expr(add->a), expr(add->b));
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(sum)) {
    llvm::FastMathFlags f;
    f.setAllowReassoc();
    inst->setFastMathFlags(f);
  }
  return sum;
}

llvm::AllocaInst* Emitter::entry_alloca(llvm::Type* t, const std::string& name) {
  llvm::IRBuilder<> eb(entry_, entry_->begin());
  llvm::AllocaInst* a = eb.CreateAlloca(t, nullptr, name);
  a->setAlignment(llvm::Align(16));
  return a;
}


}  // namespace zyntax::codegen
