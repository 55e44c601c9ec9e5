#include "backends/rocm/rocm_device.hpp"

#include <algorithm>
#include <stdexcept>

#include "backends/module_gpu_device.hpp"
#include "codegen/llvm/amdgpu/amdgpu_compiler.hpp"
#include "codegen/llvm/amdgpu/amdgpu_target.hpp"
#include "runtime/disk_cache.hpp"

namespace zyntax {

namespace {

// Workgroups per compute unit launched at most; beyond, work-items loop (grid-stride).
constexpr int64_t kWorkgroupsPerComputeUnit = 32;
// HIP loads code object v5 from ROCm 5.5 on (HIP_VERSION 5.5); older runtimes get v4.
constexpr int kCodeObjectV5Runtime = 50500000;

class RocmDevice : public ModuleGpuDevice {
 public:
  RocmDevice(std::unique_ptr<rocm::Gpu> gpu, codegen::AmdgpuArch arch)
      : ModuleGpuDevice(std::move(gpu)), gpu_(static_cast<rocm::Gpu*>(&module_gpu())), arch_(std::move(arch)) {
    const rocm::GpuProperties& p = gpu_->properties();
    const rocm::Hip& hip = gpu_->hip();
    code_object_version_ = hip.runtime_version >= kCodeObjectV5Runtime ? 5 : 4;
    // The architecture's description, with this part's own compute units and limits.
    target_ = codegen::amdgpu_gpu_target(arch_);
    if (p.compute_units > 0) target_.multiprocessors = p.compute_units;
    if (p.max_threads_per_block > 0) target_.max_threads_per_block = std::min(target_.max_threads_per_block, p.max_threads_per_block);
    blocks_per_launch_ = std::max(1, p.compute_units) * kWorkgroupsPerComputeUnit;
    info_.id = gpu_->id();
    info_.type = "gpu";
    info_.name = p.name;
    info_.cores = p.compute_units;
    info_.memory_bytes = p.memory_bytes;
    info_.compute_capability = p.arch_name();
    info_.backend = std::string("LLVM ") + ZYNTAX_LLVM_VERSION + " AMDGPU (" + arch_.name + ", code object v" +
                    std::to_string(code_object_version_) + "), HIP " + hip.version_text();
  }

  rocm::Gpu& gpu() { return *gpu_; }

 protected:
  // The code object from an earlier run where there is one, loaded for the life of the process.
  ModuleGpu::FunctionHandle load_kernel(const GpuPlan& plan, const std::string& entry) override {
    codegen::AmdgpuCodeObject co = codegen::cached_amdgpu(*plan.kernel, entry, arch_, DiskCache::global(), code_object_version_,
                                                          static_cast<int>(plan.block_threads));
    if (!co.error.empty()) throw std::runtime_error("compiling a kernel for " + info_.id + " (" + arch_.name + "): " + co.error);
    return gpu_->function(gpu_->load_module(co.elf), co.entry);
  }

  void allow_dynamic_shared(ModuleGpu::FunctionHandle f, unsigned bytes) override {
    gpu_->allow_dynamic_shared(static_cast<rocm::hipFunction_t>(f), bytes);
  }

 private:
  rocm::Gpu* gpu_;  // the base's, as HIP's GPU
  codegen::AmdgpuArch arch_;
  int code_object_version_ = 5;
};

}  // namespace

std::unique_ptr<Device> make_rocm_device(std::unique_ptr<rocm::Gpu> gpu, std::string* why) {
  std::optional<codegen::AmdgpuArch> arch = codegen::parse_amdgpu_arch(gpu->properties().arch);
  if (!arch) {
    *why = gpu->id() + " (" + gpu->properties().name + ") is " + gpu->properties().arch_name() +
           ", an architecture the code generator does not target (it targets " + codegen::amdgpu_arch_list() + ")";
    return nullptr;
  }
  return std::make_unique<RocmDevice>(std::move(gpu), std::move(*arch));
}

rocm::Gpu* rocm_gpu_of(Device& device) {
  auto* d = dynamic_cast<RocmDevice*>(&device);
  return d ? &d->gpu() : nullptr;
}

}  // namespace zyntax
