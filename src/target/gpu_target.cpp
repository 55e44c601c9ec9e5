#include "target/gpu_target.hpp"

namespace zyntax {

const char* gpu_api_name(GpuApi api) {
  switch (api) {
    case GpuApi::Cuda: return "cuda";
    case GpuApi::Vulkan: return "vulkan";
    case GpuApi::Metal: return "metal";
    case GpuApi::WebGpu: return "webgpu";
    case GpuApi::Rocm: return "rocm";
  }
  return "gpu";
}

std::string GpuTarget::verify() const {
  auto power_of_two = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  if (!power_of_two(subgroup_size)) return "subgroup_size must be a power of two";
  if (max_threads_per_block < subgroup_size || max_threads_per_block % subgroup_size != 0)
    return "max_threads_per_block must be a multiple of subgroup_size";
  if (multiprocessors < 1) return "multiprocessors must be at least 1";
  if (max_blocks < 1) return "max_blocks must be at least 1";
  if (shared_memory_static < 0 || shared_memory_max < shared_memory_static)
    return "shared_memory_max must be at least shared_memory_static";
  if (!power_of_two(vector_bytes) || vector_bytes < 4) return "vector_bytes must be a power of two of at least 4";
  if (index_bits != 32 && index_bits != 64) return "index_bits must be 32 or 64";
  if (index_bits == 64 && !i64) return "64-bit indices need i64";
  if (matrix_units.any() && subgroup_size != 32) return "matrix units are programmed by subgroups of 32";
  if (warpgroup_mma && !matrix_units.any()) return "warpgroup_mma needs matrix units";
  if (warpgroup_mma && subgroup_size != 32) return "warpgroup matrix units are programmed by warpgroups of 4 subgroups of 32";
  return "";
}

std::string GpuTarget::describe() const {
  std::string s = std::string(gpu_api_name(api)) + " " + arch + ", " + std::to_string(multiprocessors) + " multiprocessors, " +
                  "subgroups of " + std::to_string(subgroup_size) + ", " + std::to_string(shared_memory_max >> 10) +
                  " KiB shared memory per block";
  if (matrix_units.any()) s += ", matrix units";
  if (async_copy) s += ", asynchronous copies";
  if (tensor_copies) s += ", tensor copies";
  if (warpgroup_mma) s += ", warpgroup matrix units";
  return s;
}

}  // namespace zyntax
