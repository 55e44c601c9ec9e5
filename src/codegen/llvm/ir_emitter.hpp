// The shared CIR → LLVM IR lowering. It turns a specialised kernel into one
// function with the signature of kernel_abi.hpp, computing exactly what the
// reference executor computes: every operation rounded to its dtype (no
// fast-math, no contraction into FMA), math functions through the same libm
// in double, NaN-propagating min/max, saturating float-to-int conversions,
// bounds checks on every access and checks on integer division. Targets
// (the CPU JIT now, NVPTX and AMDGPU later) add their own entry points and
// schedules on top.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace zyntax::codegen {

// A runtime check in the generated code; its id is its index + 1.
struct CheckSite {
  Span span;
  std::string what;  // "index out of bounds reading x", "integer division by zero"
};

struct EmittedKernel {
  std::unique_ptr<llvm::Module> module;
  std::string function;  // the entry point's name
  std::vector<CheckSite> sites;
};

// What the function is for: the host CPU (called through kernel_abi.hpp's
// KernelFn) or an NVIDIA GPU (an NVPTX kernel entry point, see kernel_abi.hpp).
enum class EmitTarget { Cpu, Nvptx };

// Why the lowering cannot compile this kernel for `target` yet (tile values,
// atomics, GPU coordinates, local arrays too large), or nothing if it can.
std::optional<std::string> unsupported_reason(const cir::Kernel& k, EmitTarget target = EmitTarget::Cpu);

// The bytes of shared arrays a GPU kernel's blocks hold (each from a
// 128-byte boundary, placed ones at their offsets). Up to kGpuStaticSharedBytes they are static shared
// memory; beyond, all are in dynamic shared memory, and the kernel must be
// launched with this many bytes of it.
int64_t gpu_shared_bytes(const cir::Kernel& k);

// Both at once, for a GPU schedule that must also fit a block's shared memory.
struct GpuSupport {
  std::optional<std::string> why_not;  // unsupported_reason(k, EmitTarget::Nvptx)
  int64_t shared_bytes = 0;            // gpu_shared_bytes(k)
  bool fits(int64_t max_shared_bytes) const { return !why_not && shared_bytes <= max_shared_bytes; }
};
GpuSupport gpu_support(const cir::Kernel& k);

// Lowers a kernel that unsupported_reason() accepts. For the GPU, the module
// declares the f64 math functions of libdevice (`__nv_sin`, ...), which the
// NVPTX compiler links in.
EmittedKernel emit_kernel(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& function_name,
                          EmitTarget target = EmitTarget::Cpu);

// Called by generated code for `**` on integers; defined in the runtime so the
// JIT can resolve it. Sets *error to 1 for a negative exponent (base not ±1).
extern "C" uint64_t zyntax_rt_ipow(uint64_t base, int64_t exponent, int32_t is_signed, int32_t* error);

}  // namespace zyntax::codegen
