#include "codegen/llvm/gpu_target_machines.hpp"

#include <llvm/MC/TargetRegistry.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <stdexcept>

namespace zyntax::codegen {

GpuTargetMachines::GpuTargetMachines(const char* triple) : triple_(triple) {}
GpuTargetMachines::~GpuTargetMachines() = default;

llvm::TargetMachine& GpuTargetMachines::get(const std::string& cpu, const std::string& features, std::optional<llvm::Reloc::Model> reloc) {
  std::string key = cpu + " " + features;
  auto it = machines_.find(key);
  if (it != machines_.end()) return *it->second;
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple_, err);
  if (!t) throw std::runtime_error(std::string("no LLVM target for ") + triple_ + ": " + err);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(triple_, cpu, features, options, reloc, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw std::runtime_error("LLVM cannot target " + cpu);
  return *(machines_[key] = std::move(tm));
}

}  // namespace zyntax::codegen
