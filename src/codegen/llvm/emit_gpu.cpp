#include "codegen/llvm/emitter.hpp"

#include <bit>

#include "cir/visitor.hpp"
#include "plan/kernel_support.hpp"

namespace zyntax::codegen {

// Where a fragment is allocated (once per block, outside the loops of
// its steps): the block has the threads its tile_mma steps spread it over.
void Emitter::check_fragment_threads(const std::string& acc) {
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
  int64_t threads = int64_t{gpu_->subgroup_size} * first.step->warp_rows * first.step->warp_cols;
  check(b_.CreateICmpUGE(gpu_coordinate(cir::GpuIndexKind::BlockDim, 0), b_.getInt64(threads)), first.step->span,
        "the GPU block has fewer threads than the tensor-core schedule's " + std::to_string(threads));
}

// A shared array of the block: static, or where the block's arrays need
// more than static shared memory holds, the next piece of the dynamic
// shared memory the launcher provides (gpu_shared_bytes). A placed array
// (`offset` >= 0) is at its offset in one region of all the block's
// shared memory, which arrays with separate lives share.
llvm::Value* Emitter::block_shared_array(llvm::Type* elem, int64_t bytes, const std::string& name, int64_t offset) {
  if (!shared_bytes_) shared_bytes_ = gpu_shared_bytes(k_);  // once per kernel
  bool dynamic = *shared_bytes_ > gpu_->shared_memory_static;
  if (!dynamic && offset < 0) return shared_array(elem, static_cast<uint64_t>(bytes) / module_->getDataLayout().getTypeAllocSize(elem), name);
  if (!shared_region_) {
    if (dynamic) {
      auto* type = llvm::ArrayType::get(b_.getInt8Ty(), 0);
      auto* g = new llvm::GlobalVariable(*module_, type, false, llvm::GlobalValue::ExternalLinkage, nullptr, name_ + "_dynamic_shared", nullptr,
                                         llvm::GlobalValue::NotThreadLocal, target_.shared_address_space());
      g->setAlignment(llvm::Align(cir::kSharedArrayAlignment));
      shared_region_ = g;
    } else {
      shared_region_ = shared_array(b_.getInt8Ty(), static_cast<uint64_t>(*shared_bytes_), "shared");
    }
  }
  if (offset < 0) {
    offset = next_shared_offset_;
    next_shared_offset_ += cir::shared_footprint(bytes);
  }
  return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), shared_region_, static_cast<uint64_t>(offset), name);
}

// A static shared-memory array of the module (the target's shared address space).
llvm::Value* Emitter::shared_array(llvm::Type* elem, uint64_t n, const std::string& name) {
  auto* type = llvm::ArrayType::get(elem, std::max<uint64_t>(n, 1));
  auto* g = new llvm::GlobalVariable(*module_, type, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(type),
                                     name_ + "." + name, nullptr, llvm::GlobalValue::NotThreadLocal, target_.shared_address_space());
  g->setAlignment(llvm::Align(cir::kSharedArrayAlignment));  // matrix units read pieces at 32-byte boundaries
  return g;
}

// threadIdx, blockIdx, blockDim or gridDim along an axis, as i64.
llvm::Value* Emitter::gpu_coordinate(cir::GpuIndexKind kind, int axis) { return target_.coordinate(b_, kind, axis); }

// A block-wide fold (cir::BlockReduce): each thread folds its elements of
// the array, a subgroup (a warp) folds its threads' values by butterfly
// shuffles, lane 0 of each subgroup leaves the subgroup's value in a shared scratch row, and every
// thread folds that row, so all hold the result without a further barrier.
// (The next use of this scratch follows another barrier, by which every
// thread has read it.)
void Emitter::emit_block_reduce(const cir::BlockReduce& r) {
  const Buffer& array = buffer(r.array);
  DType t = array.type.dtype;
  llvm::Type* i64 = b_.getInt64Ty();
  BinaryOp combine = *reduce_binary_op(r.op);
  llvm::Value* identity = scalar_constant(reduce_identity(r.op, t), t);
  auto fold = [&](llvm::Value* acc, llvm::Value* v) { return arith(combine, t, acc, v, r.span); };
  const int lanes_per_group = gpu_->subgroup_size, lane_bits = std::countr_zero(static_cast<unsigned>(lanes_per_group));
  target_.barrier(b_);

  // This thread's elements: tid, tid + ntid, ... below count.
  llvm::Value* tid = gpu_coordinate(cir::GpuIndexKind::ThreadIdx, 0);
  llvm::Value* ntid = gpu_coordinate(cir::GpuIndexKind::BlockDim, 0);
  llvm::Value* count = b_.CreateSExt(expr(r.count), i64);
  llvm::Value* mine = counted_fold(tid, count, ntid, identity, [&](llvm::Value* acc, llvm::Value* i) {
    return fold(acc, from_memory(t, b_.CreateLoad(mem_type(t), element_ptr(array, i))));
  });

  // The lanes still running: a thread that stopped at a failed check
  // leaves the subgroup, and the others must not wait for it.
  llvm::Value* lanes = target_.active_lanes(b_);
  for (int offset = lanes_per_group / 2; offset >= 1; offset /= 2) mine = fold(mine, shuffle_xor(mine, t, offset, lanes));
  llvm::Value* scratch = shared_array(mem_type(t), static_cast<uint64_t>(gpu_->max_threads_per_block / lanes_per_group), r.name + ".warps");
  llvm::Value* warp = b_.CreateLShr(tid, lane_bits);
  llvm::BasicBlock* write = llvm::BasicBlock::Create(ctx_, "warp.lead", fn_);
  llvm::BasicBlock* written = llvm::BasicBlock::Create(ctx_, "warp.written", fn_);
  b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateAnd(tid, lanes_per_group - 1), b_.getInt64(0)), write, written);
  b_.SetInsertPoint(write);
  b_.CreateStore(to_memory(t, mine), b_.CreateGEP(mem_type(t), scratch, warp));
  b_.CreateBr(written);
  b_.SetInsertPoint(written);
  target_.barrier(b_);

  llvm::Value* warps = b_.CreateLShr(b_.CreateAdd(ntid, b_.getInt64(lanes_per_group - 1)), lane_bits);
  values_[r.name] = counted_fold(b_.getInt64(0), warps, b_.getInt64(1), identity, [&](llvm::Value* acc, llvm::Value* w) {
    return fold(acc, from_memory(t, b_.CreateLoad(mem_type(t), b_.CreateGEP(mem_type(t), scratch, w))));
  });
}

template <class Step>
llvm::Value* Emitter::counted_fold(llvm::Value* first, llvm::Value* end, llvm::Value* stride, llvm::Value* identity, Step step) {
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
// (the lanes in `lanes` take part); 32-bit words through the target's
// shuffle, narrower integers widened, 64-bit values as two halves.
llvm::Value* Emitter::shuffle_xor(llvm::Value* v, DType t, int offset, llvm::Value* lanes) {
  llvm::Type* ty = v->getType();
  if (ty->isFloatTy()) return target_.shuffle_xor(b_, v, offset, lanes);
  unsigned bits = ty->getPrimitiveSizeInBits();
  llvm::Type* int_ty = b_.getIntNTy(bits);
  llvm::Value* x = ty->isIntegerTy() ? v : b_.CreateBitCast(v, int_ty);
  auto shfl32 = [&](llvm::Value* w) { return target_.shuffle_xor(b_, w, offset, lanes); };
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

}  // namespace zyntax::codegen
