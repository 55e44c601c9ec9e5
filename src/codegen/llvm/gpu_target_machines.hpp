// The LLVM target machines the GPU compilers (nvptx, amdgpu) emit with:
// one per architecture, made on first use and kept, all with the IEEE
// semantics the CPU has (no fast math, no contraction of a * b + c into an
// fma; only the polynomials' explicit fmuladd fuse).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <llvm/Support/CodeGen.h>

namespace llvm {
class TargetMachine;
}

namespace zyntax::codegen {

class GpuTargetMachines {
 public:
  explicit GpuTargetMachines(const char* triple);
  ~GpuTargetMachines();
  llvm::TargetMachine& get(const std::string& cpu, const std::string& features, std::optional<llvm::Reloc::Model> reloc);

 private:
  const char* triple_;
  std::map<std::string, std::unique_ptr<llvm::TargetMachine>> machines_;  // by cpu and features
};

}  // namespace zyntax::codegen
