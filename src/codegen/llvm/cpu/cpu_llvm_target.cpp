#include "codegen/llvm/cpu/cpu_llvm_target.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/llvm/emitter.hpp"
#include "codegen/llvm/kernel_abi.hpp"

namespace zyntax::codegen {

const CpuLlvmTarget& CpuLlvmTarget::instance() {
  static const CpuLlvmTarget target;
  return target;
}

// void k(void** args, i64 begin, i64 end, i32* status) (kernel_abi.hpp):
// it reads each slot of args and calls the body, a function of its own
// that takes the slots as arguments and is inlined into it:
//
//   void k.body(ptr noalias x, ptr noalias out, ..., i64 begin, i64 end, ptr noalias status)
//
// The slots are read from memory, so LLVM cannot tell that the buffers they
// point to are distinct; as arguments they carry noalias, as the GPU
// entries' do (Emitter::mark_distinct_buffers: the runtime gives an output
// fresh memory, BoundKernel::run_host a copy where the caller's memory
// overlaps an input), which inlining turns into scopes on every access. A
// read of one buffer then stays where it is across a store to another: a
// gather's index is read once per row, not once per element.
void CpuLlvmTarget::emit_entry(Emitter& e) const {
  const cir::Kernel& k = e.kernel();
  llvm::IRBuilder<>& b = e.builder();
  llvm::Type* ptr = llvm::PointerType::getUnqual(e.context());
  llvm::Type* i64 = b.getInt64Ty();
  const size_t slots = argument_slots(k);

  std::vector<llvm::Type*> body_args(slots, ptr);
  body_args.insert(body_args.end(), {i64, i64, ptr});
  auto* body_type = llvm::FunctionType::get(b.getVoidTy(), body_args, false);
  llvm::Function* body = llvm::Function::Create(body_type, llvm::Function::InternalLinkage, e.function_name() + ".body", &e.module());
  body->addFnAttr(llvm::Attribute::NoUnwind);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  e.mark_distinct_buffers(body);
  body->getArg(static_cast<unsigned>(slots + 2))->addAttr(llvm::Attribute::NoAlias);

  // The entry point: the slots read, the body called.
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {ptr, i64, i64, ptr}, false);
  llvm::Function* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, e.function_name(), &e.module());
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(e.context(), "entry", fn));
  std::vector<llvm::Value*> values;
  for (size_t i = 0; i < slots; ++i) values.push_back(b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, fn->getArg(0), i)));
  values.insert(values.end(), {fn->getArg(1), fn->getArg(2), fn->getArg(3)});
  b.CreateCall(body, values);
  b.CreateRetVoid();

  e.bind_range(body->getArg(static_cast<unsigned>(slots)), body->getArg(static_cast<unsigned>(slots + 1)));
  e.bind_status(body->getArg(static_cast<unsigned>(slots + 2)));
  e.start_body(body);
  unsigned slot = 0;
  e.bind_parameters([&](const std::string& name) {
    llvm::Value* v = body->getArg(slot++);
    v->setName(name);
    return v;
  }, /*by_pointer=*/true);
  if (slot != slots) throw std::logic_error("kernel " + k.name + ": the CPU entry has " + std::to_string(slots) + " slots, its body binds " + std::to_string(slot));
}

// The runtime's zyntax_rt_ipow, which the JIT resolves in the process.
llvm::FunctionCallee CpuLlvmTarget::integer_power(Emitter& e, llvm::FunctionType* type) const {
  return e.module().getOrInsertFunction("zyntax_rt_ipow", type);
}

}  // namespace zyntax::codegen
