// CIR → GLSL compute shaders (GLSL 4.50 for Vulkan, compiled to SPIR-V by
// spirv_compiler). The emitter takes a kernel planned for a Vulkan device's
// GpuTarget (plan/gpu_plan) and writes one shader computing what the
// reference executor computes: every tensor a storage buffer, scalars (and
// a generic kernel's dimensions) push constants, the reduce buffers and a
// status word further storage buffers (the layout below).
//
// The semantics are the LLVM lowering's: values of f16/bf16 computed in f32
// and rounded after every operation, saturating float-to-int conversions,
// NaN-propagating min/max, integer division checked and wrapping, bounds
// checks on every access; atomics by compare-and-swap loops (of the 32-bit
// word around a 1- or 2-byte element). A failed check records its id in the status
// word (the first one wins) and the invocation goes on with the access
// made harmless (a read of element 0, a store skipped, a loop not run): no
// invocation leaves early, so every barrier is reached by the whole
// workgroup. The device then reruns the kernel on the reference executor.
//
// Math functions are GLSL's in f32 (within a few ulp; the parity tests
// compare float results within 1e-4); on doubles, GLSL's arithmetic, sqrt,
// fma and rounding, and glsl_f64_math's functions for the rest.
//
// Loops: some devices stop a loop after 65,535 iterations, so a loop whose
// trip count is not known to be below that runs as two nested loops, each
// of at most 65,535 iterations; loops a schedule marks unrolled are
// unrolled whole. Mesa's lavapipe counts the iterations of every loop of
// the shader against one budget per invocation (GpuTarget::loop_budget):
// the device launches a workgroup per block (or per 256 iterations of the
// grid's loop), and a kernel whose invocations could still run more loop
// iterations than the budget is not written for it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "codegen/shader/shader_printer.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::codegen {

// One value the host writes into the push constants (as I32, U32, I64, U64, F32 or F64).
using GlslPushConstant = ShaderScalar;

struct GlslKernel {
  std::string source;  // the shader, entry point `main`
  int local_size = 1;  // threads per workgroup
  // Storage buffers, binding i: the tensor params in order (inputs and the
  // output), then the reduce buffers (acc; best and has for argmin/argmax),
  // then the status word (one uint).
  int tensor_bindings = 0;
  int reduce_bindings = 0;
  int status_binding = 0;
  std::vector<GlslPushConstant> push_constants;
  uint32_t push_constant_bytes = 0;
  std::vector<CheckSite> sites;  // a failed check's id is its index + 1
  // Calls of math helpers in the kernel's body (GpuTarget's
  // max_shader_helper_calls bounds them).
  int helper_calls = 0;
};

// What `zyntax compile --backend vulkan` plans for where there is no Vulkan
// device to ask: subgroups of 32, workgroups of up to 1024 invocations,
// 32 KiB of shared memory, f64 and i64, subgroup shuffles.
GpuTarget generic_vulkan_target();

// Why the GLSL emitter cannot write this kernel for `target` (tile values,
// f64 math functions, atomics on narrow elements, ...), or nothing.
// `block_threads`: the workgroup's size (the plan's).
std::optional<std::string> glsl_unsupported_reason(const cir::Kernel& k, const GpuTarget& target, int block_threads);

// `block_threads`: the workgroup's size (the plan's).
GlslKernel emit_glsl(const cir::Kernel& k, const GpuTarget& target, int block_threads);

}  // namespace zyntax::codegen
