// AMD's hooks for the shared LLVM lowering (llvm_target.hpp): kernels in
// the amdgpu_kernel calling convention bounded to the plan's workgroup
// size, work-item and workgroup ids, workgroup and grid sizes from the
// implicit kernel arguments (code object v5) or the dispatch packet (v4),
// s_barrier between workgroup-scope fences, ds_bpermute for wave shuffles,
// global (1), LDS (3) and private (5) address spaces, the device
// libraries' ocml for f64 math, and LLVM's atomics at the workgroup,
// agent and system scopes.
#pragma once

#include "codegen/llvm/llvm_target.hpp"

namespace zyntax::codegen {

class AmdgpuLlvmTarget : public LlvmTarget {
 public:
  // `data_layout`: the target machine's (locals are in address space 5 from
  // the first alloca on); `block_threads`: the work-items a workgroup is
  // launched with, at most.
  AmdgpuLlvmTarget(GpuTarget target, std::string data_layout, int code_object_version, int block_threads)
      : target_(std::move(target)), data_layout_(std::move(data_layout)), code_object_version_(code_object_version), block_threads_(block_threads) {}

  const GpuTarget* gpu() const override { return &target_; }
  void emit_entry(Emitter& e) const override;
  std::string math_function(const char* name) const override { return std::string("__ocml_") + name + "_f64"; }
  // AMDGPU's frem is a division and a truncation, not exact; ocml's fmod is.
  bool exact_float_remainder() const override { return false; }
  llvm::FunctionCallee integer_power(Emitter& e, llvm::FunctionType* type) const override;

  unsigned global_address_space() const override { return 1; }
  unsigned shared_address_space() const override { return 3; }
  llvm::Value* coordinate(llvm::IRBuilder<>& b, cir::GpuIndexKind kind, int axis) const override;
  void barrier(llvm::IRBuilder<>& b) const override;
  llvm::Value* active_lanes(llvm::IRBuilder<>& b) const override;
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* word, int offset, llvm::Value* lanes) const override;
  std::optional<llvm::Value*> scoped_atomic(Emitter& e, llvm::AtomicRMWInst::BinOp op, llvm::Value* ptr, llvm::Value* value,
                                            llvm::Value* expected, cir::FenceScope scope) const override;

 private:
  llvm::Value* group_size(llvm::IRBuilder<>& b, int axis) const;
  llvm::Value* group_count(llvm::IRBuilder<>& b, int axis) const;

  GpuTarget target_;
  std::string data_layout_;
  int code_object_version_;
  int block_threads_;
};

}  // namespace zyntax::codegen
