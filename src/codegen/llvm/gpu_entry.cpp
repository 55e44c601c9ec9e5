#include "codegen/llvm/gpu_entry.hpp"

#include "codegen/llvm/emitter.hpp"
#include "codegen/llvm/kernel_abi.hpp"

namespace zyntax::codegen {

std::vector<GpuEntryArgument> gpu_entry_arguments(const cir::Kernel& k) {
  std::vector<GpuEntryArgument> args;
  auto add = [&](const std::string& name, bool pointer, size_t size) {
    args.push_back({name, pointer, static_cast<uint32_t>(size), 0});
  };
  for (const cir::Param& p : k.params) {
    bool scalar = p.role == cir::ParamRole::Scalar;
    add(p.name, !scalar, scalar ? dtype_size(p.type.dtype) : 8);
  }
  for (const cir::DimParam& d : k.dims) add(d.name, false, 8);
  if (k.kind == cir::KernelKind::Reduce) {
    add("acc", true, 8);
    if (reduce_buffers(k).arg) {
      add("best", true, 8);
      add("has", true, 8);
    }
  }
  add("status", true, 8);
  uint32_t at = 0;
  for (GpuEntryArgument& a : args) {
    at = (at + a.size - 1) / a.size * a.size;
    a.offset = at;
    at += a.size;
  }
  return args;
}

GpuEntry create_gpu_entry(Emitter& e, unsigned global_space, const std::vector<std::pair<llvm::Type*, std::string>>& extra) {
  llvm::LLVMContext& ctx = e.context();
  const cir::Kernel& k = e.kernel();
  llvm::Type* global = llvm::PointerType::get(ctx, global_space);
  std::vector<GpuEntryArgument> abi = gpu_entry_arguments(k);
  std::vector<llvm::Type*> types;
  std::vector<std::string> names;
  for (size_t i = 0; i < abi.size(); ++i) {
    bool scalar = i < k.params.size() && k.params[i].role == cir::ParamRole::Scalar;
    types.push_back(abi[i].pointer ? global : scalar ? e.mem_type(k.params[i].type.dtype) : e.builder().getInt64Ty());
    names.push_back(abi[i].name);
  }
  GpuEntry entry;
  entry.status = static_cast<unsigned>(abi.size() - 1);
  for (const auto& [type, name] : extra) {
    types.push_back(type);
    names.push_back(name);
  }
  auto* fty = llvm::FunctionType::get(e.builder().getVoidTy(), types, false);
  llvm::Function* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, e.function_name(), &e.module());
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  for (llvm::Argument& a : fn->args()) {
    a.setName(names[a.getArgNo()]);
    if (a.getArgNo() < abi.size() && abi[a.getArgNo()].pointer) {
      a.addAttr(llvm::Attribute::NoUndef);
      a.addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(kGpuTensorAlignment)));
    }
  }
  e.mark_distinct_buffers(fn);
  entry.function = fn;
  return entry;
}

void bind_gpu_entry(Emitter& e, const GpuEntry& entry) {
  e.bind_status(entry.function->getArg(entry.status));
  e.start_body(entry.function);
  unsigned slot = 0;
  e.bind_parameters([&](const std::string&) { return entry.function->getArg(slot++); }, /*by_pointer=*/false);
}

}  // namespace zyntax::codegen
