#include "codegen/llvm/emitter.hpp"

#include <llvm/IR/Intrinsics.h>

#include <stdexcept>

#include "cir/printer.hpp"

namespace zyntax::codegen {

using cir::Expr;

// ------------------------------------------------------------ types

// Values live in registers as these types; f16 and bf16 are computed in
// f32 and rounded back after every operation, as the reference does.
llvm::Type* Emitter::reg_type(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: case DType::F32: return b_.getFloatTy();
    case DType::F64: return b_.getDoubleTy();
    case DType::Bool: return b_.getInt1Ty();
    default: return b_.getIntNTy(static_cast<unsigned>(int_bits(t)));
  }
}

llvm::Type* Emitter::mem_type(DType t) {
  switch (t) {
    case DType::F16: return b_.getHalfTy();
    case DType::BF16: return b_.getInt16Ty();
    case DType::Bool: return b_.getInt8Ty();
    default: return reg_type(t);
  }
}

llvm::Value* Emitter::load_scalar(DType t, llvm::Value* ptr) {
  llvm::Value* v = b_.CreateLoad(mem_type(t), ptr);
  return from_memory(t, v);
}

llvm::Value* Emitter::from_memory(DType t, llvm::Value* v) {
  switch (t) {
    case DType::F16: return b_.CreateFPExt(v, b_.getFloatTy());
    case DType::BF16:
      return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, b_.getInt32Ty()), 16), b_.getFloatTy());
    case DType::Bool: return b_.CreateICmpNE(v, b_.getInt8(0));
    default: return v;
  }
}

llvm::Value* Emitter::to_memory(DType t, llvm::Value* v) {
  switch (t) {
    case DType::F16: return b_.CreateFPTrunc(v, b_.getHalfTy());
    case DType::BF16: return bf16_bits(v);
    case DType::Bool: return b_.CreateZExt(v, b_.getInt8Ty());
    default: return v;
  }
}

// f32 → bf16 bits, round to nearest even (the target's instruction where
// it has one); NaN stays a quiet NaN with its sign and leading payload.
llvm::Value* Emitter::bf16_bits(llvm::Value* f) {
  llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
  llvm::Value* rounded = target_.bf16_rounded(b_, f);
  if (!rounded) {
    llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), 1);
    rounded = b_.CreateTrunc(b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(b_.getInt32(0x7FFF), lsb)), 16), b_.getInt16Ty());
  }
  llvm::Value* nan = b_.CreateTrunc(b_.CreateOr(b_.CreateLShr(bits, 16), b_.getInt32(0x40)), b_.getInt16Ty());
  return b_.CreateSelect(b_.CreateFCmpUNO(f, f), nan, rounded);
}

// Rounds an f32 register to the precision of f16/bf16.
llvm::Value* Emitter::round_to(DType t, llvm::Value* v) {
  if (t == DType::F16 || t == DType::BF16) return from_memory(t, to_memory(t, v));
  return v;
}

// A constant in the register type of `t`.
llvm::Value* Emitter::scalar_constant(const Scalar& s, DType t) {
  llvm::Type* reg = reg_type(t);
  if (is_float(t)) return llvm::ConstantFP::get(reg, s.f);
  if (t == DType::Bool) return b_.getInt1(s.i != 0);
  return llvm::ConstantInt::get(reg, is_signed_int(t) ? static_cast<uint64_t>(s.i) : s.u, is_signed_int(t));
}

// `a and b` / `a or b` of two values of dtype t, as a value of t (0 or 1).
llvm::Value* Emitter::logical(bool is_and, llvm::Value* a, llvm::Value* b, DType t) {
  llvm::Value* r = is_and ? b_.CreateAnd(truthy(a, t), truthy(b, t)) : b_.CreateOr(truthy(a, t), truthy(b, t));
  return convert(r, DType::Bool, t);
}

llvm::Value* Emitter::truthy(llvm::Value* v, DType t) {
  if (t == DType::Bool) return v;
  if (is_float(t)) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
  return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
}

// ------------------------------------------------------------ expressions

llvm::Value* Emitter::expr(const Expr& e) {
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
llvm::Value* Emitter::convert(llvm::Value* v, DType from, DType to) {
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

llvm::Value* Emitter::binary(const cir::Binary& bin) {
  DType t = bin.a->type.dtype;
  if (bin.op == BinaryOp::And || bin.op == BinaryOp::Or) return logical(bin);
  llvm::Value* a = expr(bin.a);
  llvm::Value* c = expr(bin.b);
  if (is_comparison(bin.op)) return compare(bin.op, t, a, c);
  return arith(bin.op, t, a, c, bin.span);
}

// `and`/`or` evaluate their right side only when needed, as written
// (`i < n and x[i] > 0` must not read x[n]).
llvm::Value* Emitter::logical(const cir::Binary& bin) {
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

llvm::Value* Emitter::compare(BinaryOp op, DType t, llvm::Value* a, llvm::Value* c) {
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

llvm::Value* Emitter::arith(BinaryOp op, DType t, llvm::Value* a, llvm::Value* c, Span span) {
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
      case BinaryOp::Mod: r = target_.exact_float_remainder() ? b_.CreateFRem(a, c) : libm2("fmod", a, c); break;
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

llvm::Value* Emitter::int_pow(DType t, llvm::Value* a, llvm::Value* c, Span span) {
  bool s = is_signed_int(t);
  llvm::Type* i64 = b_.getInt64Ty();
  // The error flag is a local variable: in the target's address space of those.
  llvm::AllocaInst* err = entry_alloca(b_.getInt32Ty(), "pow.err");
  auto* fty = llvm::FunctionType::get(i64, {i64, i64, b_.getInt32Ty(), err->getType()}, false);
  llvm::FunctionCallee fn = target_.integer_power(*this, fty);
  b_.CreateStore(b_.getInt32(0), err);
  llvm::Value* r = b_.CreateCall(fn, {b_.CreateIntCast(a, i64, s), b_.CreateIntCast(c, i64, s), b_.getInt32(s), err});
  check(b_.CreateICmpEQ(b_.CreateLoad(b_.getInt32Ty(), err), b_.getInt32(0)), span, "integer power with a negative exponent");
  return b_.CreateTrunc(r, reg_type(t));
}

}  // namespace zyntax::codegen
