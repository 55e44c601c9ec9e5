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
#include "codegen/llvm/ir_emitter.hpp"

namespace llvm {
class TargetMachine;
}

namespace zyntax {
class DiskCache;
}

namespace zyntax::codegen {

// A GPU architecture LLVM 19 compiles for, and the PTX version used.
struct NvptxArch {
  std::string name;         // "sm_80", "sm_90a"
  int capability = 0;       // 80, 90
  std::string ptx_feature;  // "+ptx78"
};

// "sm_80", "sm_90", "sm_90a", ... (also "80", "9.0"); none if not one LLVM 19 knows.
std::optional<NvptxArch> parse_nvptx_arch(const std::string& name);
// The architecture for a device of compute capability major.minor (the
// newest LLVM knows that the device can run), for the driver to finish.
NvptxArch nvptx_arch_for(int major, int minor);
// The shared memory a block may have on devices of this architecture, once
// the kernel opts in (CUDA's per-block opt-in maximum: 227 KiB on sm_90,
// 163 KiB on sm_80, 99 KiB on sm_86 and sm_89, 48 KiB before sm_70).
int64_t nvptx_max_shared_bytes(const NvptxArch& arch);
// "sm_60, sm_61, ..." for messages.
std::string nvptx_arch_list();

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
  // `entries` (same order). Kernels must be planned (nvptx_plan.hpp).
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
  std::map<std::string, std::unique_ptr<llvm::TargetMachine>> machines_;
};

}  // namespace zyntax::codegen
