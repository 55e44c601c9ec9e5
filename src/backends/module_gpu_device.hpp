// A ModuleGpu (module_gpu.hpp) as a device: kernels planned by
// plan/gpu_plan for the GPU's target description, compiled by the backend
// (PTX for NVIDIA, an HSA code object for AMD) and loaded once per plan (a
// cache keyed by the kernel's hash and tuning choice), launched with the
// plan's threads per block over enough blocks to cover the outer parallel
// loop (grid-stride beyond that). Each run has a stream of its own (runs
// from several host threads overlap). Inputs the GPU already holds
// (Tensor::mirror: an earlier kernel's output, a tensor placed here with
// copy_in) are read where they are; views of mapped host memory
// (share_host, to_device(copy=false)) are read in place; other inputs are
// copied to device memory from the GPU's pool, and kept there for the next
// kernel when the tensor is placed on this GPU. The result stays in the
// GPU's memory as the output tensor's mirror, copied back when the host
// first reads it (a reduction's result comes back at once). Kernels the
// plan cannot compile, and a failed runtime check, go where the runtime's
// fallback policy sends them (runtime/device.hpp).
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/module_gpu_memory.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "plan/gpu_plan.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_cache.hpp"

namespace zyntax {

class ModuleGpuDevice : public Device {
 public:
  // The subclass fills info_ and target_ (and may set blocks_per_launch_).
  // The GPU lives as long as the device, after everything made on it.
  explicit ModuleGpuDevice(std::unique_ptr<ModuleGpu> gpu) : owned_gpu_(std::move(gpu)), gpu_(*owned_gpu_) {}

  const DeviceInfo& info() const override { return info_; }
  const GpuTarget* gpu_target() const override { return &target_; }
  Tensor host_tensor(DType dtype, Shape shape, bool pinned) override;
  Tensor share_host(const Tensor& t) override;
  Tensor copy_in(const Tensor& t) override;
  Tensor copy_in_device_memory(uint64_t address, DType dtype, Shape shape) override;
  std::optional<HeldMemory> held_memory(const Tensor& t) const override;
  double last_kernel_milliseconds() const override { return last_kernel_ms_; }
  size_t last_run_bytes_copied_in() const override { return last_copied_in_; }

  Attempt execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                  const std::map<std::string, Scalar>& scalars) override;
  std::vector<TuningCandidate> tuning_candidates(const cir::Kernel& kernel) override;
  Attempt execute_choice(const cir::Kernel& kernel, uint64_t key, const TuningChoice& choice, const std::vector<Tensor>& inputs,
                         const std::map<std::string, Scalar>& scalars) override;

 protected:
  // A value passed after the status word (kernel_abi.hpp): NVIDIA's tensor
  // maps, 128 bytes, 64-byte aligned.
  struct alignas(64) TensorMapValue {
    std::array<unsigned char, 128> bytes{};
  };

  // The planned kernel compiled for this GPU and loaded: its function.
  // Called once per plan, never twice at once.
  virtual ModuleGpu::FunctionHandle load_kernel(const GpuPlan& plan, const std::string& entry) = 0;
  // Lets `f` launch with this much dynamic shared memory (beyond what
  // every kernel may have, target_.shared_memory_static).
  virtual void allow_dynamic_shared(ModuleGpu::FunctionHandle f, unsigned bytes);
  // The tensor map of a warpgroup product's factor at `address`; only GPUs
  // whose target offers tensor copies are asked.
  virtual TensorMapValue encode_tensor_map(const codegen::TensorMapParam& m, ModuleGpu::Address address);

  ModuleGpu& module_gpu() { return gpu_; }

  std::unique_ptr<ModuleGpu> owned_gpu_;  // first: destroyed last
  ModuleGpu& gpu_;
  GpuTarget target_;  // what the planner may use of this GPU
  DeviceInfo info_;
  // Blocks launched at most; beyond, threads loop (grid-stride).
  int64_t blocks_per_launch_ = 1024;

 private:
  // The kernel as it runs here: planned, compiled, loaded. No function: the
  // GPU cannot run it (execute says so, and the runtime's policy takes it).
  struct Plan {
    std::string why_not;
    ModuleGpu::FunctionHandle function = nullptr;
    unsigned blocks = 1;
    unsigned threads = kGpuBlockThreads;
    unsigned dynamic_shared = 0;  // bytes of dynamic shared memory per block
    unsigned cluster = 1;         // blocks per cluster (launched as clusters where more than 1)
    bool writes_whole_output = false;
    // The planned kernel's tensor maps (kernel_abi.hpp), in its entry's order.
    std::vector<codegen::TensorMapParam> tensor_maps;
  };
  // A stream and the events that time a kernel on it, made once and reused
  // by one run at a time.
  struct RunStream {
    GpuStream stream;
    GpuEvent started, finished;
    explicit RunStream(ModuleGpu& gpu) : stream(gpu), started(gpu), finished(gpu) {}
  };
  class StreamLease;

  std::shared_ptr<Plan> make_plan(const cir::Kernel& kernel, const TuningChoice& choice);
  Attempt execute_plan(const cir::Kernel& kernel, const Plan& plan, const std::vector<Tensor>& inputs,
                       const std::map<std::string, Scalar>& scalars);

  std::atomic<double> last_kernel_ms_ = 0;
  std::atomic<size_t> last_copied_in_ = 0;
  std::mutex load_mu_;  // loading modules
  std::mutex streams_mu_;
  std::vector<std::unique_ptr<RunStream>> idle_streams_;
  KernelCache<Plan> plans_;
};

}  // namespace zyntax
