// AMD GPU architectures the AMDGPU code generator compiles for, and what
// each offers the planner (target/gpu_target): a GpuTarget from an
// architecture's name (`zyntax compile --backend rocm --arch gfx90a`, no
// GPU needed).
#pragma once

#include <optional>
#include <string>

#include "target/gpu_target.hpp"

namespace zyntax::codegen {

// The target every AMDGPU kernel is compiled for: the HSA runtime's code objects.
constexpr const char* kAmdgpuTriple = "amdgcn-amd-amdhsa";

struct AmdgpuArch {
  std::string name;         // "gfx90a": LLVM's -mcpu
  int wave_size = 64;       // 64 on CDNA (gfx90a, gfx942), 32 on RDNA (gfx1100)
  int isa_version = 0;      // the device libraries' __oclc_ISA_version: 9010, 9402, 11000
  int compute_units = 0;    // of the architecture's typical part
  // LLVM's target features: the wave size, stated (RDNA could run either).
  std::string features() const { return wave_size == 64 ? "+wavefrontsize64" : "+wavefrontsize32"; }
};

// "gfx90a", "gfx942", "gfx1100"; none for any other name.
std::optional<AmdgpuArch> parse_amdgpu_arch(const std::string& name);
// "gfx90a, gfx942, gfx1100" for messages.
std::string amdgpu_arch_list();

// What GPUs of this architecture offer: 64 KiB of LDS and 1024 work-items
// per workgroup, the wave size, the compute units of a typical part (an
// MI210's 104, an MI300X's 304, an RX 7900 XTX's 96), f64, LLVM's atomics
// at every scope. No matrix units: products take the tiled schedules.
GpuTarget amdgpu_gpu_target(const AmdgpuArch& arch);

}  // namespace zyntax::codegen
