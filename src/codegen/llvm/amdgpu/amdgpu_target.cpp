#include "codegen/llvm/amdgpu/amdgpu_target.hpp"

namespace zyntax::codegen {

namespace {

const AmdgpuArch kArchs[] = {
    {"gfx90a", 64, 9010, 104},   // CDNA2: MI210
    {"gfx942", 64, 9402, 304},   // CDNA3: MI300X
    {"gfx1100", 32, 11000, 96},  // RDNA3: RX 7900 XTX
};

}  // namespace

std::optional<AmdgpuArch> parse_amdgpu_arch(const std::string& name) {
  for (const AmdgpuArch& a : kArchs)
    if (a.name == name) return a;
  return std::nullopt;
}

std::string amdgpu_arch_list() {
  std::string s;
  for (const AmdgpuArch& a : kArchs) s += (s.empty() ? "" : ", ") + a.name;
  return s;
}

GpuTarget amdgpu_gpu_target(const AmdgpuArch& arch) {
  GpuTarget t;
  t.api = GpuApi::Rocm;
  t.arch = arch.name;
  t.subgroup_size = arch.wave_size;
  t.max_threads_per_block = 1024;
  t.max_blocks = (int64_t{1} << 31) - 1;
  t.multiprocessors = arch.compute_units;
  // A workgroup's LDS is all static: the code object states its size.
  t.shared_memory_static = t.shared_memory_max = 64 << 10;
  t.private_memory_per_thread = 64 << 10;
  t.vector_bytes = 16;  // global_load_dwordx4
  t.index_bits = 64;
  t.f64 = t.f16 = t.bf16 = t.i64 = true;  // f16/bf16 stored as such, computed in f32
  // LLVM keeps NaN, infinities and signed zeros (no fast-math flags).
  t.preserves_ieee_specials_f32 = t.preserves_ieee_specials_f64 = true;
  t.subgroup_shuffles = true;  // ds_bpermute
  t.atomics = GpuAtomics{.float_add = true, .block_scope = true, .system_scope = true, .system_scope_min_bytes = 4};
  t.precision = PrecisionContract::Ieee;
  t.max_parameter_bytes = 4096;
  t.max_registers_per_thread = 256;  // VGPRs of one work-item at the lowest occupancy
  return t;
}

}  // namespace zyntax::codegen
