#include "codegen/llvm/nvptx/nvptx_target.hpp"

namespace zyntax::codegen {

namespace {

// Compute capabilities LLVM 19's NVPTX target knows, from sm_60 (Pascal) on.
constexpr int kCapabilities[] = {60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};

NvptxArch make_arch(int capability, bool accelerated) {
  NvptxArch a;
  a.capability = capability;
  a.name = "sm_" + std::to_string(capability) + (accelerated ? "a" : "");
  // PTX 7.8 (CUDA 11.8) is the first that knows sm_89/sm_90; sm_90a needs 8.0.
  a.ptx_feature = accelerated ? "+ptx80" : "+ptx78";
  return a;
}

// The shared memory a block may have once the kernel opts in (CUDA's
// per-block opt-in maximum).
int64_t max_shared_bytes(int capability) {
  switch (capability) {
    case 70: case 72: return 96 << 10;
    case 75: return 64 << 10;
    case 80: case 87: return 163 << 10;
    case 86: case 89: return 99 << 10;
    default: return capability >= 90 ? 227 << 10 : 48 << 10;
  }
}

// The multiprocessors of the architecture's largest part.
int largest_part_multiprocessors(int capability) {
  switch (capability) {
    case 60: return 56;   // P100
    case 61: return 30;   // P40
    case 62: return 2;    // Jetson TX2
    case 70: return 80;   // V100
    case 72: return 8;    // Jetson AGX Xavier
    case 75: return 72;   // Quadro RTX 8000
    case 80: return 108;  // A100
    case 86: return 84;   // A40
    case 87: return 16;   // Jetson AGX Orin
    case 89: return 142;  // L40
    default: return 132;  // H100
  }
}

}  // namespace

std::optional<NvptxArch> parse_nvptx_arch(const std::string& name) {
  std::string s = name;
  if (s.rfind("sm_", 0) == 0) s = s.substr(3);
  else if (s.rfind("compute_", 0) == 0) s = s.substr(8);
  bool accelerated = !s.empty() && s.back() == 'a';
  if (accelerated) s.pop_back();
  if (size_t dot = s.find('.'); dot != std::string::npos) s.erase(dot, 1);
  if (s.empty() || s.size() > 3 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int cap = std::stoi(s);
  for (int c : kCapabilities)
    if (c == cap && (!accelerated || c == 90)) return make_arch(cap, accelerated);
  return std::nullopt;
}

NvptxArch nvptx_arch_for(int major, int minor) {
  int cap = major * 10 + minor, best = kCapabilities[0];
  for (int c : kCapabilities)
    if (c <= cap && c / 10 <= major) best = c;  // PTX for an older architecture runs on newer ones
  // sm_90a's features (wgmma, setmaxnreg) run on exactly compute capability
  // 9.0 (H100, H200), and on nothing newer.
  return make_arch(best, major == 9 && minor == 0);
}

std::string nvptx_arch_list() {
  std::string s;
  for (int c : kCapabilities) s += (s.empty() ? "sm_" : ", sm_") + std::to_string(c);
  return s + ", sm_90a";
}

GpuTarget nvptx_gpu_target(const NvptxArch& arch) {
  GpuTarget t;
  t.api = GpuApi::Cuda;
  t.arch = arch.name;
  t.subgroup_size = 32;
  t.max_threads_per_block = 1024;
  t.max_blocks = (int64_t{1} << 31) - 1;
  t.multiprocessors = largest_part_multiprocessors(arch.capability);
  t.shared_memory_static = 48 << 10;
  t.shared_memory_max = max_shared_bytes(arch.capability);
  t.private_memory_per_thread = 64 << 10;  // the driver reserves it for every thread the GPU holds at once
  t.vector_bytes = 16;                     // ld.global.v4.f32
  t.index_bits = 64;
  t.f64 = t.f16 = t.bf16 = t.i64 = true;   // f16/bf16 stored as such, computed in f32
  t.subgroup_shuffles = true;              // shfl.sync
  t.async_copy = arch.capability >= 80;    // cp.async
  t.atomics = GpuAtomics{.float_add = true, .block_scope = true, .system_scope = true, .system_scope_min_bytes = 4};
  if (arch.capability >= 80) t.matrix_units = MatrixUnits{.f16 = true, .bf16 = true, .tf32 = true};  // mma.sync
  // cp.async.bulk.tensor with mbarrier, and wgmma.mma_async: sm_90a only.
  bool accelerated = arch.name.size() > 1 && arch.name.back() == 'a';
  t.tensor_copies = t.warpgroup_mma = accelerated && arch.capability == 90;
  t.block_clusters = arch.capability >= 90;
  t.precision = PrecisionContract::Ieee;
  t.max_parameter_bytes = 4096;
  t.max_registers_per_thread = 255;  // PTX's most per thread; 64K per multiprocessor holds 256 threads at that
  return t;
}

GpuTarget nvptx_gpu_target(const NvptxArch& arch, const NvidiaDeviceLimits& device) {
  GpuTarget t = nvptx_gpu_target(arch);
  if (device.multiprocessors > 0) t.multiprocessors = device.multiprocessors;
  if (device.shared_per_block_optin > 0) t.shared_memory_max = std::max(device.shared_per_block_optin, t.shared_memory_static);
  if (device.max_threads_per_block > 0) t.max_threads_per_block = device.max_threads_per_block;
  if (device.warp_size > 0) t.subgroup_size = device.warp_size;
  return t;
}

}  // namespace zyntax::codegen
