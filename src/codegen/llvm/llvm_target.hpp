// What the shared CIR → LLVM lowering (emitter.hpp) asks of the target it
// emits for. The lowering itself is target-neutral: statements, loops,
// arithmetic, checks, reductions, and the GPU's generic parts (block and
// thread loops, shared arrays and their placement, thread-private arrays,
// block reductions by subgroup shuffles) are written once. A target adds
// only what differs: its entry point, how it names GPU coordinates,
// barriers and shuffles, its address spaces, its math library, and the
// statements of features only it has (NVIDIA's tensor-core steps and
// asynchronous copies). The host CPU's hooks are cpu/cpu_llvm_target,
// NVIDIA's nvptx/nvptx_llvm_target, AMD's amdgpu/amdgpu_llvm_target.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::codegen {

class Emitter;

class LlvmTarget {
 public:
  virtual ~LlvmTarget() = default;

  // A GPU target's description (what its kernels may use), or null for the host CPU.
  virtual const GpuTarget* gpu() const = 0;

  // Creates the kernel's entry point in e.module() and binds every
  // parameter in kernel_abi.hpp's order (e.bind_parameters), with the
  // builder in the entry block. A CPU entry also binds the range of outer
  // iterations the call runs (e.bind_range).
  virtual void emit_entry(Emitter& e) const = 0;

  // The library function computing `name` (a libm double function: "sin", "pow").
  virtual std::string math_function(const char* name) const = 0;
  // Whether LLVM's frem computes the float remainder exactly here; else
  // the math library's fmod is called.
  virtual bool exact_float_remainder() const = 0;
  // zyntax_rt_ipow's callee: the runtime's own function, or the same steps
  // as IR in the module where the runtime is not callable.
  virtual llvm::FunctionCallee integer_power(Emitter& e, llvm::FunctionType* type) const = 0;
  // Whether loops a schedule marks vectorized get LLVM's vectorizer hints.
  virtual bool vectorize_hints() const { return false; }
  // An f32 rounded to nearest even as bf16 bits (i16) by the target's own
  // instruction, or null where the emitter writes the rounding out (it
  // keeps NaNs its own way either way).
  virtual llvm::Value* bf16_rounded(llvm::IRBuilder<>& b, llvm::Value* f) const { return nullptr; }

  // ---- GPU targets only (gpu() is set)

  virtual unsigned global_address_space() const { return 0; }
  virtual unsigned shared_address_space() const { return 0; }
  // threadIdx, blockIdx, blockDim or gridDim along an axis, as i64.
  virtual llvm::Value* coordinate(llvm::IRBuilder<>& b, cir::GpuIndexKind kind, int axis) const;
  // Every thread of the block meets here.
  virtual void barrier(llvm::IRBuilder<>& b) const;
  // The mask (i32) of the subgroup's lanes still running.
  virtual llvm::Value* active_lanes(llvm::IRBuilder<>& b) const;
  // The 32-bit value (i32 or f32) of the lane whose index differs from this
  // one's in `offset`'s bit, among `lanes`.
  virtual llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* word, int offset, llvm::Value* lanes) const;
  // An atomic read-modify-write of the scope (BAD_BINOP: the
  // compare-and-swap, `value` then the new value and `expected` the old),
  // returning the old value; nothing where the target has no such
  // instruction for this op, type and scope (then LLVM's plain atomics,
  // which must have at least the device's scope).
  virtual std::optional<llvm::Value*> scoped_atomic(Emitter& e, llvm::AtomicRMWInst::BinOp op, llvm::Value* ptr, llvm::Value* value,
                                                    llvm::Value* expected, cir::FenceScope scope) const {
    return std::nullopt;
  }
  // A step of a tensor-core tile product (where gpu()->matrix_units).
  virtual void emit_tile_mma(Emitter& e, const cir::TileMma& m) const;
  // A step of a thread's asynchronous copies (where gpu()->async_copy).
  virtual void emit_async_copy(Emitter& e, const cir::AsyncCopy& c) const;
  // A block's share of a warpgroup product (where gpu()->warpgroup_mma and tensor_copies).
  virtual void emit_warpgroup_product(Emitter& e, const cir::WarpgroupProduct& p) const;
  virtual void emit_warpgroup_attention(Emitter& e, const cir::WarpgroupAttention& a) const;
};

}  // namespace zyntax::codegen
