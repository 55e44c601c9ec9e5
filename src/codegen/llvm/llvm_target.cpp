#include "codegen/llvm/llvm_target.hpp"

#include <stdexcept>

namespace zyntax::codegen {

namespace {

[[noreturn]] void not_here(const char* what) {
  throw std::logic_error(std::string("LLVM lowering: ") + what + " on a target without it (the plan should not have used it)");
}

}  // namespace

llvm::Value* LlvmTarget::coordinate(llvm::IRBuilder<>&, cir::GpuIndexKind, int) const { not_here("GPU coordinates"); }
void LlvmTarget::barrier(llvm::IRBuilder<>&) const { not_here("block barriers"); }
llvm::Value* LlvmTarget::active_lanes(llvm::IRBuilder<>&) const { not_here("subgroup lanes"); }
llvm::Value* LlvmTarget::shuffle_xor(llvm::IRBuilder<>&, llvm::Value*, int, llvm::Value*) const { not_here("subgroup shuffles"); }
void LlvmTarget::emit_tile_mma(Emitter&, const cir::TileMma&) const { not_here("tensor-core tile products"); }
void LlvmTarget::emit_async_copy(Emitter&, const cir::AsyncCopy&) const { not_here("asynchronous copies"); }
void LlvmTarget::emit_warpgroup_product(Emitter&, const cir::WarpgroupProduct&) const { not_here("warpgroup matrix products"); }
void LlvmTarget::emit_warpgroup_attention(Emitter&, const cir::WarpgroupAttention&) const { not_here("warpgroup attention"); }

}  // namespace zyntax::codegen
