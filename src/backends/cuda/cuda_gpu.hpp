// One NVIDIA GPU through the driver API: its properties, its primary
// context, a memory pool over cuMemAlloc (size_class_pool.hpp), host memory
// mapped for its kernels (host_mappings.hpp), a stream, modules loaded from
// PTX, launches, copies; and the RAII pieces the
// runtime and benchmarks use (streams, events, pinned host memory, device
// buffers). Driver errors become CudaError naming the operation; running
// out of memory is a DataError naming the device and the sizes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_driver.hpp"
#include "backends/cuda/host_mappings.hpp"
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

class Gpu {
 public:
  // Every GPU the driver reports; empty without a driver or a GPU.
  static std::vector<std::unique_ptr<Gpu>> open_all();

  Gpu(const Driver& driver, int ordinal);
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const GpuProperties& properties() const { return props_; }
  std::string id() const { return "cuda:" + std::to_string(props_.ordinal); }
  const Driver& driver() const { return driver_; }
  // Makes this GPU's context current on the calling thread.
  void bind() const;
  SizeClassPool& memory() { return *pool_; }
  // Host memory this GPU's kernels read in place (to_device(copy=false)).
  HostMappings& host_mappings() { return *mappings_; }
  // The stream kernels and copies of the device run on, in order.
  CUstream stream() const { return stream_; }
  void synchronize() const;

  // The driver compiles PTX for this GPU; its log is in the error.
  CUmodule load_module(const std::string& ptx) const;
  CUfunction function(CUmodule module, const std::string& name) const;
  // Lets the kernel launch with this much dynamic shared memory (beyond the
  // 48 KiB every kernel may have, up to shared_per_block_optin).
  void allow_dynamic_shared(CUfunction f, unsigned bytes) const;
  void launch(CUfunction f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, CUstream stream, void** params) const;

  // Zeroed page-locked host memory (for every GPU of the process, mapped
  // into their address space and adopted by host_mappings()), freed with
  // the last reference; a DataError naming the sizes when there is none.
  std::shared_ptr<unsigned char> allocate_pinned(size_t bytes) const;

 private:
  const Driver& driver_;
  GpuProperties props_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::unique_ptr<SizeClassPool> pool_;
  std::unique_ptr<HostMappings> mappings_;
};

// Device memory from a GPU's pool, given back when destroyed.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Gpu& gpu, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;

  CUdeviceptr address() const { return address_; }
  size_t size() const { return bytes_; }
  // Copies on the GPU's stream; `wait` makes the host wait for the copy.
  void upload(const void* host, size_t bytes, bool wait = true);
  void download(void* host, size_t bytes, bool wait = true) const;
  void zero();
  // Copies bytes [offset, offset + bytes) of `src` (on the same GPU) to the
  // start of this buffer, waiting for the copy.
  void copy_from(const DeviceBuffer& src, size_t offset, size_t bytes);
  Gpu& gpu() const { return *gpu_; }
  // The same on `stream`, in its order, the host not waiting.
  void upload_on(CUstream stream, const void* host, size_t bytes);
  void download_on(CUstream stream, void* host, size_t bytes) const;
  void zero_on(CUstream stream);

 private:
  Gpu* gpu_ = nullptr;
  CUdeviceptr address_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory: copies from and to it run at the bus's speed
// and may be asynchronous.
class PinnedBuffer {
 public:
  PinnedBuffer(Gpu& gpu, size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  Gpu& gpu_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  explicit Stream(Gpu& gpu);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return stream_; }
  void synchronize() const;

 private:
  Gpu& gpu_;
  CUstream stream_ = nullptr;
};

class Event {
 public:
  explicit Event(Gpu& gpu, bool timing = true);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(CUstream stream) const;
  void synchronize() const;
  bool done() const;
  // Milliseconds between two recorded (and completed) events.
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  Gpu& gpu_;
  CUevent event_ = nullptr;
};

}  // namespace zyntax::cuda
