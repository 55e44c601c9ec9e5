#include "codegen/llvm/cpu/cpu_llvm_target.hpp"

#include "codegen/llvm/emitter.hpp"

namespace zyntax::codegen {

const CpuLlvmTarget& CpuLlvmTarget::instance() {
  static const CpuLlvmTarget target;
  return target;
}

// void k(void** args, i64 begin, i64 end, i32* status): each parameter
// read through args (kernel_abi.hpp): buffers by name, scalar values loaded once.
void CpuLlvmTarget::emit_entry(Emitter& e) const {
  llvm::IRBuilder<>& b = e.builder();
  llvm::Type* ptr = llvm::PointerType::getUnqual(e.context());
  llvm::Type* i64 = b.getInt64Ty();
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {ptr, i64, i64, ptr}, false);
  llvm::Function* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, e.function_name(), &e.module());
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  auto arg = fn->arg_begin();
  llvm::Value* args = &*arg++;
  llvm::Value* begin = &*arg++;
  llvm::Value* end = &*arg++;
  e.bind_range(begin, end);
  e.bind_status(&*arg);
  e.start_body(fn);
  unsigned slot = 0;
  e.bind_parameters([&](const std::string& name) { return b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, args, slot++), name); },
                    /*by_pointer=*/true);
}

// The runtime's zyntax_rt_ipow, which the JIT resolves in the process.
llvm::FunctionCallee CpuLlvmTarget::integer_power(Emitter& e, llvm::FunctionType* type) const {
  return e.module().getOrInsertFunction("zyntax_rt_ipow", type);
}

}  // namespace zyntax::codegen
