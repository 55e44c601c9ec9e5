// What a GPU offers the compiler. Every GPU planning decision (block sizes,
// tiles, shared memory, which schedules may run at all) reads one of these,
// never a vendor's number: a backend describes its devices here and the
// generic planner (plan/gpu_plan) does the rest. NVIDIA's targets come from
// an architecture name or from the driver's properties
// (codegen/llvm/nvptx/nvptx_target); other backends fill in their own.
#pragma once

#include <cstdint>
#include <string>

namespace zyntax {

// The API a target's kernels are compiled for and launched through.
enum class GpuApi { Cuda, Vulkan, Metal, WebGpu, Rocm };
const char* gpu_api_name(GpuApi api);

// Matrix multiply-accumulate units (NVIDIA's tensor cores): which factor
// types they take, each product exact and summed in f32.
struct MatrixUnits {
  bool f16 = false;
  bool bf16 = false;
  bool tf32 = false;  // f32 factors read as TF32, where a kernel allows it (@precision(tf32))
  bool any() const { return f16 || bf16 || tf32; }
};

// Atomic read-modify-write instructions on global and shared memory.
struct GpuAtomics {
  bool float_add = true;       // a native f32/f64 add (else a compare-and-swap loop)
  bool block_scope = true;     // atomics visible to the block only (cheaper where it suffices)
  bool system_scope = true;    // atomics the host sees too (memory mapped from the host)
  int system_scope_min_bytes = 4;  // the smallest element a system-scope atomic updates
};

// What the target's arithmetic promises. Every backend computes what the
// reference executor computes (IEEE operations each rounded to its dtype,
// no contraction of a*b+c); a relaxed target would say where it does not.
enum class PrecisionContract { Ieee, Relaxed };

struct GpuTarget {
  GpuApi api = GpuApi::Cuda;
  std::string arch;                       // "sm_90"; the device or driver's name elsewhere
  int subgroup_size = 32;                 // threads that run in lockstep (a warp)
  int max_threads_per_block = 1024;
  int64_t max_blocks = (int64_t{1} << 31) - 1;  // along the grid's first axis
  int multiprocessors = 1;                // blocks that run at once, one each (compute units)
  int64_t shared_memory_static = 48 << 10;  // a block's shared memory without asking
  int64_t shared_memory_max = 48 << 10;     // the most a block may have, once the kernel opts in
  int64_t private_memory_per_thread = 64 << 10;  // a thread's local arrays
  int vector_bytes = 16;                  // the widest load or store of one thread
  int index_bits = 64;                    // integer width of addresses and indices
  bool f64 = true, f16 = true, bf16 = true, i64 = true;
  // Shaders may ask the driver's compiler to keep NaN, infinities and
  // signed zeros (SPIR-V's SignedZeroInfNanPreserve), per float width.
  bool preserves_ieee_specials_f32 = false, preserves_ieee_specials_f64 = false;
  bool subgroup_shuffles = true;          // lanes exchange registers (block reductions use them)
  bool async_copy = false;                // copies into shared memory that land while the thread goes on
  // Hopper's (sm_90a): tiles copied by a tensor copy engine into swizzled
  // shared memory, completing on shared-memory barriers (cp.async.bulk.tensor,
  // mbarrier), and matrix units a warpgroup drives from shared memory
  // (wgmma); the warpgroup product schedule needs both.
  bool tensor_copies = false;
  bool warpgroup_mma = false;
  // Blocks launched in clusters whose blocks reach each other's shared
  // memory and barriers, and tensor copies into several blocks at once
  // (Hopper, with a driver that launches clusters).
  bool block_clusters = false;
  // Loop iterations one invocation may run in all, counted over every loop
  // of the shader (0: no limit). Mesa's lavapipe stops loops at 65,535.
  int64_t loop_budget = 0;
  // Calls of math helpers a shader may make before its kernel runs on the
  // host instead (0: no limit). Drivers inline every call and their compile
  // time grows faster than the inlined code: lavapipe takes 2 s at 24
  // calls, 5 s at 50, 12 s at 100, 40 s and 870 MB at 200.
  int max_shader_helper_calls = 0;
  // Storage buffers one kernel may bind (0: no limit; CUDA passes pointers
  // as parameters). Counted by cir/storage_buffers.
  int max_storage_buffers = 0;
  // Bytes of parameters one kernel may take (0: no limit). CUDA passes every
  // pointer, scalar and size as a parameter, 4 KiB in all before Volta's
  // larger limit under CUDA 12.1 (kept at 4 KiB: what every driver takes).
  // Counted by cir/storage_buffers' gpu_parameter_bytes.
  int max_parameter_bytes = 0;
  // 32-bit registers one thread may hold before the compiler spills to
  // local memory (0: not modelled; Vulkan and WebGPU do not say). Fusion
  // compares its estimate (cir/register_pressure) with it.
  int max_registers_per_thread = 0;
  GpuAtomics atomics;
  MatrixUnits matrix_units;
  PrecisionContract precision = PrecisionContract::Ieee;

  // Why this description cannot be right ("subgroup_size must divide
  // max_threads_per_block"), or "" when it is consistent.
  std::string verify() const;
  // One line for messages and `zyntax devices`: "cuda sm_90, 132 multiprocessors, ...".
  std::string describe() const;
};

}  // namespace zyntax
