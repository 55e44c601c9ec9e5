#include "codegen/llvm/nvptx/warpgroup_ir.hpp"

#include <llvm/IR/InlineAsm.h>

namespace zyntax::codegen {

namespace {

constexpr int64_t kWaitTries = int64_t{1} << 26;

}  // namespace

llvm::BasicBlock* WarpgroupIr::block(const char* name) {
  return llvm::BasicBlock::Create(e_.context(), name, b_.GetInsertBlock()->getParent());
}

llvm::Value* WarpgroupIr::asm_value(llvm::Type* result, const std::string& text, const std::string& constraints,
                                    const std::vector<llvm::Value*>& args) {
  std::vector<llvm::Type*> types;
  for (llvm::Value* a : args) types.push_back(a->getType());
  auto* fty = llvm::FunctionType::get(result, types, false);
  llvm::CallInst* call = b_.CreateCall(fty, llvm::InlineAsm::get(fty, text, constraints, /*hasSideEffects=*/true), args);
  call->addFnAttr(llvm::Attribute::Convergent);
  call->addFnAttr(llvm::Attribute::NoUnwind);
  return call;
}

void WarpgroupIr::asm_void(const std::string& text, const std::string& constraints, const std::vector<llvm::Value*>& args) {
  asm_value(b_.getVoidTy(), text, constraints, args);
}

void WarpgroupIr::init_barrier(llvm::Value* bar, int count) {
  asm_void("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", {bar, i32(count)});
}

void WarpgroupIr::arrive(llvm::Value* bar) { asm_void("mbarrier.arrive.shared::cta.b64 _, [$0];", "r", {bar}); }

void WarpgroupIr::arrive_expect_tx(llvm::Value* bar, int64_t bytes) {
  asm_void("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", {bar, i32(static_cast<int32_t>(bytes))});
}

void WarpgroupIr::arrive_in_block(llvm::Value* bar, llvm::Value* rank) {
  asm_void("{ .reg .b32 remote; mapa.shared::cluster.u32 remote, $0, $1; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]; }",
           "r,r", {bar, rank});
}

llvm::Value* WarpgroupIr::cluster_rank() { return asm_value(b_.getInt32Ty(), "mov.u32 $0, %cluster_ctarank;", "=r", {}); }

llvm::Value* WarpgroupIr::cluster_blocks() { return asm_value(b_.getInt32Ty(), "mov.u32 $0, %cluster_nctarank;", "=r", {}); }

void WarpgroupIr::wait(llvm::Value* bar, llvm::Value* parity) {
  llvm::BasicBlock* before = b_.GetInsertBlock();
  llvm::BasicBlock* loop = block("wg.wait");
  llvm::BasicBlock* again = block("wg.wait.again");
  llvm::BasicBlock* stuck = block("wg.wait.stuck");
  llvm::BasicBlock* done = block("wg.wait.done");
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode* tries = b_.CreatePHI(b_.getInt64Ty(), 2);
  tries->addIncoming(b_.getInt64(0), before);
  llvm::Value* ok = asm_value(b_.getInt32Ty(),
                              "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.u32 $0, 1, 0, p; }", "=r,r,r",
                              {bar, parity});
  b_.CreateCondBr(b_.CreateICmpNE(ok, i32(0)), done, again);
  b_.SetInsertPoint(again);
  llvm::Value* next = b_.CreateAdd(tries, b_.getInt64(1));
  tries->addIncoming(next, again);
  b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt64(kWaitTries)), loop, stuck);
  b_.SetInsertPoint(stuck);
  asm_void("trap;", "", {});
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void WarpgroupIr::tensor_copy(llvm::Value* map, llvm::Value* dst, const std::vector<llvm::Value*>& coords, llvm::Value* bar,
                              llvm::Value* blocks) {
  std::string text = "cp.async.bulk.tensor." + std::to_string(coords.size()) +
                     "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" + (blocks ? ".multicast::cluster" : "") +
                     " [$0], [$1, {";
  std::string constraints = "r,l";
  for (size_t i = 0; i < coords.size(); ++i) {
    text += (i ? ", $" : "$") + std::to_string(2 + i);
    constraints += ",r";
  }
  text += "}], [$" + std::to_string(2 + coords.size()) + "]" + (blocks ? ", $" + std::to_string(3 + coords.size()) : "") + ";";
  constraints += blocks ? ",r,h" : ",r";
  std::vector<llvm::Value*> args = {dst, map};
  args.insert(args.end(), coords.begin(), coords.end());
  args.push_back(bar);
  if (blocks) args.push_back(blocks);
  asm_void(text, constraints, args);
}

llvm::Value* WarpgroupIr::descriptor(llvm::Value* address, const wgmma::TileDescriptor& d) {
  llvm::Value* field = b_.CreateLShr(b_.CreateAnd(b_.CreateZExt(address, b_.getInt64Ty()), b_.getInt64(0x3FFFF)), 4);
  return b_.CreateOr(field, b_.getInt64(wgmma::descriptor(0, d.leading, d.stride)));
}

WarpgroupIr::Registers WarpgroupIr::registers(int count, const char* name) {
  return {e_.entry_alloca(llvm::ArrayType::get(b_.getFloatTy(), static_cast<uint64_t>(count)), name), count};
}

llvm::Value* WarpgroupIr::element(const Registers& r, int i) {
  return b_.CreateConstInBoundsGEP2_32(llvm::ArrayType::get(b_.getFloatTy(), static_cast<uint64_t>(r.count)), r.array, 0,
                                       static_cast<unsigned>(i));
}

void WarpgroupIr::tied_asm(const Registers& r, const std::string& text, const std::string& extra, const std::vector<llvm::Value*>& args) {
  int n = r.count;
  llvm::Type* f32 = b_.getFloatTy();
  std::string constraints;
  for (int i = 0; i < n; ++i) constraints += (i ? ",=f" : "=f");
  if (!extra.empty()) constraints += "," + extra;
  std::vector<llvm::Value*> in = args;
  for (int i = 0; i < n; ++i) {
    constraints += "," + std::to_string(i);
    in.push_back(load(r, i));
  }
  llvm::Type* result = llvm::StructType::get(e_.context(), std::vector<llvm::Type*>(static_cast<size_t>(n), f32));
  llvm::Value* out = asm_value(result, text, constraints, in);
  for (int i = 0; i < n; ++i) store(r, i, b_.CreateExtractValue(out, {static_cast<unsigned>(i)}));
}

void WarpgroupIr::mma(const Registers& acc, DType factors, int n, const std::vector<llvm::Value*>& a, llvm::Value* b_desc,
                      llvm::Value* accumulate, bool a_k_major, bool b_k_major) {
  bool tf32 = factors == DType::F32;
  const char* type = tf32 ? "tf32" : factors == DType::F16 ? "f16" : "bf16";
  int regs = acc.count, args = static_cast<int>(a.size()) + 2;
  std::string text = "{ .reg .pred p; setp.ne.b32 p, $" + std::to_string(regs + args - 1) + ", 0; wgmma.mma_async.sync.aligned.m64n" +
                     std::to_string(n) + "k" + (tf32 ? "8" : "16") + ".f32." + type + "." + type + " {";
  for (int i = 0; i < regs; ++i) text += (i ? ", $" : "$") + std::to_string(i);
  text += "}, ";
  std::string constraints;
  bool a_registers = a.size() > 1;
  if (!a_registers) {
    text += "$" + std::to_string(regs);
    constraints = "l";
  } else {
    text += "{";
    for (size_t j = 0; j < a.size(); ++j) {
      text += (j ? ", $" : "$") + std::to_string(regs + static_cast<int>(j));
      constraints += j ? ",r" : "r";
    }
    text += "}";
  }
  text += ", $" + std::to_string(regs + args - 2) + ", p, 1, 1";
  // 16-bit factors say how they lie; a first factor in registers has no say.
  if (!tf32 && !a_registers) text += std::string(", ") + (a_k_major ? "0" : "1");
  if (!tf32) text += std::string(", ") + (b_k_major ? "0" : "1");
  text += "; }";
  std::vector<llvm::Value*> operands = a;
  operands.push_back(b_desc);
  operands.push_back(accumulate);
  tied_asm(acc, text, constraints + ",l,r", operands);
}

void WarpgroupIr::wait_group(const Registers& acc, int pending) {
  tied_asm(acc, "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";", "", {});
}

}  // namespace zyntax::codegen
