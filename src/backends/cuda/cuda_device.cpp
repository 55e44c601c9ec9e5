#include "backends/cuda/cuda_device.hpp"

#include <cstring>

#include "backends/cuda/tensor_maps.hpp"
#include "backends/module_gpu_device.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "codegen/llvm/nvptx/nvptx_target.hpp"
#include "runtime/disk_cache.hpp"

namespace zyntax {

namespace {

// Blocks per multiprocessor launched at most; beyond, threads loop (grid-stride).
constexpr int64_t kBlocksPerMultiprocessor = 32;

class CudaDevice : public ModuleGpuDevice {
 public:
  explicit CudaDevice(std::unique_ptr<cuda::Gpu> gpu)
      : ModuleGpuDevice(std::move(gpu)), gpu_(static_cast<cuda::Gpu*>(&module_gpu())),
        arch_(codegen::nvptx_arch_for(gpu_->properties().major, gpu_->properties().minor)) {
    const cuda::GpuProperties& p = gpu_->properties();
    // sm_90a's PTX (8.0) needs a CUDA 12 driver, and its tensor copies read
    // tensor maps the driver makes: an older driver, or one without
    // cuTensorMapEncodeTiled, gets sm_90 (no tensor copies, no warpgroup products).
    const cuda::Driver& driver = gpu_->driver();
    if (arch_.name == "sm_90a" && (driver.version < 12000 || !driver.tensor_maps)) arch_ = *codegen::parse_nvptx_arch("sm_90");
    target_ = codegen::nvptx_gpu_target(arch_, {p.multiprocessors, p.shared_per_block_optin, p.max_threads_per_block, p.warp_size});
    if (!driver.tensor_maps) target_.tensor_copies = target_.warpgroup_mma = false;
    if (!driver.clusters) target_.block_clusters = false;
    blocks_per_launch_ = std::max(1, p.multiprocessors) * kBlocksPerMultiprocessor;
    info_.id = gpu_->id();
    info_.type = "gpu";
    info_.name = p.name;
    info_.cores = p.multiprocessors;
    info_.memory_bytes = p.memory_bytes;
    info_.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
    int v = driver.version;
    info_.backend = std::string("LLVM ") + ZYNTAX_LLVM_VERSION + " NVPTX (" + arch_.name + "), CUDA driver " +
                    std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  }

  cuda::Gpu& gpu() { return *gpu_; }

 protected:
  // PTX from an earlier run where there is one (the driver keeps its own
  // cache of the machine code it makes from PTX), loaded for the life of the process.
  ModuleGpu::FunctionHandle load_kernel(const GpuPlan& plan, const std::string& entry) override {
    std::string ptx = codegen::NvptxCompiler::instance().cached_ptx(*plan.kernel, entry, arch_, DiskCache::global());
    return gpu_->function(gpu_->load_module(ptx), entry);
  }

  void allow_dynamic_shared(ModuleGpu::FunctionHandle f, unsigned bytes) override {
    gpu_->allow_dynamic_shared(static_cast<cuda::CUfunction>(f), bytes);
  }

  TensorMapValue encode_tensor_map(const codegen::TensorMapParam& m, ModuleGpu::Address address) override {
    cuda::CUtensorMap map = cuda::encode_tensor_map(gpu_->driver(), m, address);
    static_assert(sizeof map == sizeof(TensorMapValue::bytes));
    TensorMapValue v;
    std::memcpy(v.bytes.data(), &map, sizeof map);
    return v;
  }

 private:
  cuda::Gpu* gpu_;  // the base's, as the driver's GPU
  codegen::NvptxArch arch_;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(std::unique_ptr<cuda::Gpu> gpu) { return std::make_unique<CudaDevice>(std::move(gpu)); }

cuda::Gpu* cuda_gpu_of(Device& device) {
  auto* d = dynamic_cast<CudaDevice*>(&device);
  return d ? &d->gpu() : nullptr;
}

}  // namespace zyntax
