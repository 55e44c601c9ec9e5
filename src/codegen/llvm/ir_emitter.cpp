#include "codegen/llvm/ir_emitter.hpp"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "cir/affine.hpp"
#include "cir/printer.hpp"
#include "cir/reads.hpp"
#include "cir/visitor.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/matmul_block.hpp"
#include "codegen/llvm/nvptx/tile_mma.hpp"

namespace zyntax::codegen {

extern "C" uint64_t zyntax_rt_ipow(uint64_t base, int64_t exponent, int32_t is_signed, int32_t* error) {
  if (is_signed && exponent < 0) {
    int64_t b = static_cast<int64_t>(base);
    if (b == 1) return 1;
    if (b == -1) return (exponent % 2 == 0) ? 1 : static_cast<uint64_t>(-1);
    *error = 1;
    return 0;
  }
  uint64_t e = static_cast<uint64_t>(exponent), result = 1;
  while (e) {  // wraps like repeated multiplication
    if (e & 1) result *= base;
    base *= base;
    e >>= 1;
  }
  return result;
}

namespace {

using cir::allocation_bytes;
using cir::Expr;
using cir::kSharedArrayAlignment;
using cir::shared_footprint;

// Local arrays up to this size live on the stack; larger ones (packed
// panels of a matrix product) on the heap, allocated once per call.
constexpr int64_t kMaxStackArrayBytes = 256 << 10;
constexpr int64_t kMaxLocalArrayBytes = int64_t{1} << 30;
// On a GPU every thread has its own copy of a local array, and the driver
// reserves that much for every thread the device can hold at once.
constexpr int64_t kMaxGpuLocalArrayBytes = 64 << 10;

// Global memory on NVIDIA GPUs (kernel parameters point there).
constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kSharedAddressSpace = 3;

// ---------------------------------------------------------------- support check

class SupportCheck {
 public:
  explicit SupportCheck(EmitTarget target) : target_(target) {}

  std::optional<std::string> run(const cir::Kernel& k) {
    for (const cir::Param& p : k.params) dtypes_[p.name] = p.type.dtype;
    block(k.body);
    return reason_;
  }

  // The bytes of the block's shared arrays (after run).
  int64_t shared_bytes() const { return shared_bytes_; }

 private:
  void fail(std::string why) {
    if (!reason_) reason_ = std::move(why);
  }

  void expr(const Expr& e) {
    if (!e.defined() || reason_) return;
    if (!e->type.is_scalar()) return fail("tile values (" + cir::print(e) + ")");
    switch (e->kind) {
      case cir::ExprKind::GpuIndex: return fail("GPU thread coordinates");
      case cir::ExprKind::Dot:
      case cir::ExprKind::Reduce:
      case cir::ExprKind::MatMul:
      case cir::ExprKind::Transpose:
      case cir::ExprKind::Fill: return fail("tile operations (" + cir::print(e) + ")");
      case cir::ExprKind::Access:
        for (const cir::AxisSel& a : e.as<cir::Access>()->axes) {
          if (a.is_slice) return fail("slices");
          expr(a.index);
        }
        return;
      case cir::ExprKind::Cast: return expr(e.as<cir::Cast>()->value);
      case cir::ExprKind::Unary: return expr(e.as<cir::Unary>()->a);
      case cir::ExprKind::Binary:
        expr(e.as<cir::Binary>()->a);
        return expr(e.as<cir::Binary>()->b);
      case cir::ExprKind::Select:
        expr(e.as<cir::Select>()->cond);
        expr(e.as<cir::Select>()->t);
        return expr(e.as<cir::Select>()->f);
      case cir::ExprKind::Math:
        for (const Expr& a : e.as<cir::Math>()->args) expr(a);
        return;
      default: return;
    }
  }

  void block(const cir::Block& b) {
    for (const cir::Stmt& s : b) {
      if (reason_) return;
      switch (s->kind) {
        case cir::StmtKind::For: {
          auto f = s.as<cir::For>();
          expr(f->lo);
          expr(f->hi);
          expr(f->step);
          bool gpu_block = f->loop_kind == cir::LoopKind::GpuBlock;
          gpu_block_depth_ += gpu_block;
          block(f->body);
          gpu_block_depth_ -= gpu_block;
          break;
        }
        case cir::StmtKind::If:
          expr(s.as<cir::If>()->cond);
          block(s.as<cir::If>()->then_body);
          block(s.as<cir::If>()->else_body);
          break;
        case cir::StmtKind::Let: expr(s.as<cir::Let>()->value); break;
        case cir::StmtKind::Decl:
          if (!s.as<cir::Decl>()->type.is_scalar()) fail("tile variables");
          expr(s.as<cir::Decl>()->init);
          break;
        case cir::StmtKind::Assign: expr(s.as<cir::Assign>()->value); break;
        case cir::StmtKind::Store: {
          auto st = s.as<cir::Store>();
          if (st->axes.empty()) fail("whole-tile stores");
          for (const cir::AxisSel& a : st->axes) {
            if (a.is_slice) fail("slices");
            expr(a.index);
          }
          expr(st->value);
          break;
        }
        case cir::StmtKind::Yield:
          expr(s.as<cir::Yield>()->value);
          expr(s.as<cir::Yield>()->index);
          for (const Expr& e : s.as<cir::Yield>()->out_index) expr(e);
          break;
        case cir::StmtKind::Allocate: {
          dtypes_[s.as<cir::Allocate>()->name] = s.as<cir::Allocate>()->type.dtype;
          if (s.as<cir::Allocate>()->space == cir::MemorySpace::Fragment) {
            if (target_ != EmitTarget::Nvptx) return fail("tensor-core fragments");
            break;  // registers spread over the block's warps, not memory
          }
          int64_t n = allocation_bytes(*s.as<cir::Allocate>());
          if (n < 0) return fail("arrays of non-constant size");
          if (n > kMaxLocalArrayBytes) return fail("local arrays larger than 1 GiB");
          if (target_ == EmitTarget::Nvptx && n > kMaxGpuLocalArrayBytes)
            return fail("local arrays larger than 64 KiB per GPU thread");
          if (const cir::Allocate& a = *s.as<cir::Allocate>(); block_shared(a)) {
            // A placed array where the schedule put it; else after the others.
            int64_t end = a.offset >= 0 ? a.offset + shared_footprint(n) : shared_bytes_ + shared_footprint(n);
            shared_bytes_ = std::max(shared_bytes_, end);
            if (shared_bytes_ > kGpuMaxSharedBytes) return fail("more than 227 KiB of shared memory per GPU block");
          }
          break;
        }
        case cir::StmtKind::Barrier: break;
        case cir::StmtKind::Check: expr(s.as<cir::Check>()->cond); break;
        case cir::StmtKind::BlockReduce:
          if (target_ != EmitTarget::Nvptx) return fail("GPU block reductions");
          expr(s.as<cir::BlockReduce>()->count);
          break;
        case cir::StmtKind::TileMma:
          if (target_ != EmitTarget::Nvptx) return fail("tensor-core tile products");
          break;
        case cir::StmtKind::AsyncCopy: {
          if (target_ != EmitTarget::Nvptx) return fail("asynchronous copies");
          auto c = s.as<cir::AsyncCopy>();
          if (c->step != cir::AsyncCopy::Step::Start) break;
          expr(c->dst_index);
          expr(c->valid);
          for (const Expr& e : c->src_index) expr(e);
          break;
        }
        case cir::StmtKind::Atomic: {
          auto a = s.as<cir::Atomic>();
          auto it = dtypes_.find(a->buffer);
          if (target_ == EmitTarget::Nvptx && a->scope == cir::FenceScope::System && it != dtypes_.end() && dtype_size(it->second) < 4)
            return fail("system-scope atomics on elements of fewer than 4 bytes");
          for (const Expr& e : a->index) expr(e);
          expr(a->value);
          break;
        }
        case cir::StmtKind::MatMulBlock: {
          if (target_ == EmitTarget::Nvptx) return fail("CPU register blocks");
          auto m = s.as<cir::MatMulBlock>();
          if (m->rows > 32 || m->cols > 256) return fail("register blocks larger than 32x256");
          for (const Expr& e : {m->a_offset, m->a_row_stride, m->a_k_stride, m->b_offset, m->ldb, m->kc, m->ldc, m->m_valid, m->n_valid,
                                m->accumulate})
            expr(e);
          for (const Expr& e : m->c_index) expr(e);
          break;
        }
      }
    }
  }

  // A GPU block's shared array (static shared memory); elsewhere a shared
  // array is the zero-filled scratch of one thread running a whole iteration.
  bool block_shared(const cir::Allocate& a) const {
    return target_ == EmitTarget::Nvptx && a.space == cir::MemorySpace::Shared && gpu_block_depth_ > 0;
  }

  EmitTarget target_;
  int gpu_block_depth_ = 0;
  int64_t shared_bytes_ = 0;
  std::map<std::string, DType> dtypes_;  // of the kernel's buffers and arrays
  std::optional<std::string> reason_;
};

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

// ---------------------------------------------------------------- emitter

class Emitter {
 public:
  Emitter(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& name, EmitTarget target)
      : k_(k), ctx_(ctx), b_(ctx), module_(std::make_unique<llvm::Module>("zyntax." + k.name, ctx)), name_(name), target_(target) {}

  EmittedKernel run() {
    if (target_ == EmitTarget::Nvptx)
      gpu_entry();
    else
      cpu_entry();
    allocate_heap_arrays();

    if (target_ == EmitTarget::Nvptx) {
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

 private:
  // void k(void** args, i64 begin, i64 end, i32* status): each parameter
  // read through args (kernel_abi.hpp).
  void cpu_entry() {
    llvm::Type* ptr = llvm::PointerType::getUnqual(ctx_);
    llvm::Type* i64 = b_.getInt64Ty();
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64, ptr}, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name_, module_.get());
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    auto arg = fn_->arg_begin();
    llvm::Value* args = &*arg++;
    begin_ = &*arg++;
    end_ = &*arg++;
    status_ = &*arg;
    start_body();

    // Parameters: buffers by name; scalar values loaded once.
    unsigned slot = 0;
    auto next = [&](const char* name) { return b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, args, slot++), name); };
    for (const cir::Param& p : k_.params) {
      llvm::Value* p_ptr = next((p.name + ".ptr").c_str());
      if (p.role == cir::ParamRole::Scalar)
        values_[p.name] = load_scalar(p.type.dtype, p_ptr);
      else
        buffers_[p.name] = {p_ptr, p.type};
    }
    // A generic kernel takes its dimensions as arguments (specialised ones have none).
    for (const cir::DimParam& d : k_.dims) values_[d.name] = b_.CreateLoad(i64, next(""), d.name);
    if (k_.kind == cir::KernelKind::Reduce) {
      bool arg = reduce_buffers(k_).arg;
      llvm::Value* acc = next("acc");
      llvm::Value* best = arg ? next("best") : nullptr;
      llvm::Value* has = arg ? next("has") : nullptr;
      bind_reduce_buffers(acc, best, has);
    }
  }

  // An NVPTX kernel entry point taking every value as a parameter
  // (kernel_abi.hpp), with the block size as its launch bound.
  void gpu_entry() {
    llvm::Type* global = llvm::PointerType::get(ctx_, kGlobalAddressSpace);
    std::vector<llvm::Type*> types;
    std::vector<std::string> names;
    for (const cir::Param& p : k_.params) {
      types.push_back(p.role == cir::ParamRole::Scalar ? mem_type(p.type.dtype) : global);
      names.push_back(p.name);
    }
    for (const cir::DimParam& d : k_.dims) {
      types.push_back(b_.getInt64Ty());
      names.push_back(d.name);
    }
    if (k_.kind == cir::KernelKind::Reduce) {
      std::vector<const char*> reduce = {"acc"};
      if (reduce_buffers(k_).arg) reduce.insert(reduce.end(), {"best", "has"});
      for (const char* n : reduce) {
        types.push_back(global);
        names.push_back(n);
      }
    }
    types.push_back(global);
    names.push_back("status");
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name_, module_.get());
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    std::vector<llvm::Value*> args;
    for (llvm::Argument& a : fn_->args()) {
      a.setName(names[args.size()]);
      args.push_back(&a);
      if (a.getType() == global) {
        a.addAttr(llvm::Attribute::NoUndef);
        a.addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(kGpuTensorAlignment)));
      }
    }
    // Inputs are only read (the loads may then take the read-only path and
    // merge past stores); the output is its own buffer, except where a
    // reduction accumulates into it through another parameter.
    for (size_t i = 0; i < k_.params.size(); ++i) {
      cir::ParamRole role = k_.params[i].role;
      if (role == cir::ParamRole::Input) {
        fn_->getArg(static_cast<unsigned>(i))->addAttr(llvm::Attribute::NoAlias);
        fn_->getArg(static_cast<unsigned>(i))->addAttr(llvm::Attribute::ReadOnly);
      } else if (role == cir::ParamRole::Output && k_.kind != cir::KernelKind::Reduce) {
        fn_->getArg(static_cast<unsigned>(i))->addAttr(llvm::Attribute::NoAlias);
      }
    }
    llvm::NamedMDNode* annotations = module_->getOrInsertNamedMetadata("nvvm.annotations");
    auto annotate = [&](const char* key, int value) {
      annotations->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, key),
                                                       llvm::ConstantAsMetadata::get(b_.getInt32(value))}));
    };
    annotate("kernel", 1);
    annotate("maxntidx", kGpuBlockThreads);
    status_ = args.back();
    start_body();

    size_t slot = 0;
    for (const cir::Param& p : k_.params) {
      llvm::Value* v = args[slot++];
      if (p.role == cir::ParamRole::Scalar)
        values_[p.name] = from_memory(p.type.dtype, v);
      else
        buffers_[p.name] = {v, p.type};
    }
    for (const cir::DimParam& d : k_.dims) values_[d.name] = args[slot++];
    if (k_.kind == cir::KernelKind::Reduce) {
      bool arg = reduce_buffers(k_).arg;
      llvm::Value* acc = args[slot++];
      llvm::Value* best = arg ? args[slot++] : nullptr;
      llvm::Value* has = arg ? args[slot++] : nullptr;
      bind_reduce_buffers(acc, best, has);
    }
    using I = cir::GpuIndexKind;
    llvm::Value* block_dim = gpu_coordinate(I::BlockDim, 0);
    global_thread_ = b_.CreateAdd(b_.CreateMul(gpu_coordinate(I::BlockIdx, 0), block_dim), gpu_coordinate(I::ThreadIdx, 0), "thread");
    thread_count_ = b_.CreateMul(gpu_coordinate(I::GridDim, 0), block_dim, "threads");
  }

  void start_body() {
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    exit_ = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    b_.SetInsertPoint(exit_);
    b_.CreateRetVoid();
    b_.SetInsertPoint(entry_);
  }

  // Reduce kernels' accumulators (kernel_abi.hpp's ReduceBuffers); `best`
  // and `has` are read only for argmin/argmax.
  void bind_reduce_buffers(llvm::Value* acc, llvm::Value* best, llvm::Value* has) {
    ReduceBuffers rb = reduce_buffers(k_);
    acc_ = {acc, cir::Type::scalar(rb.acc_dtype)};
    acc_.type.shape = k_.output().type.shape;
    if (rb.arg) {
      best_ = {best, cir::Type::tensor(rb.best_dtype, k_.output().type.shape)};
      has_ = {has, cir::Type::tensor(DType::Bool, k_.output().type.shape)};
    }
  }

  void run_body_if(llvm::Value* runs) {
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
    b_.CreateCondBr(runs, body, exit_);
    b_.SetInsertPoint(body);
    block(k_.body);
  }

 private:
  struct Buffer {
    llvm::Value* ptr = nullptr;
    cir::Type type;
  };

  // ------------------------------------------------------------ types

  // Values live in registers as these types; f16 and bf16 are computed in
  // f32 and rounded back after every operation, as the reference does.
  llvm::Type* reg_type(DType t) {
    switch (t) {
      case DType::F16: case DType::BF16: case DType::F32: return b_.getFloatTy();
      case DType::F64: return b_.getDoubleTy();
      case DType::Bool: return b_.getInt1Ty();
      default: return b_.getIntNTy(static_cast<unsigned>(int_bits(t)));
    }
  }

  llvm::Type* mem_type(DType t) {
    switch (t) {
      case DType::F16: return b_.getHalfTy();
      case DType::BF16: return b_.getInt16Ty();
      case DType::Bool: return b_.getInt8Ty();
      default: return reg_type(t);
    }
  }

  llvm::Value* load_scalar(DType t, llvm::Value* ptr) {
    llvm::Value* v = b_.CreateLoad(mem_type(t), ptr);
    return from_memory(t, v);
  }

  llvm::Value* from_memory(DType t, llvm::Value* v) {
    switch (t) {
      case DType::F16: return b_.CreateFPExt(v, b_.getFloatTy());
      case DType::BF16:
        return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, b_.getInt32Ty()), 16), b_.getFloatTy());
      case DType::Bool: return b_.CreateICmpNE(v, b_.getInt8(0));
      default: return v;
    }
  }

  llvm::Value* to_memory(DType t, llvm::Value* v) {
    switch (t) {
      case DType::F16: return b_.CreateFPTrunc(v, b_.getHalfTy());
      case DType::BF16: return bf16_bits(v);
      case DType::Bool: return b_.CreateZExt(v, b_.getInt8Ty());
      default: return v;
    }
  }

  // f32 → bf16 bits, round to nearest even; NaN stays a quiet NaN.
  llvm::Value* bf16_bits(llvm::Value* f) {
    llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
    llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), 1);
    llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(b_.getInt32(0x7FFF), lsb)), 16);
    llvm::Value* nan = b_.CreateOr(b_.CreateLShr(bits, 16), b_.getInt32(0x40));
    llvm::Value* is_nan = b_.CreateFCmpUNO(f, f);
    return b_.CreateTrunc(b_.CreateSelect(is_nan, nan, rounded), b_.getInt16Ty());
  }

  // Rounds an f32 register to the precision of f16/bf16.
  llvm::Value* round_to(DType t, llvm::Value* v) {
    if (t == DType::F16 || t == DType::BF16) return from_memory(t, to_memory(t, v));
    return v;
  }

  // ------------------------------------------------------------ checks

  // Branches to a failure exit unless `ok`; returns with the check's id in *status.
  void check(llvm::Value* ok, Span span, const std::string& what) {
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
  llvm::Value* element_offset(const Buffer& buf, const std::vector<cir::AxisSel>& axes, Span span,
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

  llvm::Value* element_ptr(const Buffer& buf, llvm::Value* offset) {
    return b_.CreateGEP(mem_type(buf.type.dtype), buf.ptr, offset);
  }

  const Buffer& buffer(const std::string& name) {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) throw std::logic_error("LLVM lowering: unknown buffer " + name);
    return it->second;
  }

  // ------------------------------------------------------------ statements

  void block(const cir::Block& blk) {
    for (const cir::Stmt& s : blk) {
      if (b_.GetInsertBlock()->getTerminator()) return;
      stmt(s);
    }
  }

  void stmt(const cir::Stmt& s) {
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
        if (target_ == EmitTarget::Nvptx && a->space == cir::MemorySpace::Shared && gpu_block_depth_ > 0) {
          // The block's own shared memory, undefined until written.
          buffers_[a->name] = {block_shared_array(mem_type(a->type.dtype), bytes, a->name, a->offset), a->type};
          return;
        }
        if (target_ == EmitTarget::Nvptx && a->space == cir::MemorySpace::Local && gpu_block_depth_ > 0 && gpu_thread_depth_ == 0) {
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
        if (target_ == EmitTarget::Nvptx && gpu_block_depth_ > 0) b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
        return;
      case cir::StmtKind::BlockReduce: return emit_block_reduce(*s.as<cir::BlockReduce>());
      case cir::StmtKind::TileMma: return emit_tile_mma(*s.as<cir::TileMma>());
      case cir::StmtKind::AsyncCopy: return emit_async_copy(*s.as<cir::AsyncCopy>());
      case cir::StmtKind::Check: {
        auto c = s.as<cir::Check>();
        check(expr(c->cond), c->span, c->message);
        return;
      }
      case cir::StmtKind::Atomic: return emit_atomic(*s.as<cir::Atomic>());
      case cir::StmtKind::MatMulBlock: return emit_matmul_block(*s.as<cir::MatMulBlock>());
    }
  }

  static bool has_async_copies(const cir::For& f) {
    struct Find : cir::IRVisitor {
      bool found = false;
      using IRVisitor::visit;
      void visit(const cir::AsyncCopy*) override { found = true; }
    } find;
    find.include(f.body);
    return find.found;
  }

  // Where a fragment is allocated (once per block, outside the loops of
  // its steps): the block has the threads its tile_mma steps spread it over.
  void check_fragment_threads(const std::string& acc) {
    struct FirstStep : cir::IRVisitor {
      const std::string& acc;
      const cir::TileMma* step = nullptr;
      explicit FirstStep(const std::string& a) : acc(a) {}
      using IRVisitor::visit;
      void visit(const cir::TileMma* op) override {
        if (!step && op->acc == acc) step = op;
      }
    } first(acc);
    first.include(k_.body);
    if (!first.step) return;
    int64_t threads = 32LL * first.step->warp_rows * first.step->warp_cols;
    check(b_.CreateICmpUGE(gpu_coordinate(cir::GpuIndexKind::BlockDim, 0), b_.getInt64(threads)), first.step->span,
          "the GPU block has fewer threads than the tensor-core schedule's " + std::to_string(threads));
  }

  // A step of a tensor-core tile product (codegen/llvm/nvptx/tile_mma). The
  // fragment's registers are one array per thread, made at the first step.
  void emit_tile_mma(const cir::TileMma& m) {
    auto it = fragments_.find(m.acc);
    if (it == fragments_.end()) {
      const cir::Type& t = fragment_types_.at(m.acc);
      codegen::TileMmaFragments f;
      f.rows = static_cast<int>(t.shape[0].as<cir::IntImm>()->value);
      f.cols = static_cast<int>(t.shape[1].as<cir::IntImm>()->value);
      f.warp_rows = m.warp_rows;
      f.warp_cols = m.warp_cols;
      f.warp = b_.CreateLShr(gpu_coordinate(cir::GpuIndexKind::ThreadIdx, 0), 5);
      f.pieces = entry_alloca(codegen::tile_mma_storage_type(ctx_, f), m.acc);
      it = fragments_.emplace(m.acc, f).first;
    }
    codegen::TileMmaFragments& f = it->second;
    switch (m.step) {
      case cir::TileMma::Step::Zero: return codegen::emit_mma_zero(b_, f);
      case cir::TileMma::Step::Accumulate: {
        const Buffer& a = buffer(m.a);
        f.factors = a.type.dtype;
        return codegen::emit_mma_accumulate(b_, f, a.ptr, m.lda, buffer(m.b).ptr, m.ldb, m.depth);
      }
      case cir::TileMma::Step::Store: return codegen::emit_mma_store(b_, f, buffer(m.d).ptr, m.ldd, m.row0, m.count);
    }
  }

  // A step of a thread's asynchronous copies (cir::AsyncCopy) with the
  // cp.async intrinsics: 16-byte runs bypass L1 (.cg; a tile read once per
  // block), shorter ones go through it (.ca, the only form they have). The
  // source size operand makes the copy read `valid` elements and zero the
  // rest; with none read, the source address is the input's first element,
  // so that no address outside it is formed.
  void emit_async_copy(const cir::AsyncCopy& c) {
    using Step = cir::AsyncCopy::Step;
    if (c.step == Step::Commit) {
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
      return;
    }
    if (c.step == Step::Wait) {
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b_.getInt32(static_cast<uint32_t>(c.pending))});
      return;
    }
    const Buffer& dst = buffer(c.dst);
    const Buffer& src = buffer(c.src);
    llvm::Type* i64 = b_.getInt64Ty();
    int64_t size = static_cast<int64_t>(dtype_size(src.type.dtype)), bytes = c.count * size;
    llvm::Value* count = b_.getInt64(c.count);
    llvm::Value* at = b_.CreateSExt(expr(c.dst_index), i64);
    llvm::Value* valid = b_.CreateSExt(expr(c.valid), i64);
    llvm::Value* dst_size = b_.getInt64(1);
    for (const Expr& e : dst.type.shape) dst_size = b_.CreateMul(dst_size, b_.CreateSExt(expr(e), i64));
    llvm::Value* ok = b_.CreateAnd(b_.CreateICmpULE(valid, count),
                                   b_.CreateAnd(b_.CreateICmpSGE(at, b_.getInt64(0)), b_.CreateICmpSLE(b_.CreateAdd(at, count), dst_size)));
    // The run's first element and, along the last axis, its last one read.
    llvm::Value* offset = b_.getInt64(0);
    llvm::Value* in_bounds = b_.getTrue();
    for (size_t a = 0; a < c.src_index.size(); ++a) {
      llvm::Value* extent = b_.CreateSExt(expr(src.type.shape[a]), i64);
      llvm::Value* idx = b_.CreateSExt(expr(c.src_index[a]), i64);
      llvm::Value* last = a + 1 == c.src_index.size() ? b_.CreateSub(b_.CreateAdd(idx, valid), b_.getInt64(1)) : idx;
      in_bounds = b_.CreateAnd(in_bounds, b_.CreateAnd(b_.CreateICmpULT(idx, extent), b_.CreateICmpULT(last, extent)));
      offset = b_.CreateAdd(b_.CreateMul(offset, extent), idx);
    }
    llvm::Value* reads = b_.CreateICmpSGT(valid, b_.getInt64(0));
    check(b_.CreateAnd(ok, b_.CreateOr(b_.CreateNot(reads), in_bounds)), c.span, "async_copy out of the bounds of " + c.src + " or " + c.dst);
    llvm::Value* to = element_ptr(dst, at);
    llvm::Value* from = b_.CreateSelect(reads, element_ptr(src, offset), src.ptr);
    llvm::Value* src_bytes = b_.CreateTrunc(b_.CreateMul(b_.CreateSelect(reads, valid, b_.getInt64(0)), b_.getInt64(size)), b_.getInt32Ty());
    llvm::Intrinsic::ID id = bytes == 16 ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
                             : bytes == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                                          : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s;
    b_.CreateIntrinsic(id, {}, {to, from, src_bytes});
  }

  // A shared array of the block: static, or where the block's arrays need
  // more than static shared memory holds, the next piece of the dynamic
  // shared memory the launcher provides (gpu_shared_bytes). A placed array
  // (`offset` >= 0) is at its offset in one region of all the block's
  // shared memory, which arrays with separate lives share.
  llvm::Value* block_shared_array(llvm::Type* elem, int64_t bytes, const std::string& name, int64_t offset) {
    if (!shared_bytes_) shared_bytes_ = gpu_shared_bytes(k_);  // once per kernel
    bool dynamic = *shared_bytes_ > kGpuStaticSharedBytes;
    if (!dynamic && offset < 0) return shared_array(elem, static_cast<uint64_t>(bytes) / module_->getDataLayout().getTypeAllocSize(elem), name);
    if (!shared_region_) {
      if (dynamic) {
        auto* type = llvm::ArrayType::get(b_.getInt8Ty(), 0);
        auto* g = new llvm::GlobalVariable(*module_, type, false, llvm::GlobalValue::ExternalLinkage, nullptr, name_ + "_dynamic_shared", nullptr,
                                           llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
        g->setAlignment(llvm::Align(kSharedArrayAlignment));
        shared_region_ = g;
      } else {
        shared_region_ = shared_array(b_.getInt8Ty(), static_cast<uint64_t>(*shared_bytes_), "shared");
      }
    }
    if (offset < 0) {
      offset = next_shared_offset_;
      next_shared_offset_ += shared_footprint(bytes);
    }
    return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), shared_region_, static_cast<uint64_t>(offset), name);
  }

  // A static shared-memory array of the module (address space 3).
  llvm::Value* shared_array(llvm::Type* elem, uint64_t n, const std::string& name) {
    auto* type = llvm::ArrayType::get(elem, std::max<uint64_t>(n, 1));
    auto* g = new llvm::GlobalVariable(*module_, type, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(type),
                                       name_ + "." + name, nullptr, llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
    g->setAlignment(llvm::Align(128));  // wmma reads pieces at 32-byte boundaries
    return g;
  }

  // threadIdx, blockIdx, blockDim or gridDim along an axis, as i64.
  llvm::Value* gpu_coordinate(cir::GpuIndexKind kind, int axis) {
    using I = llvm::Intrinsic::ID;
    static constexpr I ids[4][3] = {
        {llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z},
        {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
        {llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_z},
        {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z}};
    return b_.CreateZExt(b_.CreateIntrinsic(ids[static_cast<int>(kind)][axis], {}, {}), b_.getInt64Ty());
  }

  // A block-wide fold (cir::BlockReduce): each thread folds its elements of
  // the array, a warp folds its threads' values by butterfly shuffles, lane 0
  // of each warp leaves the warp's value in a shared scratch row, and every
  // thread folds that row, so all hold the result without a further barrier.
  // (The next use of this scratch follows another barrier, by which every
  // thread has read it.)
  void emit_block_reduce(const cir::BlockReduce& r) {
    const Buffer& array = buffer(r.array);
    DType t = array.type.dtype;
    llvm::Type* i64 = b_.getInt64Ty();
    BinaryOp combine = *reduce_binary_op(r.op);
    llvm::Value* identity = scalar_constant(reduce_identity(r.op, t), t);
    auto fold = [&](llvm::Value* acc, llvm::Value* v) { return arith(combine, t, acc, v, r.span); };
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});

    // This thread's elements: tid, tid + ntid, ... below count.
    llvm::Value* tid = gpu_coordinate(cir::GpuIndexKind::ThreadIdx, 0);
    llvm::Value* ntid = gpu_coordinate(cir::GpuIndexKind::BlockDim, 0);
    llvm::Value* count = b_.CreateSExt(expr(r.count), i64);
    llvm::Value* mine = counted_fold(tid, count, ntid, identity, [&](llvm::Value* acc, llvm::Value* i) {
      return fold(acc, from_memory(t, b_.CreateLoad(mem_type(t), element_ptr(array, i))));
    });

    // The lanes still running: a thread that stopped at a failed check
    // leaves the warp, and the others must not wait for it.
    llvm::Value* lanes = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_activemask, {}, {});
    for (int offset = 16; offset >= 1; offset /= 2) mine = fold(mine, shuffle_xor(mine, t, offset, lanes));
    llvm::Value* scratch = shared_array(mem_type(t), 32, r.name + ".warps");
    llvm::Value* warp = b_.CreateLShr(tid, 5);
    llvm::BasicBlock* write = llvm::BasicBlock::Create(ctx_, "warp.lead", fn_);
    llvm::BasicBlock* written = llvm::BasicBlock::Create(ctx_, "warp.written", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateAnd(tid, 31), b_.getInt64(0)), write, written);
    b_.SetInsertPoint(write);
    b_.CreateStore(to_memory(t, mine), b_.CreateGEP(mem_type(t), scratch, warp));
    b_.CreateBr(written);
    b_.SetInsertPoint(written);
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});

    llvm::Value* warps = b_.CreateLShr(b_.CreateAdd(ntid, b_.getInt64(31)), 5);
    values_[r.name] = counted_fold(b_.getInt64(0), warps, b_.getInt64(1), identity, [&](llvm::Value* acc, llvm::Value* w) {
      return fold(acc, from_memory(t, b_.CreateLoad(mem_type(t), b_.CreateGEP(mem_type(t), scratch, w))));
    });
  }

  // A constant in the register type of `t`.
  llvm::Value* scalar_constant(const Scalar& s, DType t) {
    llvm::Type* reg = reg_type(t);
    if (is_float(t)) return llvm::ConstantFP::get(reg, s.f);
    if (t == DType::Bool) return b_.getInt1(s.i != 0);
    return llvm::ConstantInt::get(reg, is_signed_int(t) ? static_cast<uint64_t>(s.i) : s.u, is_signed_int(t));
  }

  // acc = identity; for i = first; i < end; i += stride: acc = step(acc, i).
  template <class Step>
  llvm::Value* counted_fold(llvm::Value* first, llvm::Value* end, llvm::Value* stride, llvm::Value* identity, Step step) {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "fold.head", fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "fold.body", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "fold.end", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(i64, 2, "i");
    llvm::PHINode* acc = b_.CreatePHI(identity->getType(), 2, "acc");
    i->addIncoming(first, pre);
    acc->addIncoming(identity, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, end), body, done);
    b_.SetInsertPoint(body);
    llvm::Value* next = step(acc, i);
    i->addIncoming(b_.CreateAdd(i, stride), b_.GetInsertBlock());
    acc->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
    return acc;
  }

  // The value of the lane whose id differs from this one's in `offset`'s bit
  // (the lanes in `mask` take part); 64-bit values move as two halves.
  llvm::Value* shuffle_xor(llvm::Value* v, DType t, int offset, llvm::Value* mask) {
    llvm::Value* lane = b_.getInt32(offset);
    llvm::Value* clamp = b_.getInt32(31);
    llvm::Type* ty = v->getType();
    if (ty->isFloatTy()) return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, {}, {mask, v, lane, clamp});
    unsigned bits = ty->getPrimitiveSizeInBits();
    llvm::Type* int_ty = b_.getIntNTy(bits);
    llvm::Value* x = ty->isIntegerTy() ? v : b_.CreateBitCast(v, int_ty);
    auto shfl32 = [&](llvm::Value* w) { return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {}, {mask, w, lane, clamp}); };
    llvm::Value* r = nullptr;
    if (bits <= 32) {
      llvm::Value* w = bits == 32 ? x : is_signed_int(t) ? b_.CreateSExt(x, b_.getInt32Ty()) : b_.CreateZExt(x, b_.getInt32Ty());
      r = shfl32(w);
      if (bits < 32) r = b_.CreateTrunc(r, int_ty);
    } else {
      llvm::Value* low = shfl32(b_.CreateTrunc(x, b_.getInt32Ty()));
      llvm::Value* high = shfl32(b_.CreateTrunc(b_.CreateLShr(x, 32), b_.getInt32Ty()));
      r = b_.CreateOr(b_.CreateZExt(low, b_.getInt64Ty()), b_.CreateShl(b_.CreateZExt(high, b_.getInt64Ty()), 32));
    }
    return ty->isIntegerTy() ? r : b_.CreateBitCast(r, ty);
  }

  // Local arrays too large for the stack: allocated when the kernel starts
  // and freed when it returns (every path leaves through exit_).
  void allocate_heap_arrays() {
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

  static void collect_large_allocations(const cir::Block& blk, std::vector<const cir::Allocate*>& out) {
    for (const cir::Stmt& s : blk) {
      if (auto a = s.as<cir::Allocate>(); a && a->space != cir::MemorySpace::Fragment && allocation_bytes(*a) > kMaxStackArrayBytes) out.push_back(a);
      if (auto f = s.as<cir::For>()) collect_large_allocations(f->body, out);
      if (auto i = s.as<cir::If>()) {
        collect_large_allocations(i->then_body, out);
        collect_large_allocations(i->else_body, out);
      }
    }
  }

  void emit_matmul_block(const cir::MatMulBlock& m) {
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
  llvm::Value* accumulation(const cir::Assign& a) {
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

  llvm::AllocaInst* entry_alloca(llvm::Type* t, const std::string& name) {
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    llvm::AllocaInst* a = eb.CreateAlloca(t, nullptr, name);
    a->setAlignment(llvm::Align(16));
    return a;
  }

  // for var in lo..hi step s, as an iteration count k = 0..trips with
  // var = lo + k * s; the outer parallel loop runs only [begin, end) of it.
  // An element access or store: its index list and its buffer.
  using Site = std::pair<const std::vector<cir::AxisSel>*, std::string>;

  void emit_for(const cir::For& f, bool outer) {
    llvm::Value* stride = b_.getInt64(1);
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Value* lo = b_.CreateSExt(expr(f.lo), i64);
    llvm::Value* hi = b_.CreateSExt(expr(f.hi), i64);
    llvm::Value* step = b_.CreateSExt(expr(f.step), i64);
    if (!f.step.as<cir::IntImm>()) check(b_.CreateICmpSGT(step, b_.getInt64(0)), f.span, "loop step must be positive");
    llvm::Value* span = b_.CreateSub(hi, lo);
    llvm::Value* trips = b_.CreateSelect(b_.CreateICmpSGT(hi, lo),
                                         b_.CreateSDiv(b_.CreateAdd(span, b_.CreateSub(step, b_.getInt64(1))), step),
                                         b_.getInt64(0));
    llvm::Value* first = b_.getInt64(0);
    bool gpu_loop = target_ == EmitTarget::Nvptx && (f.loop_kind == cir::LoopKind::GpuBlock || f.loop_kind == cir::LoopKind::GpuThread);
    if (gpu_loop) {
      // Block loops stride over the grid's blocks, thread loops over the block's threads.
      bool block = f.loop_kind == cir::LoopKind::GpuBlock;
      first = gpu_coordinate(block ? cir::GpuIndexKind::BlockIdx : cir::GpuIndexKind::ThreadIdx, f.factor);
      stride = gpu_coordinate(block ? cir::GpuIndexKind::GridDim : cir::GpuIndexKind::BlockDim, f.factor);
      // A thread's asynchronous copies and groups are its own: one iteration each.
      if (!block && has_async_copies(f))
        check(b_.CreateICmpEQ(trips, stride), f.span, "a GPU thread loop with asynchronous copies has not one iteration per thread of the block");
    } else if (outer && target_ == EmitTarget::Nvptx) {
      first = global_thread_;
      stride = thread_count_;
    } else if (outer) {
      first = b_.CreateSelect(b_.CreateICmpSGT(begin_, first), begin_, first);
      trips = b_.CreateSelect(b_.CreateICmpSLT(end_, trips), end_, trips);
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
    emit_loop(f, lo, step, first, trips, stride);
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(merged);
    b_.SetInsertPoint(merged);
  }

  // Iterations first, first + stride, ... below trips.
  void emit_loop(const cir::For& f, llvm::Value* lo, llvm::Value* step, llvm::Value* first, llvm::Value* trips,
                 llvm::Value* stride) {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "for.head." + f.var, fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "for.body." + f.var, fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "for.end." + f.var, fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* k = b_.CreatePHI(i64, 2, "k." + f.var);
    k->addIncoming(first, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(k, trips), body, done);
    b_.SetInsertPoint(body);
    values_[f.var] = b_.CreateAdd(lo, b_.CreateMul(k, step), f.var);
    block(f.body);
    if (!b_.GetInsertBlock()->getTerminator()) {
      llvm::Value* next = b_.CreateAdd(k, stride);
      k->addIncoming(next, b_.GetInsertBlock());
      llvm::BranchInst* latch = b_.CreateBr(header);
      if (f.loop_kind == cir::LoopKind::Vectorized && f.factor > 1 && target_ == EmitTarget::Cpu) latch->setMetadata(llvm::LLVMContext::MD_loop, vectorize_hint(f.factor));
      if (f.loop_kind == cir::LoopKind::Unrolled) latch->setMetadata(llvm::LLVMContext::MD_loop, unroll_hint(f.factor));
    }
    b_.SetInsertPoint(done);
  }

  // Loop metadata asking for the loop to be unrolled whole (a schedule's
  // short loop over registers: unrolled, their indices become constants),
  // or `factor` iterations at a time where that is fewer than the loop runs.
  llvm::MDNode* unroll_hint(int factor) {
    llvm::MDNode* full = factor > 0 ? llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
                                                               llvm::ConstantAsMetadata::get(b_.getInt32(factor))})
                                    : llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")});
    llvm::MDNode* node = llvm::MDNode::getDistinct(ctx_, {nullptr, full});
    node->replaceOperandWith(0, node);
    return node;
  }

  // Loop metadata asking for vectors of `width` lanes and no interleaving: a
  // schedule marks short loops (a few vectors long) this way, which the cost
  // model would otherwise interleave past their trip count.
  llvm::MDNode* vectorize_hint(int width) {
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
  std::vector<Site> provable_sites(const cir::For& f) {
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

  // idx = c * var + (terms fixed before the loop), |c| < 2^31.
  static bool affine_in(const Expr& idx, const std::string& var, const std::set<std::string>& bound) {
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

  // Integer arithmetic that cannot fault: no memory, no division by a variable.
  static bool hoistable(const Expr& e) {
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

  // Every index of `sites` in bounds at the first and at the last iteration
  // (or no iteration at all); at most 2^32 iterations, so no product wraps.
  llvm::Value* in_bounds_at_ends(const cir::For& f, const std::vector<Site>& sites,
                                 llvm::Value* lo, llvm::Value* step, llvm::Value* first, llvm::Value* trips) {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Value* v0 = b_.CreateAdd(lo, b_.CreateMul(first, step));
    llvm::Value* v1 = b_.CreateAdd(lo, b_.CreateMul(b_.CreateSub(trips, b_.getInt64(1)), step));
    llvm::Value* ok = b_.CreateICmpULT(trips, b_.getInt64(int64_t{1} << 32));
    auto saved = values_.find(f.var) != values_.end() ? values_[f.var] : nullptr;
    for (llvm::Value* at : {v0, v1}) {
      values_[f.var] = at;
      for (const auto& [axes, name] : sites) {
        const Buffer& buf = buffer(name);
        for (size_t a = 0; a < axes->size(); ++a) {
          llvm::Value* extent = b_.CreateSExt(expr(buf.type.shape[a]), i64);
          llvm::Value* idx = b_.CreateSExt(expr((*axes)[a].index), i64);
          ok = b_.CreateAnd(ok, b_.CreateICmpULT(idx, extent));
        }
      }
    }
    if (saved) values_[f.var] = saved; else values_.erase(f.var);
    return b_.CreateOr(b_.CreateICmpSLE(trips, first), ok);
  }

  void emit_yield(const cir::Yield& y) {
    llvm::Value* offset = b_.getInt64(0);
    llvm::Value* ok = b_.getTrue();
    for (size_t a = 0; a < y.out_index.size(); ++a) {
      llvm::Value* extent = b_.CreateSExt(expr(acc_.type.shape[a]), b_.getInt64Ty());
      llvm::Value* idx = b_.CreateSExt(expr(y.out_index[a]), b_.getInt64Ty());
      ok = b_.CreateAnd(ok, b_.CreateICmpULT(idx, extent));
      offset = b_.CreateAdd(b_.CreateMul(offset, extent), idx);
    }
    check(ok, y.span, "yield to an output element out of range");
    llvm::Value* v = expr(y.value);
    DType vt = y.value->type.dtype;
    ReduceOp op = k_.reduce_op;
    if (is_arg_reduce(op)) {
      llvm::Value* index = b_.CreateSExt(expr(y.index), b_.getInt64Ty());
      llvm::Value* has_ptr = element_ptr(has_, offset);
      llvm::Value* best_ptr = element_ptr(best_, offset);
      llvm::Value* seen = from_memory(DType::Bool, b_.CreateLoad(b_.getInt8Ty(), has_ptr));
      llvm::Value* cur = from_memory(vt, b_.CreateLoad(mem_type(vt), best_ptr));
      llvm::Value* better;
      if (is_float(vt)) {
        // The first NaN wins; otherwise strictly better (first occurrence wins).
        llvm::Value* cur_nan = b_.CreateFCmpUNO(cur, cur);
        llvm::Value* v_nan = b_.CreateFCmpUNO(v, v);
        llvm::Value* cmp = op == ReduceOp::ArgMax ? b_.CreateFCmpOGT(v, cur) : b_.CreateFCmpOLT(v, cur);
        better = b_.CreateAnd(b_.CreateNot(cur_nan), b_.CreateOr(v_nan, cmp));
      } else {
        bool s = is_signed_int(vt);
        better = op == ReduceOp::ArgMax ? (s ? b_.CreateICmpSGT(v, cur) : b_.CreateICmpUGT(v, cur))
                                        : (s ? b_.CreateICmpSLT(v, cur) : b_.CreateICmpULT(v, cur));
      }
      llvm::Value* take = b_.CreateOr(b_.CreateNot(seen), better);
      llvm::BasicBlock* upd = llvm::BasicBlock::Create(ctx_, "arg.take", fn_);
      llvm::BasicBlock* cont = llvm::BasicBlock::Create(ctx_, "arg.cont", fn_);
      b_.CreateCondBr(take, upd, cont);
      b_.SetInsertPoint(upd);
      b_.CreateStore(b_.getInt8(1), has_ptr);
      b_.CreateStore(to_memory(vt, v), best_ptr);
      b_.CreateStore(index, element_ptr(acc_, offset));
      b_.CreateBr(cont);
      b_.SetInsertPoint(cont);
      return;
    }
    DType at = acc_.type.dtype;
    llvm::Value* acc_ptr = element_ptr(acc_, offset);
    llvm::Value* x = convert(v, vt, at);
    auto combine = [&](llvm::Value* acc) {
      if (std::optional<BinaryOp> b = reduce_binary_op(op)) return arith(*b, at, acc, x, y.span);
      return logical(op == ReduceOp::And, acc, x, at);
    };
    if (target_ == EmitTarget::Nvptx && gpu_block_depth_ > 0) return atomic_update(at, acc_ptr, combine);
    // CPU tasks (iterations of the outer parallel loop) that yield to an
    // element chosen without their variable may meet there at once.
    if (!task_var_.empty() && !std::any_of(y.out_index.begin(), y.out_index.end(), [&](const cir::Expr& e) { return cir::reads_any(e, {task_var_}); }))
      return atomic_update(at, acc_ptr, combine);
    llvm::Value* acc = from_memory(at, b_.CreateLoad(mem_type(at), acc_ptr));
    b_.CreateStore(to_memory(at, combine(acc)), acc_ptr);
  }

  // *ptr = update(*ptr), atomically: blocks of a GPU schedule yield into one
  // accumulator at once. A compare-and-swap of the value's bits, retried
  // until no other thread changed them in between, so every op keeps the
  // semantics of its non-atomic form (NaN-propagating min/max included).
  template <class Update>
  void atomic_update(DType t, llvm::Value* ptr, Update update, cir::FenceScope scope = cir::FenceScope::Device) {
    llvm::Type* mem = mem_type(t);
    llvm::Type* bits = b_.getIntNTy(static_cast<unsigned>(mem->getPrimitiveSizeInBits()));
    auto as_bits = [&](llvm::Value* v) { return v->getType() == bits ? v : b_.CreateBitCast(v, bits); };
    auto from_bits = [&](llvm::Value* v) { return mem == bits ? v : b_.CreateBitCast(v, mem); };
    llvm::LoadInst* first = b_.CreateLoad(bits, ptr);
    if (target_ == EmitTarget::Cpu) {
      // Other threads may swap the value meanwhile: an atomic read.
      first->setAtomic(llvm::AtomicOrdering::Monotonic);
      first->setAlignment(llvm::Align(mem->getPrimitiveSizeInBits() / 8));
    }
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* retry = llvm::BasicBlock::Create(ctx_, "atomic.retry", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "atomic.done", fn_);
    b_.CreateBr(retry);
    b_.SetInsertPoint(retry);
    llvm::PHINode* seen = b_.CreatePHI(bits, 2, "seen");
    seen->addIncoming(first, pre);
    llvm::Value* next = as_bits(to_memory(t, update(from_memory(t, from_bits(seen)))));
    llvm::Value *old, *swapped;
    if (std::optional<llvm::Intrinsic::ID> id = gpu_scoped_atomic(llvm::AtomicRMWInst::BAD_BINOP, bits, scope)) {
      // A block- or system-scope swap: the 32/64-bit scoped instruction.
      llvm::Value* p = generic_ptr(ptr);
      old = b_.CreateIntrinsic(*id, {bits, p->getType()}, {p, seen, next});
      swapped = b_.CreateICmpEQ(old, seen);
    } else {
      llvm::Value* pair = b_.CreateAtomicCmpXchg(ptr, seen, next, llvm::MaybeAlign(), llvm::AtomicOrdering::Monotonic,
                                                 llvm::AtomicOrdering::Monotonic);
      old = b_.CreateExtractValue(pair, 0);
      swapped = b_.CreateExtractValue(pair, 1);
    }
    seen->addIncoming(old, b_.GetInsertBlock());
    b_.CreateCondBr(swapped, done, retry);
    b_.SetInsertPoint(done);
  }

  // An atomic update of one element (cir::Atomic). Integer sums, min, max
  // and exchanges, and f32/f64 sums, are the target's read-modify-write
  // instructions; the rest (float min/max propagating NaN, f16/bf16 sums,
  // and/or) a compare-and-swap loop with the op's ordinary semantics. On a
  // GPU the scope picks the instruction's: the block (atom.cta), the device
  // (plain atom) or the system (atom.sys, for memory the host also sees).
  void emit_atomic(const cir::Atomic& a) {
    const Buffer& buf = buffer(a.buffer);
    DType t = buf.type.dtype;
    std::vector<cir::AxisSel> axes;
    for (const Expr& e : a.index) axes.push_back(cir::AxisSel::at(e));
    llvm::Value* x = expr(a.value);
    llvm::Value* ptr = element_ptr(buf, element_offset(buf, axes, a.span, a.buffer, true));
    using RMW = llvm::AtomicRMWInst::BinOp;
    std::optional<RMW> native;
    bool int_like = is_int(t);
    switch (a.op) {
      case cir::AtomicOp::Add:
        if (int_like) native = RMW::Add;
        else if (t == DType::F32 || t == DType::F64) native = RMW::FAdd;
        break;
      case cir::AtomicOp::Min:
      case cir::AtomicOp::Max:
        if (int_like) {
          bool s = is_signed_int(t), min = a.op == cir::AtomicOp::Min;
          native = min ? (s ? RMW::Min : RMW::UMin) : (s ? RMW::Max : RMW::UMax);
        }
        break;
      case cir::AtomicOp::Exchange:
        if (int_like || t == DType::F32 || t == DType::F64) native = RMW::Xchg;
        break;
      case cir::AtomicOp::And:
      case cir::AtomicOp::Or: break;  // logical, as everywhere: through the swap loop
    }
    if (native) {
      llvm::Value* v = to_memory(t, x);
      if (std::optional<llvm::Intrinsic::ID> id = gpu_scoped_atomic(*native, v->getType(), a.scope)) {
        llvm::Value* p = generic_ptr(ptr);
        b_.CreateIntrinsic(*id, {v->getType(), p->getType()}, {p, v});
        return;
      }
      // A plain GPU atomic has the device's scope, enough for a block's too;
      // on a CPU every atomic is the system's.
      if (target_ != EmitTarget::Nvptx || a.scope != cir::FenceScope::System) {
        b_.CreateAtomicRMW(*native, ptr, v, llvm::MaybeAlign(), llvm::AtomicOrdering::Monotonic);
        return;
      }
    }
    auto combine = [&](llvm::Value* cur) -> llvm::Value* {
      switch (a.op) {
        case cir::AtomicOp::Add: return arith(BinaryOp::Add, t, cur, x, a.span);
        case cir::AtomicOp::Min: return arith(BinaryOp::Min, t, cur, x, a.span);
        case cir::AtomicOp::Max: return arith(BinaryOp::Max, t, cur, x, a.span);
        case cir::AtomicOp::Exchange: return x;
        case cir::AtomicOp::And:
        case cir::AtomicOp::Or: return logical(a.op == cir::AtomicOp::And, cur, x, t);
      }
      return x;
    };
    atomic_update(t, ptr, combine, a.scope);
  }

  // The NVVM intrinsic of a block- or system-scope atomic (BAD_BINOP: the
  // compare-and-swap), where the scope is not the device's and the GPU has
  // one for this op and type; nothing otherwise (then the plain atomic).
  std::optional<llvm::Intrinsic::ID> gpu_scoped_atomic(llvm::AtomicRMWInst::BinOp op, llvm::Type* type, cir::FenceScope scope) {
    if (target_ != EmitTarget::Nvptx || scope == cir::FenceScope::Device) return std::nullopt;
    bool cta = scope == cir::FenceScope::Block;
    unsigned bits = type->getPrimitiveSizeInBits();
    bool word = type->isIntegerTy() && (bits == 32 || bits == 64);
    bool fword = type->isFloatTy() || type->isDoubleTy();
    using RMW = llvm::AtomicRMWInst::BinOp;
    namespace I = llvm::Intrinsic;
    switch (op) {
      case RMW::BAD_BINOP: if (word) return cta ? I::nvvm_atomic_cas_gen_i_cta : I::nvvm_atomic_cas_gen_i_sys; break;
      case RMW::Add: if (word) return cta ? I::nvvm_atomic_add_gen_i_cta : I::nvvm_atomic_add_gen_i_sys; break;
      case RMW::FAdd: if (fword) return cta ? I::nvvm_atomic_add_gen_f_cta : I::nvvm_atomic_add_gen_f_sys; break;
      case RMW::Min: if (word) return cta ? I::nvvm_atomic_min_gen_i_cta : I::nvvm_atomic_min_gen_i_sys; break;
      case RMW::Max: if (word) return cta ? I::nvvm_atomic_max_gen_i_cta : I::nvvm_atomic_max_gen_i_sys; break;
      case RMW::Xchg: if (word) return cta ? I::nvvm_atomic_exch_gen_i_cta : I::nvvm_atomic_exch_gen_i_sys; break;
      default: break;
    }
    return std::nullopt;
  }

  llvm::Value* generic_ptr(llvm::Value* p) {
    return p->getType()->getPointerAddressSpace() == 0 ? p : b_.CreateAddrSpaceCast(p, llvm::PointerType::getUnqual(ctx_));
  }

  // `a and b` / `a or b` of two values of dtype t, as a value of t (0 or 1).
  llvm::Value* logical(bool is_and, llvm::Value* a, llvm::Value* b, DType t) {
    llvm::Value* r = is_and ? b_.CreateAnd(truthy(a, t), truthy(b, t)) : b_.CreateOr(truthy(a, t), truthy(b, t));
    return convert(r, DType::Bool, t);
  }

  llvm::Value* truthy(llvm::Value* v, DType t) {
    if (t == DType::Bool) return v;
    if (is_float(t)) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }

  // ------------------------------------------------------------ expressions

  llvm::Value* expr(const Expr& e) {
    DType t = e->type.dtype;
    switch (e->kind) {
      case cir::ExprKind::IntImm:
        return llvm::ConstantInt::get(reg_type(t), static_cast<uint64_t>(e.as<cir::IntImm>()->value), is_signed_int(t));
      case cir::ExprKind::FloatImm: return llvm::ConstantFP::get(reg_type(t), e.as<cir::FloatImm>()->value);
      case cir::ExprKind::BoolImm: return b_.getInt1(e.as<cir::BoolImm>()->value);
      case cir::ExprKind::Var: {
        const std::string& name = e.as<cir::Var>()->name;
        if (auto it = vars_.find(name); it != vars_.end())
          return b_.CreateLoad(reg_type(it->second.dtype), it->second.slot, name);
        if (auto it = values_.find(name); it != values_.end()) return it->second;
        throw std::logic_error("LLVM lowering: unknown name " + name);
      }
      case cir::ExprKind::Cast: {
        auto c = e.as<cir::Cast>();
        return convert(expr(c->value), c->value->type.dtype, t);
      }
      case cir::ExprKind::Unary: {
        auto u = e.as<cir::Unary>();
        llvm::Value* a = expr(u->a);
        DType at = u->a->type.dtype;
        if (u->op == UnaryOp::Not) return b_.CreateNot(truthy(a, at));
        if (is_float(at)) return round_to(at, b_.CreateFNeg(a));
        if (at == DType::Bool) return a;
        return b_.CreateNeg(a);
      }
      case cir::ExprKind::Binary: return binary(*e.as<cir::Binary>());
      case cir::ExprKind::Select: {
        auto s = e.as<cir::Select>();
        return b_.CreateSelect(expr(s->cond), expr(s->t), expr(s->f));
      }
      case cir::ExprKind::Math: return math(*e.as<cir::Math>());
      case cir::ExprKind::Access: {
        auto a = e.as<cir::Access>();
        const Buffer& buf = buffer(a->buffer);
        llvm::Value* off = element_offset(buf, a->axes, a->span, a->buffer, false);
        return from_memory(buf.type.dtype, b_.CreateLoad(mem_type(buf.type.dtype), element_ptr(buf, off)));
      }
      default: throw std::logic_error("LLVM lowering: unsupported expression " + cir::print(e));
    }
  }

  // Conversions with the reference's rules: float to int truncates and
  // saturates (NaN gives 0); int to float goes through f64; anything to bool
  // is "not zero".
  llvm::Value* convert(llvm::Value* v, DType from, DType to) {
    if (from == to) return v;
    llvm::Type* rt = reg_type(to);
    if (to == DType::Bool) return truthy(v, from);
    if (is_float(from)) {
      if (is_float(to)) {
        llvm::Value* r = v;
        if (from == DType::F64) r = b_.CreateFPTrunc(v, rt);
        else if (to == DType::F64) r = b_.CreateFPExt(v, rt);
        return round_to(to, r);
      }
      llvm::Intrinsic::ID id = is_signed_int(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
      return b_.CreateIntrinsic(id, {rt, v->getType()}, {v});
    }
    if (from == DType::Bool) {
      if (is_float(to)) return b_.CreateUIToFP(v, rt);
      return b_.CreateZExt(v, rt);
    }
    if (is_float(to)) {
      llvm::Value* d = is_signed_int(from) ? b_.CreateSIToFP(v, b_.getDoubleTy()) : b_.CreateUIToFP(v, b_.getDoubleTy());
      if (to == DType::F64) return d;
      return round_to(to, b_.CreateFPTrunc(d, rt));
    }
    return b_.CreateIntCast(v, rt, is_signed_int(from));
  }

  llvm::Value* binary(const cir::Binary& bin) {
    DType t = bin.a->type.dtype;
    if (bin.op == BinaryOp::And || bin.op == BinaryOp::Or) return logical(bin);
    llvm::Value* a = expr(bin.a);
    llvm::Value* c = expr(bin.b);
    if (is_comparison(bin.op)) return compare(bin.op, t, a, c);
    return arith(bin.op, t, a, c, bin.span);
  }

  // `and`/`or` evaluate their right side only when needed, as written
  // (`i < n and x[i] > 0` must not read x[n]).
  llvm::Value* logical(const cir::Binary& bin) {
    llvm::Value* a = truthy(expr(bin.a), bin.a->type.dtype);
    llvm::BasicBlock* lhs_end = b_.GetInsertBlock();
    llvm::BasicBlock* rhs_bb = llvm::BasicBlock::Create(ctx_, "logic.rhs", fn_);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "logic.end", fn_);
    if (bin.op == BinaryOp::And)
      b_.CreateCondBr(a, rhs_bb, merge);
    else
      b_.CreateCondBr(a, merge, rhs_bb);
    b_.SetInsertPoint(rhs_bb);
    llvm::Value* c = truthy(expr(bin.b), bin.b->type.dtype);
    llvm::BasicBlock* rhs_end = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    llvm::PHINode* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
    phi->addIncoming(b_.getInt1(bin.op == BinaryOp::Or), lhs_end);
    phi->addIncoming(c, rhs_end);
    return phi;
  }

  llvm::Value* compare(BinaryOp op, DType t, llvm::Value* a, llvm::Value* c) {
    if (is_float(t)) {
      switch (op) {
        case BinaryOp::Eq: return b_.CreateFCmpOEQ(a, c);
        case BinaryOp::Ne: return b_.CreateFCmpUNE(a, c);
        case BinaryOp::Lt: return b_.CreateFCmpOLT(a, c);
        case BinaryOp::Le: return b_.CreateFCmpOLE(a, c);
        case BinaryOp::Gt: return b_.CreateFCmpOGT(a, c);
        default: return b_.CreateFCmpOGE(a, c);
      }
    }
    bool s = is_signed_int(t);
    switch (op) {
      case BinaryOp::Eq: return b_.CreateICmpEQ(a, c);
      case BinaryOp::Ne: return b_.CreateICmpNE(a, c);
      case BinaryOp::Lt: return s ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c);
      case BinaryOp::Le: return s ? b_.CreateICmpSLE(a, c) : b_.CreateICmpULE(a, c);
      case BinaryOp::Gt: return s ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c);
      default: return s ? b_.CreateICmpSGE(a, c) : b_.CreateICmpUGE(a, c);
    }
  }

  llvm::Value* arith(BinaryOp op, DType t, llvm::Value* a, llvm::Value* c, Span span) {
    if (t == DType::Bool) {  // as the reference: 0/1 arithmetic, then "not zero"
      switch (op) {
        case BinaryOp::Add: case BinaryOp::Max: return b_.CreateOr(a, c);
        case BinaryOp::Mul: case BinaryOp::Min: return b_.CreateAnd(a, c);
        case BinaryOp::Sub: return b_.CreateXor(a, c);
        default: {
          llvm::Value* r = arith(op, DType::I64, b_.CreateZExt(a, b_.getInt64Ty()), b_.CreateZExt(c, b_.getInt64Ty()), span);
          return b_.CreateICmpNE(r, b_.getInt64(0));
        }
      }
    }
    if (is_float(t)) {
      llvm::Value* r = nullptr;
      switch (op) {
        case BinaryOp::Add: r = b_.CreateFAdd(a, c); break;
        case BinaryOp::Sub: r = b_.CreateFSub(a, c); break;
        case BinaryOp::Mul: r = b_.CreateFMul(a, c); break;
        case BinaryOp::Div: r = b_.CreateFDiv(a, c); break;
        // NVPTX lowers frem as x - trunc(x / y) * y, which is not exact; fmod is.
        case BinaryOp::Mod: r = target_ == EmitTarget::Nvptx ? libm2("fmod", a, c) : b_.CreateFRem(a, c); break;
        case BinaryOp::Pow: r = libm2("pow", a, c); break;
        case BinaryOp::Min: r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a, c); break;
        case BinaryOp::Max: r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, c); break;
        default: throw std::logic_error("LLVM lowering: bad float operator");
      }
      return round_to(t, r);
    }
    bool s = is_signed_int(t);
    switch (op) {
      case BinaryOp::Add: return b_.CreateAdd(a, c);
      case BinaryOp::Sub: return b_.CreateSub(a, c);
      case BinaryOp::Mul: return b_.CreateMul(a, c);
      case BinaryOp::Div:
      case BinaryOp::Mod: {
        llvm::Value* zero = llvm::ConstantInt::get(c->getType(), 0);
        check(b_.CreateICmpNE(c, zero), span, op == BinaryOp::Div ? "integer division by zero" : "integer remainder by zero");
        if (!s) return op == BinaryOp::Div ? b_.CreateUDiv(a, c) : b_.CreateURem(a, c);
        // x / -1 wraps (INT_MIN / -1 is INT_MIN) instead of trapping.
        llvm::Value* minus_one = b_.CreateICmpEQ(c, llvm::ConstantInt::getSigned(c->getType(), -1));
        llvm::Value* safe = b_.CreateSelect(minus_one, llvm::ConstantInt::get(c->getType(), 1), c);
        llvm::Value* q = op == BinaryOp::Div ? b_.CreateSDiv(a, safe) : b_.CreateSRem(a, safe);
        llvm::Value* wrapped = op == BinaryOp::Div ? b_.CreateNeg(a) : zero;
        return b_.CreateSelect(minus_one, wrapped, q);
      }
      case BinaryOp::Pow: return int_pow(t, a, c, span);
      case BinaryOp::Min: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, c);
      case BinaryOp::Max: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, c);
      default: throw std::logic_error("LLVM lowering: bad integer operator");
    }
  }

  llvm::Value* int_pow(DType t, llvm::Value* a, llvm::Value* c, Span span) {
    bool s = is_signed_int(t);
    llvm::Type* i64 = b_.getInt64Ty();
    auto* fty = llvm::FunctionType::get(i64, {i64, i64, b_.getInt32Ty(), llvm::PointerType::getUnqual(ctx_)}, false);
    llvm::FunctionCallee fn = target_ == EmitTarget::Nvptx ? llvm::FunctionCallee(fty, device_ipow(fty))
                                                             : module_->getOrInsertFunction("zyntax_rt_ipow", fty);
    llvm::AllocaInst* err = entry_alloca(b_.getInt32Ty(), "pow.err");
    b_.CreateStore(b_.getInt32(0), err);
    llvm::Value* r = b_.CreateCall(fn, {b_.CreateIntCast(a, i64, s), b_.CreateIntCast(c, i64, s), b_.getInt32(s), err});
    check(b_.CreateICmpEQ(b_.CreateLoad(b_.getInt32Ty(), err), b_.getInt32(0)), span, "integer power with a negative exponent");
    return b_.CreateTrunc(r, reg_type(t));
  }

  // zyntax_rt_ipow for the GPU, where the runtime's is not callable: the
  // same steps as IR in the module.
  llvm::Function* device_ipow(llvm::FunctionType* fty) {
    if (llvm::Function* f = module_->getFunction("zyntax_ipow")) return f;
    llvm::Function* f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "zyntax_ipow", module_.get());
    auto arg = f->arg_begin();
    llvm::Value* base = &*arg++;
    llvm::Value* exponent = &*arg++;
    llvm::Value* is_signed = &*arg++;
    llvm::Value* error = &*arg;
    llvm::IRBuilder<> b(ctx_);
    auto bb = [&](const char* n) { return llvm::BasicBlock::Create(ctx_, n, f); };
    llvm::BasicBlock *entry = bb("entry"), *negative = bb("negative"), *minus_one = bb("minus_one"), *fail = bb("fail"),
                     *loop = bb("loop"), *body = bb("body"), *done = bb("done");
    b.SetInsertPoint(entry);
    llvm::Value* neg = b.CreateAnd(b.CreateICmpNE(is_signed, b.getInt32(0)), b.CreateICmpSLT(exponent, b.getInt64(0)));
    b.CreateCondBr(neg, negative, loop);
    // A negative exponent: only 1 and -1 have an integer power.
    b.SetInsertPoint(negative);
    llvm::BasicBlock* one = bb("one");
    b.CreateCondBr(b.CreateICmpEQ(base, b.getInt64(1)), one, minus_one);
    b.SetInsertPoint(one);
    b.CreateRet(b.getInt64(1));
    b.SetInsertPoint(minus_one);
    llvm::BasicBlock* sign = bb("sign");
    b.CreateCondBr(b.CreateICmpEQ(base, b.getInt64(static_cast<uint64_t>(-1))), sign, fail);
    b.SetInsertPoint(sign);
    llvm::Value* even = b.CreateICmpEQ(b.CreateAnd(exponent, b.getInt64(1)), b.getInt64(0));
    b.CreateRet(b.CreateSelect(even, b.getInt64(1), b.getInt64(static_cast<uint64_t>(-1))));
    b.SetInsertPoint(fail);
    b.CreateStore(b.getInt32(1), error);
    b.CreateRet(b.getInt64(0));
    // Square and multiply, wrapping like repeated multiplication.
    b.SetInsertPoint(loop);
    llvm::PHINode* e = b.CreatePHI(b.getInt64Ty(), 2);
    llvm::PHINode* x = b.CreatePHI(b.getInt64Ty(), 2);
    llvm::PHINode* r = b.CreatePHI(b.getInt64Ty(), 2);
    e->addIncoming(exponent, entry);
    x->addIncoming(base, entry);
    r->addIncoming(b.getInt64(1), entry);
    b.CreateCondBr(b.CreateICmpNE(e, b.getInt64(0)), body, done);
    b.SetInsertPoint(body);
    llvm::Value* odd = b.CreateICmpNE(b.CreateAnd(e, b.getInt64(1)), b.getInt64(0));
    r->addIncoming(b.CreateSelect(odd, b.CreateMul(r, x), r), body);
    x->addIncoming(b.CreateMul(x, x), body);
    e->addIncoming(b.CreateLShr(e, 1), body);
    b.CreateBr(loop);
    b.SetInsertPoint(done);
    b.CreateRet(r);
    return f;
  }

  // ------------------------------------------------------------ math

  llvm::Value* to_f64(llvm::Value* v) { return v->getType()->isDoubleTy() ? v : b_.CreateFPExt(v, b_.getDoubleTy()); }
  llvm::Value* f64(double x) { return llvm::ConstantFP::get(b_.getDoubleTy(), x); }

  // libm's name of a double function, or libdevice's on the GPU.
  std::string math_symbol(const char* name) const {
    return target_ == EmitTarget::Nvptx ? std::string("__nv_") + name : std::string(name);
  }

  llvm::Value* libm1(const char* name, llvm::Value* x) {
    llvm::Type* d = b_.getDoubleTy();
    llvm::FunctionCallee fn = module_->getOrInsertFunction(math_symbol(name), llvm::FunctionType::get(d, {d}, false));
    return b_.CreateCall(fn, {to_f64(x)});
  }

  // Two-argument libm function on the register type of `a` (computed in f64).
  llvm::Value* libm2(const char* name, llvm::Value* a, llvm::Value* c) {
    llvm::Type* d = b_.getDoubleTy();
    llvm::FunctionCallee fn = module_->getOrInsertFunction(math_symbol(name), llvm::FunctionType::get(d, {d, d}, false));
    llvm::Value* r = b_.CreateCall(fn, {to_f64(a), to_f64(c)});
    return a->getType()->isDoubleTy() ? r : b_.CreateFPTrunc(r, a->getType());
  }

  // ------------------------------------------------------------ f32 exp and tanh
  //
  // exp and tanh dominate element-wise and softmax kernels. In f32 they are
  // computed inline (Cephes' range reduction and polynomials), so loops
  // vectorise instead of calling libm per element in f64; they are within
  // 2 ulp of the correctly rounded result the reference gives. Every step of
  // exp is an FMA, an integer op or a compare; tanh ends in one divide.

  llvm::Value* f32c(double v) { return llvm::ConstantFP::get(b_.getFloatTy(), v); }
  llvm::Value* i32c(int32_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value* as_int(llvm::Value* f) { return b_.CreateBitCast(f, b_.getInt32Ty()); }
  llvm::Value* as_float(llvm::Value* i) { return b_.CreateBitCast(i, b_.getFloatTy()); }

  // a * b + c, fused where the target has FMA: the polynomials' own steps,
  // whose rounding the 2 ulp bound already covers.
  llvm::Value* madd(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
  }

  // Adding 1.5 * 2^23 rounds a float of magnitude < 2^22 to the nearest
  // integer n and leaves n in the low mantissa bits; with the exponent bias
  // added to the constant, those bits shifted into place are the float 2^n.
  static constexpr double kRoundMagic = 12582912.0;

  // exp(r) for |r| <= ln2/2 (and a little beyond): 1 + r + r^2 P(r).
  llvm::Value* exp_reduced(llvm::Value* r) {
    llvm::Value* p = f32c(1.9875691500e-4);
    for (double c : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
      p = madd(p, r, f32c(c));
    return b_.CreateFAdd(madd(p, b_.CreateFMul(r, r), r), f32c(1.0));
  }

  // min(max(x, lo), hi), but a NaN x stays NaN (and so flows through the
  // polynomial and out, with no select at the end); one min and one max.
  llvm::Value* clamp_keeping_nan(llvm::Value* x, double lo, double hi) {
    llvm::Value* above_lo = b_.CreateSelect(b_.CreateFCmpOLT(x, f32c(lo)), f32c(lo), x);
    return b_.CreateSelect(b_.CreateFCmpOGT(above_lo, f32c(hi)), f32c(hi), above_lo);
  }

  // x - n ln2, with ln2 split so that n * ln2_hi is exact (Cody and Waite).
  llvm::Value* reduce_ln2(llvm::Value* x, llvm::Value* n) {
    return madd(n, f32c(2.12194440e-4), madd(n, f32c(-0.693359375), x));
  }

  llvm::Value* fast_exp(llvm::Value* x) {
    // Beyond these, exp is inf or 0 anyway; clamping keeps 2^n in range.
    llvm::Value* xc = clamp_keeping_nan(x, -104.0, 89.0);
    llvm::Value* f = madd(xc, f32c(1.44269504088896341), f32c(kRoundMagic));
    llvm::Value* n = b_.CreateFSub(f, f32c(kRoundMagic));
    llvm::Value* p = exp_reduced(reduce_ln2(xc, n));
    // p * 2^n for n in [-150, 128], in two exact steps so that results
    // reaching the subnormal range round only once.
    llvm::Value* ni = b_.CreateSub(as_int(f), as_int(f32c(kRoundMagic)));
    llvm::Value* n1 = b_.CreateAShr(ni, 1);
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    auto pow2 = [&](llvm::Value* k) { return as_float(b_.CreateShl(b_.CreateAdd(k, i32c(127)), 23)); };
    return b_.CreateFMul(b_.CreateFMul(p, pow2(n1)), pow2(n2));  // NaN stays NaN through p
  }

  // expm1(r) for |r| <= ln2/2 (and a little beyond): r + r^2 (1/2 + r P(r)),
  // P fitted to within 2e-8 of expm1's relative value; no cancellation near 0.
  llvm::Value* expm1_reduced(llvm::Value* r) {
    llvm::Value* q = f32c(1.3941927457213378e-3);
    for (double c : {8.367779467143038e-3, 4.1666390952678996e-2, 1.6666534423138976e-1, 0.5}) q = madd(q, r, f32c(c));
    return madd(q, b_.CreateFMul(r, r), r);
  }

  // tanh |x| = e / (e + 2) with e = expm1(2|x|), the sign of x copied back:
  // one formula over the whole range (no cancellation near 0, where e is
  // about 2|x|). Beyond |x| = 9.1 tanh rounds to 1, so 2|x| stays where exp
  // needs no range handling and 2^n is one shift of the rounding constant's
  // bits; e = 2^n expm1(r) + (2^n - 1). A true divide: a reciprocal estimate
  // would add an ulp, and the loop has enough other work to hide it. NaN
  // flows through.
  llvm::Value* fast_tanh(llvm::Value* x) {
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* y = b_.CreateFMul(b_.CreateSelect(b_.CreateFCmpOGT(ax, f32c(9.1)), f32c(9.1), ax), f32c(2.0));
    llvm::Value* f = madd(y, f32c(1.44269504088896341), f32c(kRoundMagic + 127.0));
    llvm::Value* n = b_.CreateFSub(f, f32c(kRoundMagic + 127.0));
    llvm::Value* scale = as_float(b_.CreateShl(as_int(f), 23));  // 2^n
    llvm::Value* e = madd(scale, expm1_reduced(reduce_ln2(y, n)), b_.CreateFSub(scale, f32c(1.0)));
    llvm::Value* t = b_.CreateFDiv(e, b_.CreateFAdd(e, f32c(2.0)));
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, t, x);
  }

  // erf of an f64 `d` to within 2e-8 (so erf of an f32 rounds to within
  // 1 ulp): d P(d^2) / Q(d^2), a rational fitted to erf on [0, 3.92], beyond
  // which erf rounds to ±1 in f32. Vector f64 arithmetic, no libm call.
  llvm::Value* erf_rational(llvm::Value* d) {
    llvm::Type* f64t = b_.getDoubleTy();
    auto c = [&](double v) { return llvm::ConstantFP::get(f64t, v); };
    // Clamped keeping NaN, as clamp_keeping_nan in f64.
    llvm::Value* lo = b_.CreateSelect(b_.CreateFCmpOLT(d, c(-3.92)), c(-3.92), d);
    llvm::Value* x = b_.CreateSelect(b_.CreateFCmpOGT(lo, c(3.92)), c(3.92), lo);
    llvm::Value* s = b_.CreateFMul(x, x);
    auto horner = [&](std::initializer_list<double> coefficients) {  // highest degree first
      llvm::Value* r = nullptr;
      for (double k : coefficients) r = r ? madd(r, s, c(k)) : c(k);
      return r;
    };
    llvm::Value* p = horner({2.0428020050672346e-06, 0.0002857252011551452, 0.00380419366925265, 0.05286758831280999,
                             0.19130654475081452, 1.1283791670955126});
    llvm::Value* q = horner({3.806039534569143e-05, 0.0011718445442006392, 0.015046480707136246, 0.11448093915405412,
                             0.5028736534848581, 1.0});
    return b_.CreateFDiv(b_.CreateFMul(x, p), q);
  }

  // The gelus' value `g` of an f32 `x`, but NaN at x = -inf, where the
  // formula the reference computes is -inf * 0.
  llvm::Value* nan_at_minus_inf(llvm::Value* x, llvm::Value* g) {
    llvm::Value* minus_inf = b_.CreateFCmpOEQ(x, f32c(-std::numeric_limits<double>::infinity()));
    return b_.CreateSelect(minus_inf, f32c(std::numeric_limits<double>::quiet_NaN()), g);
  }

  llvm::Value* math(const cir::Math& m) {
    DType t = m.type.dtype;
    std::vector<llvm::Value*> args;
    for (const Expr& a : m.args) args.push_back(expr(a));
    llvm::Value* x = args[0];
    if (!is_float(t)) return int_math(m.fn, t, args);
    if (x->getType()->isFloatTy()) {  // f32, and f16/bf16 computed in f32
      switch (m.fn) {
        case MathFn::Exp: return round_to(t, fast_exp(x));
        case MathFn::Tanh: return round_to(t, fast_tanh(x));
        case MathFn::Sigmoid:
          return round_to(t, b_.CreateFDiv(f32c(1.0), b_.CreateFAdd(f32c(1.0), fast_exp(b_.CreateFNeg(x)))));
        case MathFn::Silu: return round_to(t, b_.CreateFDiv(x, b_.CreateFAdd(f32c(1.0), fast_exp(b_.CreateFNeg(x)))));
        case MathFn::Erf: return round_to(t, b_.CreateFPTrunc(erf_rational(b_.CreateFPExt(x, b_.getDoubleTy())), x->getType()));
        case MathFn::Gelu: {  // 0.5 x (1 + erf(x / sqrt(2))), in f64 as the reference, erf inline
          llvm::Value* d = b_.CreateFPExt(x, b_.getDoubleTy());
          llvm::Value* e = erf_rational(b_.CreateFMul(d, llvm::ConstantFP::get(d->getType(), 0.70710678118654752440)));
          llvm::Value* g = b_.CreateFMul(b_.CreateFMul(llvm::ConstantFP::get(d->getType(), 0.5), d),
                                         b_.CreateFAdd(llvm::ConstantFP::get(d->getType(), 1.0), e));
          return round_to(t, nan_at_minus_inf(x, b_.CreateFPTrunc(g, x->getType())));
        }
        case MathFn::GeluTanh: {
          // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): no cancellation where
          // tanh(u) nears -1.
          llvm::Value* u2 = b_.CreateFMul(f32c(2.0 * 0.79788456080286535588), madd(b_.CreateFMul(f32c(0.044715), b_.CreateFMul(x, x)), x, x));
          return round_to(t, nan_at_minus_inf(x, b_.CreateFDiv(x, b_.CreateFAdd(f32c(1.0), fast_exp(b_.CreateFNeg(u2))))));
        }
        default: break;
      }
    }
    llvm::Type* rt = x->getType();
    auto back = [&](llvm::Value* d) { return round_to(t, rt->isDoubleTy() ? d : b_.CreateFPTrunc(d, rt)); };
    auto intrinsic = [&](llvm::Intrinsic::ID id) { return round_to(t, b_.CreateUnaryIntrinsic(id, x)); };
    switch (m.fn) {
      case MathFn::Sin: return back(libm1("sin", x));
      case MathFn::Cos: return back(libm1("cos", x));
      case MathFn::Tan: return back(libm1("tan", x));
      case MathFn::Asin: return back(libm1("asin", x));
      case MathFn::Acos: return back(libm1("acos", x));
      case MathFn::Atan: return back(libm1("atan", x));
      case MathFn::Sinh: return back(libm1("sinh", x));
      case MathFn::Cosh: return back(libm1("cosh", x));
      case MathFn::Tanh: return back(libm1("tanh", x));
      case MathFn::Exp: return back(libm1("exp", x));
      case MathFn::Exp2: return back(libm1("exp2", x));
      case MathFn::Log: return back(libm1("log", x));
      case MathFn::Log2: return back(libm1("log2", x));
      case MathFn::Log10: return back(libm1("log10", x));
      case MathFn::Erf: return back(libm1("erf", x));
      case MathFn::Sqrt: return intrinsic(llvm::Intrinsic::sqrt);  // correctly rounded in every precision
      case MathFn::Rsqrt: return back(b_.CreateFDiv(f64(1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, to_f64(x))));
      case MathFn::Abs: return intrinsic(llvm::Intrinsic::fabs);
      case MathFn::Floor: return intrinsic(llvm::Intrinsic::floor);
      case MathFn::Ceil: return intrinsic(llvm::Intrinsic::ceil);
      case MathFn::Round: return intrinsic(llvm::Intrinsic::nearbyint);
      case MathFn::Trunc: return intrinsic(llvm::Intrinsic::trunc);
      case MathFn::Sign: {
        llvm::Value* zero = llvm::ConstantFP::get(rt, 0.0);
        llvm::Value* s = b_.CreateSelect(b_.CreateFCmpOGT(x, zero), llvm::ConstantFP::get(rt, 1.0),
                                         b_.CreateSelect(b_.CreateFCmpOLT(x, zero), llvm::ConstantFP::get(rt, -1.0), zero));
        return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, s);
      }
      case MathFn::Relu: {
        llvm::Value* zero = llvm::ConstantFP::get(rt, 0.0);
        return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, b_.CreateSelect(b_.CreateFCmpOGT(x, zero), x, zero));
      }
      case MathFn::Gelu: {  // 0.5 * x * (1 + erf(x / sqrt(2))), in f64 as the reference
        llvm::Value* d = to_f64(x);
        llvm::Value* e = libm1("erf", b_.CreateFDiv(d, f64(1.4142135623730950488)));
        return back(b_.CreateFMul(b_.CreateFMul(f64(0.5), d), b_.CreateFAdd(f64(1.0), e)));
      }
      case MathFn::GeluTanh: {
        llvm::Value* d = to_f64(x);
        llvm::Value* cube = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(f64(0.044715), d), d), d);
        llvm::Value* inner = b_.CreateFMul(f64(0.79788456080286535588), b_.CreateFAdd(d, cube));
        return back(b_.CreateFMul(b_.CreateFMul(f64(0.5), d), b_.CreateFAdd(f64(1.0), libm1("tanh", inner))));
      }
      case MathFn::Sigmoid: {
        llvm::Value* d = to_f64(x);
        return back(b_.CreateFDiv(f64(1.0), b_.CreateFAdd(f64(1.0), libm1("exp", b_.CreateFNeg(d)))));
      }
      case MathFn::Silu: {
        llvm::Value* d = to_f64(x);
        return back(b_.CreateFDiv(d, b_.CreateFAdd(f64(1.0), libm1("exp", b_.CreateFNeg(d)))));
      }
      case MathFn::Pow: return round_to(t, libm2("pow", x, args[1]));
      case MathFn::Atan2: return round_to(t, libm2("atan2", x, args[1]));
      case MathFn::Min: return round_to(t, b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, args[1]));
      case MathFn::Max: return round_to(t, b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, args[1]));
      case MathFn::Clamp:
        return round_to(t, b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum,
                                                    b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, args[1]), args[2]));
      case MathFn::Fma:  // rounded once: in f32 and f64 themselves, as the reference; f16/bf16 through f64
        if (t == DType::F32 || t == DType::F64) return b_.CreateIntrinsic(llvm::Intrinsic::fma, {rt}, {x, args[1], args[2]});
        return back(b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getDoubleTy()}, {to_f64(x), to_f64(args[1]), to_f64(args[2])}));
    }
    throw std::logic_error("LLVM lowering: unknown math function");
  }

  llvm::Value* int_math(MathFn fn, DType t, const std::vector<llvm::Value*>& args) {
    llvm::Value* x = args[0];
    bool s = is_signed_int(t);
    llvm::Value* zero = llvm::ConstantInt::get(x->getType(), 0);
    switch (fn) {
      case MathFn::Abs: return s ? b_.CreateSelect(b_.CreateICmpSLT(x, zero), b_.CreateNeg(x), x) : x;
      case MathFn::Sign:
        if (!s) return b_.CreateZExt(b_.CreateICmpNE(x, zero), x->getType());
        return b_.CreateSelect(b_.CreateICmpSGT(x, zero), llvm::ConstantInt::get(x->getType(), 1),
                               b_.CreateSelect(b_.CreateICmpSLT(x, zero), llvm::ConstantInt::getSigned(x->getType(), -1), zero));
      case MathFn::Relu: return s ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, zero) : x;
      case MathFn::Min: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x, args[1]);
      case MathFn::Max: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, args[1]);
      case MathFn::Clamp:
        return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin,
                                        b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, args[1]),
                                        args[2]);
      default: throw std::logic_error(std::string("LLVM lowering: ") + math_fn_name(fn) + " on integers");
    }
  }

  struct Var {
    llvm::AllocaInst* slot;
    DType dtype;
  };

  const cir::Kernel& k_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::unique_ptr<llvm::Module> module_;
  std::string name_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::BasicBlock* exit_ = nullptr;
  EmitTarget target_;
  llvm::Value* begin_ = nullptr;  // CPU: the range of outer iterations to run
  llvm::Value* end_ = nullptr;
  llvm::Value* global_thread_ = nullptr;  // GPU: this thread's index in the grid, and the grid's size
  llvm::Value* thread_count_ = nullptr;
  int gpu_block_depth_ = 0;                 // GPU block loops around the statement being emitted
  std::optional<int64_t> shared_bytes_;   // the kernel's gpu_shared_bytes, once asked
  llvm::Value* shared_region_ = nullptr;  // the block's shared memory, when its arrays are at offsets in one region
  int64_t next_shared_offset_ = 0;        // where the next array not placed goes in it
  int gpu_thread_depth_ = 0;                // and GPU thread loops
  std::string task_var_;                    // a CPU reduce kernel's outer parallel loop variable
  std::set<std::string> thread_private_;    // local arrays of a GPU block, one row per thread
  std::map<std::string, cir::Type> fragment_types_;                // tensor-core accumulators, as allocated
  std::map<std::string, codegen::TileMmaFragments> fragments_;     // ... and their registers
  llvm::Value* status_ = nullptr;
  std::map<std::string, Buffer> buffers_;
  std::map<std::string, llvm::Value*> heap_arrays_;
  // Accesses proven in bounds for the loop being emitted: no check.
  std::set<const std::vector<cir::AxisSel>*> proven_;
  std::map<std::string, llvm::Value*> values_;
  std::map<std::string, Var> vars_;
  Buffer acc_, best_, has_;
  std::vector<CheckSite> sites_;
};

}  // namespace

std::optional<std::string> unsupported_reason(const cir::Kernel& k, EmitTarget target) { return SupportCheck(target).run(k); }

int64_t gpu_shared_bytes(const cir::Kernel& k) { return gpu_support(k).shared_bytes; }

GpuSupport gpu_support(const cir::Kernel& k) {
  SupportCheck c(EmitTarget::Nvptx);
  GpuSupport s;
  s.why_not = c.run(k);
  s.shared_bytes = c.shared_bytes();
  return s;
}

EmittedKernel emit_kernel(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& function_name, EmitTarget target) {
  return Emitter(k, ctx, function_name, target).run();
}

}  // namespace zyntax::codegen
