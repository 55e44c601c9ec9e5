// NVIDIA's hooks for the shared LLVM lowering (llvm_target.hpp): kernel
// entry points with nvvm.annotations, special registers for GPU coordinates,
// bar.sync, shfl.sync, global (1) and shared (3) address spaces,
// libdevice's math functions, scoped atomics (atom.cta, atom.sys), and the
// statements of NVIDIA's own features: tensor-core steps through wmma
// (tile_mma) and asynchronous copies through cp.async.
#pragma once

#include "codegen/llvm/llvm_target.hpp"

namespace zyntax::codegen {

class NvptxLlvmTarget : public LlvmTarget {
 public:
  explicit NvptxLlvmTarget(GpuTarget target) : target_(std::move(target)) {}

  const GpuTarget* gpu() const override { return &target_; }
  void emit_entry(Emitter& e) const override;
  std::string math_function(const char* name) const override { return std::string("__nv_") + name; }
  // NVPTX's frem is not exact; libdevice's fmod is.
  bool exact_float_remainder() const override { return false; }
  llvm::FunctionCallee integer_power(Emitter& e, llvm::FunctionType* type) const override;
  // cvt.rn.bf16.f32 from sm_80.
  llvm::Value* bf16_rounded(llvm::IRBuilder<>& b, llvm::Value* f) const override;

  unsigned global_address_space() const override { return 1; }
  unsigned shared_address_space() const override { return 3; }
  llvm::Value* coordinate(llvm::IRBuilder<>& b, cir::GpuIndexKind kind, int axis) const override;
  void barrier(llvm::IRBuilder<>& b) const override;
  llvm::Value* active_lanes(llvm::IRBuilder<>& b) const override;
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* word, int offset, llvm::Value* lanes) const override;
  std::optional<llvm::Value*> scoped_atomic(Emitter& e, llvm::AtomicRMWInst::BinOp op, llvm::Value* ptr, llvm::Value* value,
                                            llvm::Value* expected, cir::FenceScope scope) const override;
  void emit_tile_mma(Emitter& e, const cir::TileMma& m) const override;
  void emit_async_copy(Emitter& e, const cir::AsyncCopy& c) const override;
  void emit_warpgroup_product(Emitter& e, const cir::WarpgroupProduct& p) const override;
  void emit_warpgroup_attention(Emitter& e, const cir::WarpgroupAttention& a) const override;

 private:
  GpuTarget target_;
};

}  // namespace zyntax::codegen
