// Compiles kernels to HSA code objects for AMD GPUs through LLVM's AMDGPU
// target: the shared CIR → LLVM lowering (amdgpu_kernel entry points), the
// device libraries' ocml for the f64 math functions (embedded at build
// time), LLVM's O3 pipeline, an ELF object for the architecture, and
// ld.lld to make it the shared object the HIP runtime loads (code object
// v5, or v4 for older runtimes). Needs no GPU and no ROCm.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/llvm/gpu_target_machines.hpp"
#include "codegen/llvm/amdgpu/amdgpu_target.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "plan/gpu_plan.hpp"

namespace llvm {
class TargetMachine;
}

namespace zyntax {
class DiskCache;
}

namespace zyntax::codegen {

// Whether ocml was found at build time; without it, kernels that call math
// functions computed in f64 (sin, log, pow, erf, ...) do not compile.
bool have_ocml();

// A planned kernel (plan/gpu_plan.hpp) to compile: its entry point's name
// and the work-items its workgroups are launched with (GpuPlan::block_threads).
struct AmdgpuKernelSpec {
  const cir::Kernel* kernel = nullptr;
  std::string entry;
  int block_threads = kGpuBlockThreads;
};

struct AmdgpuModule {
  std::string bytes;  // the code object (ELF), or the text asked for
  std::vector<std::vector<CheckSite>> sites;  // each kernel's checks, in the order given
};

class AmdgpuCompiler {
 public:
  static AmdgpuCompiler& instance();
  ~AmdgpuCompiler();

  // One code object holding every kernel. `what`: "hsaco" (the code
  // object), "asm" (the architecture's assembly) or "llvm" (the optimised
  // LLVM IR). Throws std::invalid_argument where a kernel is beyond the
  // architecture (its LDS or workgroup size; before LLVM sees it), and
  // std::runtime_error where LLVM or the linker fail, naming the kernel.
  AmdgpuModule compile(const std::vector<AmdgpuKernelSpec>& kernels, const AmdgpuArch& arch, const std::string& what = "hsaco",
                       int code_object_version = 5);

 private:
  AmdgpuCompiler();
  llvm::TargetMachine& machine(const AmdgpuArch& arch);

  std::mutex mu_;
  GpuTargetMachines machines_;
};

struct AmdgpuCodeObject {
  std::string elf;    // the HSA code object; empty where it did not compile
  std::string entry;  // the kernel's symbol in it
  std::string error;  // why not ("" when it compiled)
};

// The code object of one planned kernel.
AmdgpuCodeObject compile_amdgpu(const cir::Kernel& planned, const std::string& entry, const AmdgpuArch& arch, int code_object_version = 5,
                                int block_threads = kGpuBlockThreads);

// The same from `cache` when a run before compiled it (the key holds this
// compiler's version and fingerprint, the architecture, code object
// version, workgroup size, entry name and the kernel's text), else compiled
// and stored. `from_disk`, when given, says which. Errors are not cached.
AmdgpuCodeObject cached_amdgpu(const cir::Kernel& planned, const std::string& entry, const AmdgpuArch& arch, const DiskCache& cache,
                               int code_object_version = 5, int block_threads = kGpuBlockThreads, bool* from_disk = nullptr);

}  // namespace zyntax::codegen
