#include "codegen/llvm/integer_power_ir.hpp"

#include <llvm/IR/IRBuilder.h>

namespace zyntax::codegen {

llvm::FunctionCallee integer_power_function(llvm::Module& module, llvm::FunctionType* fty) {
  llvm::LLVMContext& ctx = module.getContext();
  if (llvm::Function* f = module.getFunction("zyntax_ipow")) return {fty, f};
  llvm::Function* f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "zyntax_ipow", &module);
  auto arg = f->arg_begin();
  llvm::Value* base = &*arg++;
  llvm::Value* exponent = &*arg++;
  llvm::Value* is_signed = &*arg++;
  llvm::Value* error = &*arg;
  llvm::IRBuilder<> b(ctx);
  auto bb = [&](const char* n) { return llvm::BasicBlock::Create(ctx, n, f); };
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
  return {fty, f};
}

}  // namespace zyntax::codegen
