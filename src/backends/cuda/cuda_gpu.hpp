// One NVIDIA GPU through the driver API, as a ModuleGpu (module_gpu.hpp):
// its properties, its primary context, a memory pool over cuMemAlloc
// (size_class_pool.hpp), host memory mapped for its kernels
// (host_mappings.hpp), a stream, modules loaded from PTX, launches,
// copies; and page-locked host buffers for the benchmarks. Driver errors become CudaError naming the operation; running
// out of memory is a DataError naming the device and the sizes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_driver.hpp"
#include "backends/host_mappings.hpp"
#include "backends/module_gpu.hpp"
#include "backends/module_gpu_memory.hpp"
#include "runtime/size_class_pool.hpp"

namespace zyntax::cuda {

struct GpuProperties {
  int ordinal = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;
  uint64_t memory_bytes = 0;
  int multiprocessors = 0;
  int max_threads_per_block = 0;
  int warp_size = 32;
  int clock_khz = 0, memory_clock_khz = 0, memory_bus_bits = 0;
  int l2_bytes = 0;
  int shared_per_block_optin = 0;
  bool can_map_host_memory = false, unified_addressing = false, managed_memory = false;

  // Peak DRAM bandwidth from the memory clock and bus width (GB/s).
  double peak_bandwidth_gbs() const { return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8) / 1e9; }
};

class Gpu : public ModuleGpu {
 public:
  // Every GPU the driver reports; empty without a driver or a GPU.
  static std::vector<std::unique_ptr<Gpu>> open_all();

  Gpu(const Driver& driver, int ordinal);
  ~Gpu() override;
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const GpuProperties& properties() const { return props_; }
  const Driver& driver() const { return driver_; }

  // The driver compiles PTX for this GPU; its log is in the error.
  CUmodule load_module(const std::string& ptx) const;
  CUfunction function(CUmodule module, const std::string& name) const;
  // Lets the kernel launch with this much dynamic shared memory (beyond the
  // 48 KiB every kernel may have, up to shared_per_block_optin).
  void allow_dynamic_shared(CUfunction f, unsigned bytes) const;

  // ModuleGpu, through the driver API in this GPU's primary context.
  std::string id() const override { return "cuda:" + std::to_string(props_.ordinal); }
  void bind() const override;
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
  void launch(FunctionHandle f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, StreamHandle stream,
              void** params) const override;
  // Through cuLaunchKernelEx with the cluster's shape as an attribute.
  void launch_clustered(FunctionHandle f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, unsigned cluster,
                        StreamHandle stream, void** params) const override;
  // Mapped for every GPU of the process, and adopted by host_mappings().
  std::shared_ptr<unsigned char> allocate_pinned(size_t bytes) const override;

 private:
  const Driver& driver_;
  GpuProperties props_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::unique_ptr<SizeClassPool> pool_;
  std::unique_ptr<HostMappings> mappings_;
};

// Device memory, streams and events of a GPU (module_gpu_memory.hpp).
using DeviceBuffer = GpuBuffer;
using Stream = GpuStream;
using Event = GpuEvent;
using PinnedBuffer = GpuPinnedBuffer;


}  // namespace zyntax::cuda
