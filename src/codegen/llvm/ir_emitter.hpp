// The shared CIR → LLVM IR lowering. It turns a specialised kernel into one
// function with the signature of kernel_abi.hpp, computing exactly what the
// reference executor computes: every operation rounded to its dtype (no
// fast-math, no contraction into FMA), math functions through the same libm
// in double, NaN-propagating min/max, saturating float-to-int conversions,
// bounds checks on every access and checks on integer division. A target
// (llvm_target.hpp: the host CPU, NVPTX, AMDGPU) adds its
// entry point, its GPU primitives and its own features through hooks; the
// lowering's steps are in emitter.hpp.
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

class LlvmTarget;

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

// Lowers a kernel its target supports (plan/kernel_support.hpp). For the GPU, the module
// declares the f64 math functions of libdevice (`__nv_sin`, ...), which the
// NVPTX compiler links in.
EmittedKernel emit_kernel(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& function_name, const LlvmTarget& target);

// Called by generated code for `**` on integers; defined in the runtime so the
// JIT can resolve it. Sets *error to 1 for a negative exponent (base not ±1).
extern "C" uint64_t zyntax_rt_ipow(uint64_t base, int64_t exponent, int32_t is_signed, int32_t* error);

}  // namespace zyntax::codegen
