// Compiles kernels to PTX for NVIDIA GPUs through LLVM's NVPTX target: the
// shared CIR → LLVM lowering (entry points with nvvm.annotations), NVIDIA's
// libdevice for the f64 math functions (embedded at build time from the
// CUDA toolkit), LLVM's O3 pipeline, then PTX text, which the CUDA driver
// compiles for the GPU it runs on. Needs no GPU and no driver.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/llvm/gpu_target_machines.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "codegen/llvm/nvptx/nvptx_target.hpp"

namespace llvm {
class TargetMachine;
}

namespace zyntax {
class DiskCache;
}

namespace zyntax::codegen {

// Whether libdevice was found at build time; without it, kernels that call
// math functions computed in f64 (sin, log, pow, erf, ...) do not compile.
bool have_libdevice();

struct PtxKernel {
  std::string entry;  // the entry point's name
  std::vector<CheckSite> sites;
};

struct PtxModule {
  std::string ptx;
  std::vector<PtxKernel> kernels;  // in the order given
};

class NvptxCompiler {
 public:
  static NvptxCompiler& instance();
  ~NvptxCompiler();

  // One PTX module holding every kernel as an entry point named by
  // `entries` (same order). Kernels must be planned (plan/gpu_plan.hpp).
  // `what` is "ptx" or "llvm" (the optimised LLVM IR).
  PtxModule compile(const std::vector<const cir::Kernel*>& kernels, const std::vector<std::string>& entries,
                    const NvptxArch& arch, const std::string& what = "ptx");

  // The PTX of one planned kernel: from `cache` when a run before compiled
  // it (the key holds this compiler's version and fingerprint, the
  // architecture, the entry's name and the kernel's text, so a changed
  // kernel or compiler never loads old PTX), else compiled and stored.
  // `from_disk`, when given, says which.
  std::string cached_ptx(const cir::Kernel& kernel, const std::string& entry, const NvptxArch& arch, const DiskCache& cache,
                         bool* from_disk = nullptr);

 private:
  NvptxCompiler();
  llvm::TargetMachine& machine(const NvptxArch& arch);

  std::mutex mu_;
  GpuTargetMachines machines_;
};

}  // namespace zyntax::codegen
