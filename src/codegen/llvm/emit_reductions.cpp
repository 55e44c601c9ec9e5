#include "codegen/llvm/emitter.hpp"

#include "cir/reads.hpp"

namespace zyntax::codegen {

using cir::Expr;

void Emitter::emit_yield(const cir::Yield& y) {
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
  if (gpu_ && gpu_block_depth_ > 0) return atomic_update(at, acc_ptr, combine);
  // CPU tasks (iterations of the outer parallel loop) that yield to an
  // element chosen without their variable may meet there at once.
  if (!task_var_.empty() && !std::any_of(y.out_index.begin(), y.out_index.end(), [&](const cir::Expr& e) { return cir::reads_any(e, {task_var_}); }))
    return atomic_update(at, acc_ptr, combine);
  llvm::Value* acc = from_memory(at, b_.CreateLoad(mem_type(at), acc_ptr));
  b_.CreateStore(to_memory(at, combine(acc)), acc_ptr);
}

template <class Update>
void Emitter::atomic_update(DType t, llvm::Value* ptr, Update update, cir::FenceScope scope) {
  llvm::Type* mem = mem_type(t);
  llvm::Type* bits = b_.getIntNTy(static_cast<unsigned>(mem->getPrimitiveSizeInBits()));
  auto as_bits = [&](llvm::Value* v) { return v->getType() == bits ? v : b_.CreateBitCast(v, bits); };
  auto from_bits = [&](llvm::Value* v) { return mem == bits ? v : b_.CreateBitCast(v, mem); };
  llvm::LoadInst* first = b_.CreateLoad(bits, ptr);
  if (!gpu_) {
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
  std::optional<llvm::Value*> scoped =
      gpu_ ? target_.scoped_atomic(*this, llvm::AtomicRMWInst::BAD_BINOP, ptr, next, seen, scope) : std::nullopt;
  if (scoped) {
    // A swap of the scope: the target's scoped instruction.
    old = *scoped;
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
void Emitter::emit_atomic(const cir::Atomic& a) {
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
    if (gpu_ && target_.scoped_atomic(*this, *native, ptr, v, nullptr, a.scope)) return;
    // Else a plain GPU atomic, which has the device's scope on NVPTX (enough
    // for a block's too); on a CPU every atomic is the system's.
    if (!gpu_ || a.scope != cir::FenceScope::System) {
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

}  // namespace zyntax::codegen
