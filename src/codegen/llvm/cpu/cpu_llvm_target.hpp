// The host CPU's hooks for the shared LLVM lowering (llvm_target.hpp): the
// entry point `void k(void** args, i64 begin, i64 end, i32* status)`
// (kernel_abi.hpp), libm's functions, the runtime's integer power, and
// vectorizer hints for the loops a schedule marks.
#pragma once

#include "codegen/llvm/llvm_target.hpp"

namespace zyntax::codegen {

class CpuLlvmTarget : public LlvmTarget {
 public:
  static const CpuLlvmTarget& instance();

  const GpuTarget* gpu() const override { return nullptr; }
  void emit_entry(Emitter& e) const override;
  std::string math_function(const char* name) const override { return name; }
  bool exact_float_remainder() const override { return true; }
  llvm::FunctionCallee integer_power(Emitter& e, llvm::FunctionType* type) const override;
  bool vectorize_hints() const override { return true; }
};

}  // namespace zyntax::codegen
