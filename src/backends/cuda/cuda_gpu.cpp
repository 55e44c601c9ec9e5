#include "backends/cuda/cuda_gpu.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/tensor.hpp"

namespace zyntax::cuda {

std::vector<std::unique_ptr<Gpu>> Gpu::open_all() {
  std::vector<std::unique_ptr<Gpu>> gpus;
  const Driver* d = Driver::get();
  int n = 0;
  if (!d || d->cuDeviceGetCount(&n) != CUDA_SUCCESS) return gpus;
  for (int i = 0; i < n; ++i) gpus.push_back(std::make_unique<Gpu>(*d, i));
  return gpus;
}

Gpu::Gpu(const Driver& driver, int ordinal) : driver_(driver) {
  const Driver& d = driver_;
  std::string at = " (cuda:" + std::to_string(ordinal) + ")";
  d.check(d.cuDeviceGet(&device_, ordinal), "cuDeviceGet" + at);
  props_.ordinal = ordinal;
  char name[256] = {};
  d.check(d.cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName" + at);
  props_.name = name;
  size_t total = 0;
  d.check(d.cuDeviceTotalMem(&total, device_), "cuDeviceTotalMem" + at);
  props_.memory_bytes = total;
  auto attribute = [&](DeviceAttribute a) {
    int v = 0;
    d.check(d.cuDeviceGetAttribute(&v, a, device_), "cuDeviceGetAttribute(" + std::to_string(a) + ")" + at);
    return v;
  };
  props_.major = attribute(kComputeCapabilityMajor);
  props_.minor = attribute(kComputeCapabilityMinor);
  props_.multiprocessors = attribute(kMultiprocessorCount);
  props_.max_threads_per_block = attribute(kMaxThreadsPerBlock);
  props_.warp_size = attribute(kWarpSize);
  props_.clock_khz = attribute(kClockRateKhz);
  props_.memory_clock_khz = attribute(kMemoryClockRateKhz);
  props_.memory_bus_bits = attribute(kGlobalMemoryBusWidth);
  props_.l2_bytes = attribute(kL2CacheSize);
  props_.shared_per_block_optin = attribute(kMaxSharedMemoryPerBlockOptin);
  props_.can_map_host_memory = attribute(kCanMapHostMemory) != 0;
  props_.unified_addressing = attribute(kUnifiedAddressing) != 0;
  props_.managed_memory = attribute(kManagedMemory) != 0;

  d.check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain" + at);
  bind();
  d.check(d.cuStreamCreate(&stream_, kStreamNonBlocking), "cuStreamCreate" + at);
  std::string id = this->id();
  pool_ = std::make_unique<SizeClassPool>(
      id,
      [this](size_t bytes) -> uint64_t {
        CUdeviceptr p = 0;
        CUresult r = driver_.cuMemAlloc(&p, bytes);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) return 0;
        driver_.check(r, "cuMemAlloc of " + format_bytes(bytes) + " on " + this->id());
        return p;
      },
      [this](uint64_t p) { driver_.cuMemFree(static_cast<CUdeviceptr>(p)); });
  // Registered for every context, and unregistered in this GPU's context on
  // whichever thread lets go of the last view.
  mappings_ = std::make_unique<HostMappings>(
      [this](void* data, size_t bytes) -> uint64_t {
        bind();
        driver_.check(driver_.cuMemHostRegister(data, bytes, kMemHostRegisterPortable | kMemHostRegisterDeviceMap),
                      "mapping " + format_bytes(bytes) + " of host memory for " + this->id());
        CUdeviceptr address = 0;
        CUresult r = driver_.cuMemHostGetDevicePointer(&address, data, 0);
        if (r != CUDA_SUCCESS) driver_.cuMemHostUnregister(data);
        driver_.check(r, "finding mapped host memory on " + this->id());
        return address;
      },
      [&d = driver_, context = context_](void* data) {
        d.cuCtxSetCurrent(context);
        d.cuMemHostUnregister(data);
      });
}

Gpu::~Gpu() {
  bind();
  mappings_.reset();
  pool_.reset();
  if (stream_) driver_.cuStreamDestroy(stream_);
  driver_.cuDevicePrimaryCtxRelease(device_);
}

void Gpu::bind() const {
  if (CUresult r = driver_.cuCtxSetCurrent(context_); r != CUDA_SUCCESS) driver_.check(r, "cuCtxSetCurrent (" + id() + ")");
}

void Gpu::synchronize() const {
  bind();
  if (CUresult r = driver_.cuStreamSynchronize(stream_); r != CUDA_SUCCESS) driver_.check(r, "waiting for " + id());
}

CUmodule Gpu::load_module(const std::string& ptx) const {
  bind();
  std::string error_log(16384, '\0'), info_log(4096, '\0');
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes, kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size()), info_log.data(),
                    reinterpret_cast<void*>(info_log.size())};
  CUmodule m = nullptr;
  CUresult r = driver_.cuModuleLoadDataEx(&m, ptx.c_str(), 4, options, values);
  if (r != CUDA_SUCCESS) {
    error_log.resize(error_log.find('\0'));
    throw CudaError("loading PTX on " + id() + " (" + properties().name + ") failed: " + driver_.error_text(r) +
                        (error_log.empty() ? "" : "\n" + error_log),
                    r);
  }
  return m;
}

CUfunction Gpu::function(CUmodule module, const std::string& name) const {
  bind();
  CUfunction f = nullptr;
  driver_.check(driver_.cuModuleGetFunction(&f, module, name.c_str()), "finding kernel " + name + " in its module");
  return f;
}

void Gpu::allow_dynamic_shared(CUfunction f, unsigned bytes) const {
  constexpr int kMaxDynamicSharedSizeBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  bind();
  driver_.check(driver_.cuFuncSetAttribute(f, kMaxDynamicSharedSizeBytes, static_cast<int>(bytes)),
                "allowing a kernel " + std::to_string(bytes) + " bytes of shared memory on " + id() + " (it has " +
                    std::to_string(props_.shared_per_block_optin) + " per block)");
}

void Gpu::launch(FunctionHandle f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, StreamHandle stream,
                 void** params) const {
  // The message is made only for an error: a launch costs a few microseconds.
  CUresult r = driver_.cuLaunchKernel(static_cast<CUfunction>(f), grid_x, 1, 1, block_x, 1, 1, shared_bytes,
                                      static_cast<CUstream>(stream), params, nullptr);
  if (r != CUDA_SUCCESS)
    driver_.check(r, "launching a kernel of " + std::to_string(grid_x) + "x" + std::to_string(block_x) + " threads on " + id());
}

void Gpu::launch_clustered(FunctionHandle f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, unsigned cluster,
                           StreamHandle stream, void** params) const {
  if (!driver_.clusters) throw CudaError("the CUDA driver launches no thread block clusters (cuLaunchKernelEx: CUDA 12)", CUDA_ERROR_NOT_FOUND);
  CUlaunchAttribute attribute;
  attribute.id = kLaunchAttributeClusterDimension;
  attribute.value.cluster_dim = {cluster, 1, 1};
  CUlaunchConfig config;
  config.grid_x = grid_x;
  config.block_x = block_x;
  config.shared_bytes = shared_bytes;
  config.stream = static_cast<CUstream>(stream);
  config.attrs = &attribute;
  config.attr_count = 1;
  CUresult r = driver_.cuLaunchKernelEx(&config, static_cast<CUfunction>(f), params, nullptr);
  if (r != CUDA_SUCCESS)
    driver_.check(r, "launching a kernel of " + std::to_string(grid_x) + "x" + std::to_string(block_x) + " threads in clusters of " +
                         std::to_string(cluster) + " blocks on " + id());
}

void Gpu::synchronize_all() const {
  bind();
  driver_.check(driver_.cuCtxSynchronize(), "waiting for the work queued on " + id());
}

// ------------------------------------------------------------ copies

void Gpu::copy_to_device(StreamHandle stream, Address dst, const void* src, size_t bytes) const {
  driver_.check(driver_.cuMemcpyHtoDAsync(dst, src, bytes, static_cast<CUstream>(stream)), "copying " + format_bytes(bytes) + " to " + id());
}

void Gpu::copy_to_host(StreamHandle stream, void* dst, Address src, size_t bytes) const {
  driver_.check(driver_.cuMemcpyDtoHAsync(dst, src, bytes, static_cast<CUstream>(stream)), "copying " + format_bytes(bytes) + " from " + id());
}

void Gpu::copy_on_device(StreamHandle stream, Address dst, Address src, size_t bytes) const {
  driver_.check(driver_.cuMemcpyDtoDAsync(dst, src, bytes, static_cast<CUstream>(stream)), "copying " + format_bytes(bytes) + " on " + id());
}

void Gpu::zero(StreamHandle stream, Address dst, size_t bytes) const {
  driver_.check(driver_.cuMemsetD8Async(dst, 0, bytes, static_cast<CUstream>(stream)), "zeroing memory on " + id());
}

std::shared_ptr<unsigned char> Gpu::allocate_pinned(size_t bytes) const {
  bind();
  void* p = nullptr;
  size_t allocated = std::max<size_t>(bytes, 1);
  CUresult r = driver_.cuMemHostAlloc(&p, allocated, kMemHostAllocPortable | kMemHostAllocDeviceMap);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw DataError("out of pinned host memory: asked for " + format_bytes(bytes) + " (" + id() + ")");
  driver_.check(r, "cuMemHostAlloc of " + format_bytes(bytes));
  std::memset(p, 0, bytes);
  const Driver* d = &driver_;
  CUdeviceptr address = 0;
  r = driver_.cuMemHostGetDevicePointer(&address, p, 0);
  if (r != CUDA_SUCCESS) d->cuMemFreeHost(p);
  driver_.check(r, "finding pinned host memory on " + id());
  // Forgotten by the table before the memory is freed.
  std::shared_ptr<void> adopted = mappings_->adopt(p, allocated, address);
  return std::shared_ptr<unsigned char>(static_cast<unsigned char*>(p), [d, adopted](unsigned char* q) mutable {
    adopted.reset();
    d->cuMemFreeHost(q);
  });
}

// ------------------------------------------------------------ streams and events

ModuleGpu::StreamHandle Gpu::create_stream() const {
  bind();
  CUstream s = nullptr;
  driver_.check(driver_.cuStreamCreate(&s, kStreamNonBlocking), "cuStreamCreate on " + id());
  return s;
}

void Gpu::destroy_stream(StreamHandle stream) const noexcept {
  if (stream) driver_.cuStreamDestroy(static_cast<CUstream>(stream));
}

void Gpu::synchronize_stream(StreamHandle stream) const {
  bind();
  driver_.check(driver_.cuStreamSynchronize(static_cast<CUstream>(stream)), "waiting for a stream of " + id());
}

ModuleGpu::EventHandle Gpu::create_event(bool timing) const {
  bind();
  CUevent e = nullptr;
  driver_.check(driver_.cuEventCreate(&e, timing ? kEventDefault : kEventDisableTiming), "cuEventCreate on " + id());
  return e;
}

void Gpu::destroy_event(EventHandle event) const noexcept {
  if (event) driver_.cuEventDestroy(static_cast<CUevent>(event));
}

void Gpu::record_event(EventHandle event, StreamHandle stream) const {
  driver_.check(driver_.cuEventRecord(static_cast<CUevent>(event), static_cast<CUstream>(stream)), "recording an event on " + id());
}

void Gpu::synchronize_event(EventHandle event) const {
  driver_.check(driver_.cuEventSynchronize(static_cast<CUevent>(event)), "waiting for an event on " + id());
}

bool Gpu::event_done(EventHandle event) const {
  CUresult r = driver_.cuEventQuery(static_cast<CUevent>(event));
  if (r == CUDA_ERROR_NOT_READY) return false;
  driver_.check(r, "querying an event on " + id());
  return true;
}

float Gpu::elapsed_ms(EventHandle start, EventHandle end) const {
  float ms = 0;
  driver_.check(driver_.cuEventElapsedTime(&ms, static_cast<CUevent>(start), static_cast<CUevent>(end)), "cuEventElapsedTime on " + id());
  return ms;
}

}  // namespace zyntax::cuda
