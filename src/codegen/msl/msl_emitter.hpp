// CIR → Metal Shading Language compute kernels, through the shared shader
// printer (codegen/shader/shader_printer). The emitter takes a kernel
// planned for an Apple GPU's GpuTarget (apple_gpu_target()) and writes one
// MSL kernel function computing what the reference executor computes, with
// the GLSL dialect's semantics (codegen/glsl/glsl_emitter.hpp): values of
// f16/bf16 computed in f32 and rounded after every operation, saturating
// conversions, NaN-propagating min/max, checked integer division, bounds
// checks on every access that record a failed check's id in the status
// word, atomics by compare-and-swap of 32-bit words.
//
// What Metal lacks, and how it is met:
// - No f64: f64 tensors are not written (a clear reason); f64 values of the
//   schedules (f32 sums kept in f64) are computed in f32, and so are the
//   accumulators of reduce kernels (reduce_buffer_dtypes says which).
// - Atomics of 32 bits only: 8-byte atomic updates are not written; 1- and
//   2-byte elements through the 32-bit word that holds them.
//
// The kernel's arguments ([[buffer(i)]]): the tensor params in order
// (inputs and the output), then the reduce buffers (acc; best and has for
// argmin/argmax), then the status word (one uint), then the scalars and
// sizes in one struct (setBytes), where any. Threadgroup memory is one
// argument, [[threadgroup(0)]], of threadgroup_memory_bytes (the arrays at
// offsets within it).
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

// One field of the argument struct (as I32, U32, I64, U64 or F32).
using MslArgument = ShaderScalar;

struct MslKernel {
  std::string source;             // the library's source
  std::string entry = "zy_main";  // the kernel function's name in it
  int threads_per_group = 1;
  int tensor_buffers = 0;
  int reduce_buffers = 0;
  // The element type of each reduce buffer as the kernel holds it (the
  // host's f64 accumulators are f32 here): the device converts.
  std::vector<DType> reduce_buffer_dtypes;
  int status_buffer = 0;
  int arguments_buffer = -1;  // -1: no scalars or sizes
  std::vector<MslArgument> arguments;
  uint32_t argument_bytes = 0;
  uint32_t threadgroup_memory_bytes = 0;  // a multiple of 16; 0: none
  std::vector<CheckSite> sites;           // a failed check's id is its index + 1
  int helper_calls = 0;
};

// Apple GPUs of family Apple7 and later (M1 on): SIMD groups of 32, 1024
// threads per threadgroup, 32 KiB of threadgroup memory, 31 buffer
// arguments, no f64.
GpuTarget apple_gpu_target();

// Why the MSL emitter cannot write this kernel, or nothing.
std::optional<std::string> msl_unsupported_reason(const cir::Kernel& k, const GpuTarget& target, int block_threads);

MslKernel emit_msl(const cir::Kernel& k, const GpuTarget& target, int block_threads);

}  // namespace zyntax::codegen
