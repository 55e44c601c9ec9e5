// One AMD GPU through the HIP runtime's module API, as a ModuleGpu
// (module_gpu.hpp): its properties and architecture, a memory pool over
// hipMalloc (size_class_pool.hpp), host memory mapped for its kernels
// (host_mappings.hpp), a stream, code objects loaded as modules, launches,
// copies; and page-locked host buffers for the benchmarks. HIP errors become
// HipError naming the GPU and the operation; running out of memory is a
// DataError naming the device and the sizes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/host_mappings.hpp"
#include "backends/module_gpu.hpp"
#include "backends/module_gpu_memory.hpp"
#include "backends/rocm/hip_api.hpp"
#include "runtime/size_class_pool.hpp"

namespace zyntax::rocm {

struct GpuProperties {
  int ordinal = 0;
  std::string name;                        // "AMD Instinct MI210"
  std::string arch;                        // "gfx90a": what its code objects are compiled for
  std::vector<std::string> arch_features;  // {"sramecc+", "xnack-"}: the target features it runs with
  int major = 0, minor = 0;                // HIP's "compute capability": 9.0 for gfx90a, 11.0 for gfx1100
  uint64_t memory_bytes = 0;
  int compute_units = 0;
  int max_threads_per_block = 0;
  int wave_size = 64;  // 64 on CDNA and GCN, 32 on RDNA
  int clock_khz = 0, memory_clock_khz = 0, memory_bus_bits = 0;
  int l2_bytes = 0;
  // LDS a workgroup may use: AMD GPUs need no opt-in up to it.
  int shared_per_block = 0;
  int shared_per_compute_unit = 0;
  bool can_map_host_memory = false, unified_addressing = false, managed_memory = false;

  // "gfx90a:sramecc+:xnack-", as the runtime names it.
  std::string arch_name() const { return GfxArch{arch, arch_features}.full_name(); }
  // Whether target feature `feature` ("xnack", "sramecc") is on; nothing when the runtime leaves it open.
  std::optional<bool> arch_feature(std::string_view feature) const { return gfx_feature(arch_features, feature); }
  // Peak DRAM bandwidth from the memory clock and bus width (GB/s).
  double peak_bandwidth_gbs() const { return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8) / 1e9; }
};

class Gpu : public ModuleGpu {
 public:
  // Every GPU the runtime reports (Hip::get()'s, or `hip`'s); empty without a runtime or a GPU.
  static std::vector<std::unique_ptr<Gpu>> open_all();
  static std::vector<std::unique_ptr<Gpu>> open_all(const Hip& hip);

  // `hip` outlives the GPU.
  Gpu(const Hip& hip, int ordinal);
  ~Gpu() override;
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const GpuProperties& properties() const { return props_; }
  const Hip& hip() const { return hip_; }

  // Loads an AMDGPU code object (an ELF file, as the code generator writes
  // it for this GPU's architecture); the error names the GPU, its
  // architecture and the code object's.
  hipModule_t load_module(const std::string& code_object) const;
  void unload_module(hipModule_t module) const;
  hipFunction_t function(hipModule_t module, const std::string& name) const;
  // Checks that a kernel may launch with this much dynamic shared memory:
  // AMD GPUs give every kernel up to shared_per_block without opting in
  // (hipFuncSetAttribute does not apply to module kernels), so beyond it is an error.
  void allow_dynamic_shared(hipFunction_t f, unsigned bytes) const;

  // ModuleGpu, through the HIP runtime with this GPU as the thread's device.
  std::string id() const override { return "rocm:" + std::to_string(props_.ordinal); }
  void bind() const override;  // hipSetDevice
  SizeClassPool& memory() override { return *pool_; }
  HostMappings& host_mappings() override { return *mappings_; }
  bool maps_host_memory() const override { return props_.can_map_host_memory && props_.unified_addressing; }
  StreamHandle stream() const override { return stream_; }
  void synchronize() const override;
  void synchronize_all() const override;
  void copy_to_device(StreamHandle stream, Address dst, const void* src, size_t bytes) const override;
  void copy_to_host(StreamHandle stream, void* dst, Address src, size_t bytes) const override;
  void copy_on_device(StreamHandle stream, Address dst, Address src, size_t bytes) const override;
  void zero(StreamHandle stream, Address dst, size_t bytes) const override;
  StreamHandle create_stream() const override;
  void destroy_stream(StreamHandle stream) const noexcept override;
  void synchronize_stream(StreamHandle stream) const override;
  EventHandle create_event(bool timing) const override;
  void destroy_event(EventHandle event) const noexcept override;
  void record_event(EventHandle event, StreamHandle stream) const override;
  void synchronize_event(EventHandle event) const override;
  bool event_done(EventHandle event) const override;
  float elapsed_ms(EventHandle start, EventHandle end) const override;
  // `params` points at each argument's value in the order of the kernel's
  // parameters (hipModuleLaunchKernel's kernelParams, as cuLaunchKernel's).
  void launch(FunctionHandle f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, StreamHandle stream,
              void** params) const override;
  // Mapped for every GPU of the process, and adopted by host_mappings().
  std::shared_ptr<unsigned char> allocate_pinned(size_t bytes) const override;

 private:
  const Hip& hip_;
  GpuProperties props_;
  hipDevice_t device_ = 0;
  hipStream_t stream_ = nullptr;
  std::unique_ptr<SizeClassPool> pool_;
  std::unique_ptr<HostMappings> mappings_;
};

// The architecture an AMDGPU code object (ELF) is for, in the runtime's
// spelling ("gfx942", "gfx90a:xnack-"); "" when it is not one or the
// processor is not known here. For messages.
std::string code_object_target(std::string_view elf);

// Device memory, streams and events of a GPU (module_gpu_memory.hpp).
using DeviceBuffer = GpuBuffer;
using Stream = GpuStream;
using Event = GpuEvent;
using PinnedBuffer = GpuPinnedBuffer;


}  // namespace zyntax::rocm
