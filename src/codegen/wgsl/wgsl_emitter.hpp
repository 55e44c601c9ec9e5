// CIR → WGSL compute shaders for WebGPU. The emitter takes a kernel planned
// for a WebGPU GpuTarget (plan/gpu_plan with webgpu_target()) and writes one
// shader computing what the reference executor computes, within what WGSL
// has:
//
// - No 64-bit types: tensors of f64 and u64 are not written; f64 values
//   (the schedules accumulate f32 sums in f64, as the reference does) are
//   computed in f32, so such sums round more often, except expressions of
//   the scalars alone (weak literals and host numbers), which the host
//   computes in f64 at launch. CIR's
//   index values (i64) are i32; their additions, subtractions and products
//   are checked, and an overflow fails the run (a check, as an index out of
//   bounds), never a wrapped index. Scalars of i64 travel as i32 (the host
//   refuses values outside its range).
// - No 8- or 16-bit storage and no aliased bindings: every tensor is an
//   array of 32-bit words. Inputs are read-only `array<u32>`; the output is
//   `array<atomic<u32>>`, written by atomicStore, and 1- and 2-byte elements
//   by a compare-and-swap of the word around them (its neighbours belong to
//   other invocations).
// - Scalars and dimensions: one uniform buffer of 4-byte fields.
//
// The semantics are the GLSL emitter's: NaN-propagating min/max,
// saturating float-to-int conversion (NaN to 0), integer division checked
// and wrapping, bounds checks on every access; a failed check records its
// id in the status word and the invocation goes on with the access made
// harmless. WGSL does not promise IEEE infinities and NaN; the devices we
// test on keep them.
//
// Written: every kernel type (element-wise, fused, reductions, atomic
// updates, GPU block schedules with workgroup memory, barriers and block
// reductions folded in workgroup memory) of f32, f16, bf16 (computed in f32,
// rounded after every operation in integer arithmetic), i8 to i32, u8 to
// u32, bool and i64 tensors (two words, the values within 32 bits). Not
// written: f64 and u64 tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::codegen {

// One 4-byte field of the uniform buffer.
struct WgslUniform {
  enum class Source { Scalar, Dim, Host } source;
  // The kernel's param (Scalar) or dim (Dim) index, or the index of an
  // expression in WgslKernel::host_expressions (Host).
  size_t index = 0;
  DType as = DType::I32;  // how it is stored: I32, U32 or F32
  uint32_t offset = 0;   // bytes
};

struct WgslKernel {
  std::string source;  // the shader, entry point `main`
  int workgroup_size = 1;
  // Bindings of group 0: the tensor params in order (inputs, then the
  // output), then the status word (one u32), then the uniforms (where any).
  int tensor_bindings = 0;
  int status_binding = 0;
  int uniform_binding = -1;
  std::vector<WgslUniform> uniforms;
  uint32_t uniform_bytes = 0;  // a multiple of 16
  // f64 expressions of the scalars the host computes at each launch
  // (codegen/shader/host_scalar_expressions), as JSON.
  std::vector<std::string> host_expressions;
  std::vector<CheckSite> sites;  // a failed check's id is its index + 1
  // Reduce kernels accumulate in the output itself, which the host fills
  // with the reduction's identity first; argmin/argmax also keep the best
  // value and whether there was one (a u32 word each) in two more
  // bindings, zeroed, and the host reports an empty range.
  bool reduce = false;
  bool arg = false;
  Scalar identity;  // in the output's dtype (not for argmin/argmax)
  DType best_dtype = DType::F32;
  int best_binding = -1, has_binding = -1;
};

// What every WebGPU adapter offers, compatibility mode's included (the
// limits WebGPU guarantees): no subgroups, 128 invocations per workgroup,
// 16,352 bytes of workgroup storage, no f64/i64/f16, 32-bit indices.
GpuTarget webgpu_target();

// Why the WGSL emitter cannot write this kernel (a reduction, f64, a GPU
// block schedule, ...), or nothing. `block_threads`: the plan's workgroup.
std::optional<std::string> wgsl_unsupported_reason(const cir::Kernel& k, const GpuTarget& target, int block_threads);

WgslKernel emit_wgsl(const cir::Kernel& k, const GpuTarget& target, int block_threads);

}  // namespace zyntax::codegen
