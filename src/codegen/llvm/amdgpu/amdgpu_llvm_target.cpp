#include "codegen/llvm/amdgpu/amdgpu_llvm_target.hpp"

#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/MDBuilder.h>

#include "codegen/llvm/amdgpu/amdgpu_target.hpp"
#include "codegen/llvm/emitter.hpp"
#include "codegen/llvm/gpu_entry.hpp"
#include "codegen/llvm/integer_power_ir.hpp"

namespace zyntax::codegen {

namespace {

// A value the dispatch fixes (a field of the dispatch packet or of the
// implicit arguments), `bytes` wide at `offset` from `base`.
llvm::LoadInst* dispatch_field(llvm::IRBuilder<>& b, llvm::Value* base, uint64_t offset, unsigned bytes) {
  llvm::Value* at = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), base, offset);
  llvm::LoadInst* v = b.CreateAlignedLoad(b.getIntNTy(bytes * 8), at, llvm::Align(bytes));
  v->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b.getContext(), {}));
  v->setMetadata(llvm::LLVMContext::MD_noundef, llvm::MDNode::get(b.getContext(), {}));
  return v;
}

}  // namespace

// The kernel's entry point (gpu_entry.hpp's parameters) in the
// amdgpu_kernel convention, bounded to the workgroup size it is launched
// with, so that registers are allocated for that many work-items.
void AmdgpuLlvmTarget::emit_entry(Emitter& e) const {
  e.module().setTargetTriple(kAmdgpuTriple);
  e.module().setDataLayout(data_layout_);
  GpuEntry entry = create_gpu_entry(e, global_address_space());
  entry.function->setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
  entry.function->addFnAttr("amdgpu-flat-work-group-size", "1," + std::to_string(block_threads_));
  bind_gpu_entry(e, entry);
}

// Code object v5 keeps the workgroup sizes (u16 at 12, 14, 16) and counts
// (u32 at 0, 4, 8) in the implicit kernel arguments; v4 has the dispatch
// packet's workgroup sizes (u16 at 4, 6, 8) and grid sizes in work-items
// (u32 at 12, 16, 20).
llvm::Value* AmdgpuLlvmTarget::group_size(llvm::IRBuilder<>& b, int axis) const {
  bool v5 = code_object_version_ >= 5;
  llvm::Value* base = b.CreateIntrinsic(v5 ? llvm::Intrinsic::amdgcn_implicitarg_ptr : llvm::Intrinsic::amdgcn_dispatch_ptr, {}, {});
  llvm::LoadInst* size = dispatch_field(b, base, (v5 ? 12 : 4) + 2 * static_cast<uint64_t>(axis), 2);
  size->setMetadata(llvm::LLVMContext::MD_range, llvm::MDBuilder(b.getContext()).createRange(llvm::APInt(16, 1), llvm::APInt(16, 1025)));
  return b.CreateZExt(size, b.getInt32Ty());
}

llvm::Value* AmdgpuLlvmTarget::group_count(llvm::IRBuilder<>& b, int axis) const {
  if (code_object_version_ >= 5)
    return dispatch_field(b, b.CreateIntrinsic(llvm::Intrinsic::amdgcn_implicitarg_ptr, {}, {}), 4 * static_cast<uint64_t>(axis), 4);
  llvm::Value* grid = dispatch_field(b, b.CreateIntrinsic(llvm::Intrinsic::amdgcn_dispatch_ptr, {}, {}), 12 + 4 * static_cast<uint64_t>(axis), 4);
  llvm::Value* size = group_size(b, axis);
  return b.CreateUDiv(b.CreateAdd(grid, b.CreateSub(size, b.getInt32(1))), size);  // a partial last workgroup counts
}

llvm::Value* AmdgpuLlvmTarget::coordinate(llvm::IRBuilder<>& b, cir::GpuIndexKind kind, int axis) const {
  namespace I = llvm::Intrinsic;
  static constexpr I::ID items[3] = {I::amdgcn_workitem_id_x, I::amdgcn_workitem_id_y, I::amdgcn_workitem_id_z};
  static constexpr I::ID groups[3] = {I::amdgcn_workgroup_id_x, I::amdgcn_workgroup_id_y, I::amdgcn_workgroup_id_z};
  llvm::Value* v = nullptr;
  switch (kind) {
    case cir::GpuIndexKind::ThreadIdx: v = b.CreateIntrinsic(items[axis], {}, {}); break;
    case cir::GpuIndexKind::BlockIdx: v = b.CreateIntrinsic(groups[axis], {}, {}); break;
    case cir::GpuIndexKind::BlockDim: v = group_size(b, axis); break;
    case cir::GpuIndexKind::GridDim: v = group_count(b, axis); break;
  }
  return b.CreateZExt(v, b.getInt64Ty());
}

// The workgroup's writes to LDS and global memory are seen by all of it
// after the barrier: release, meet, acquire.
void AmdgpuLlvmTarget::barrier(llvm::IRBuilder<>& b) const {
  llvm::SyncScope::ID workgroup = b.getContext().getOrInsertSyncScopeID("workgroup");
  b.CreateFence(llvm::AtomicOrdering::Release, workgroup);
  b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
  b.CreateFence(llvm::AtomicOrdering::Acquire, workgroup);
}

// ds_bpermute reads only lanes that run, so no mask is needed: all lanes.
llvm::Value* AmdgpuLlvmTarget::active_lanes(llvm::IRBuilder<>& b) const { return b.getInt32(~0u); }

// The word of lane (this lane ^ offset), by ds_bpermute (byte addresses,
// over the whole wave: 64 lanes on CDNA, 32 on RDNA).
llvm::Value* AmdgpuLlvmTarget::shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* word, int offset, llvm::Value*) const {
  llvm::Value* lane = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_lo, {}, {b.getInt32(~0u), b.getInt32(0)});
  if (target_.subgroup_size == 64) lane = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_hi, {}, {b.getInt32(~0u), lane});
  llvm::Value* from = b.CreateShl(b.CreateXor(lane, b.getInt32(static_cast<uint32_t>(offset))), 2);
  bool f = word->getType()->isFloatTy();
  llvm::Value* bits = f ? b.CreateBitCast(word, b.getInt32Ty()) : word;
  llvm::Value* got = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {}, {from, bits});
  return f ? b.CreateBitCast(got, b.getFloatTy()) : got;
}

// LLVM's atomics at the scope's syncscope: the workgroup, the agent (the
// device) or the system (memory the host also sees). LLVM expands what
// an architecture has no instruction for into a compare-and-swap loop.
std::optional<llvm::Value*> AmdgpuLlvmTarget::scoped_atomic(Emitter& e, llvm::AtomicRMWInst::BinOp op, llvm::Value* ptr, llvm::Value* value,
                                                            llvm::Value* expected, cir::FenceScope scope) const {
  llvm::IRBuilder<>& b = e.builder();
  llvm::SyncScope::ID id = llvm::SyncScope::System;
  if (scope == cir::FenceScope::Block) id = e.context().getOrInsertSyncScopeID("workgroup");
  if (scope == cir::FenceScope::Device) id = e.context().getOrInsertSyncScopeID("agent");
  constexpr auto relaxed = llvm::AtomicOrdering::Monotonic;
  if (op == llvm::AtomicRMWInst::BAD_BINOP)
    return b.CreateExtractValue(b.CreateAtomicCmpXchg(ptr, expected, value, llvm::MaybeAlign(), relaxed, relaxed, id), 0);
  return b.CreateAtomicRMW(op, ptr, value, llvm::MaybeAlign(), relaxed, id);
}

llvm::FunctionCallee AmdgpuLlvmTarget::integer_power(Emitter& e, llvm::FunctionType* type) const { return integer_power_function(e.module(), type); }

}  // namespace zyntax::codegen
