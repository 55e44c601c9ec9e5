#include "backends/rocm/rocm_gpu.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/tensor.hpp"

namespace zyntax::rocm {

namespace {

uint64_t read_le(const std::string_view bytes, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

// The pool's addresses and the interface's handles as HIP's types.
hipDeviceptr_t device_pointer(ModuleGpu::Address address) { return reinterpret_cast<hipDeviceptr_t>(address); }
hipStream_t hip_stream(ModuleGpu::StreamHandle stream) { return static_cast<hipStream_t>(stream); }
hipEvent_t hip_event(ModuleGpu::EventHandle event) { return static_cast<hipEvent_t>(event); }

}  // namespace

std::string code_object_target(std::string_view elf) {
  // ELF64 header: e_ident[16] (EI_CLASS 4, EI_ABIVERSION 8), e_machine @18, e_flags @48.
  constexpr int kElfClass64 = 2, kEmAmdgpu = 224, kAbiVersionV4 = 2;
  if (elf.size() < 64 || elf.substr(0, 4) != "\x7f" "ELF" || elf[4] != kElfClass64) return "";
  if (read_le(elf, 18, 2) != kEmAmdgpu) return "";
  auto flags = static_cast<uint32_t>(read_le(elf, 48, 4));
  // EF_AMDGPU_MACH (llvm/BinaryFormat/ELF.h): the architectures the code generator targets, and their neighbours.
  static const std::pair<unsigned, const char*> kMachines[] = {
      {0x02c, "gfx900"},  {0x02f, "gfx906"},  {0x030, "gfx908"},  {0x03f, "gfx90a"},  {0x040, "gfx940"},
      {0x04b, "gfx941"},  {0x04c, "gfx942"},  {0x036, "gfx1030"}, {0x041, "gfx1100"}, {0x046, "gfx1101"},
      {0x047, "gfx1102"}, {0x048, "gfx1200"}, {0x04e, "gfx1201"}, {0x051, "gfx9-generic"},
      {0x054, "gfx11-generic"}, {0x059, "gfx12-generic"},
  };
  std::string name;
  for (const auto& [mach, n] : kMachines)
    if ((flags & 0xff) == mach) name = n;
  if (name.empty()) return "";
  // Code object v4 and later: sramecc and xnack each on, off or either (then unnamed).
  if (static_cast<unsigned char>(elf[8]) >= kAbiVersionV4) {
    unsigned sramecc = flags & 0xc00, xnack = flags & 0x300;
    if (sramecc == 0xc00 || sramecc == 0x800) name += sramecc == 0xc00 ? ":sramecc+" : ":sramecc-";
    if (xnack == 0x300 || xnack == 0x200) name += xnack == 0x300 ? ":xnack+" : ":xnack-";
  }
  return name;
}

std::vector<std::unique_ptr<Gpu>> Gpu::open_all() {
  const Hip* h = Hip::get();
  if (!h) return {};
  return open_all(*h);
}

std::vector<std::unique_ptr<Gpu>> Gpu::open_all(const Hip& hip) {
  std::vector<std::unique_ptr<Gpu>> gpus;
  int n = 0;
  if (hip.hipGetDeviceCount(&n) != hipSuccess) return gpus;
  for (int i = 0; i < n; ++i) gpus.push_back(std::make_unique<Gpu>(hip, i));
  return gpus;
}

Gpu::Gpu(const Hip& hip, int ordinal) : hip_(hip) {
  const Hip& h = hip_;
  props_.ordinal = ordinal;
  std::string at = " (" + id() + ")";
  h.check(h.hipDeviceGet(&device_, ordinal), "hipDeviceGet" + at);
  char name[256] = {};
  h.check(h.hipDeviceGetName(name, sizeof name - 1, device_), "hipDeviceGetName" + at);
  props_.name = name;
  size_t total = 0;
  h.check(h.hipDeviceTotalMem(&total, device_), "hipDeviceTotalMem" + at);
  props_.memory_bytes = total;
  auto attribute = [&](DeviceAttribute a) {
    int v = 0;
    h.check(h.hipDeviceGetAttribute(&v, a, ordinal), "hipDeviceGetAttribute(" + std::to_string(a) + ")" + at);
    return v;
  };
  props_.major = attribute(kComputeCapabilityMajor);
  props_.minor = attribute(kComputeCapabilityMinor);
  props_.compute_units = attribute(kMultiprocessorCount);
  props_.max_threads_per_block = attribute(kMaxThreadsPerBlock);
  props_.wave_size = attribute(kWarpSize);
  props_.clock_khz = attribute(kClockRateKhz);
  props_.memory_clock_khz = attribute(kMemoryClockRateKhz);
  props_.memory_bus_bits = attribute(kGlobalMemoryBusWidth);
  props_.l2_bytes = attribute(kL2CacheSize);
  props_.shared_per_block = attribute(kMaxSharedMemoryPerBlock);
  props_.shared_per_compute_unit = attribute(kMaxSharedMemoryPerMultiprocessor);
  props_.can_map_host_memory = attribute(kCanMapHostMemory) != 0;
  props_.unified_addressing = attribute(kUnifiedAddressing) != 0;
  props_.managed_memory = attribute(kManagedMemory) != 0;
  std::string arch_name = h.arch_name(ordinal);
  std::optional<GfxArch> arch = parse_gfx_arch(arch_name);
  if (!arch)
    throw HipError("the HIP runtime names the architecture of " + id() + " (" + props_.name + ") '" + arch_name +
                       "', not an AMD GPU architecture (gfx...)",
                   hipErrorUnknown);
  props_.arch = arch->name;
  props_.arch_features = arch->features;

  bind();
  h.check(h.hipStreamCreateWithFlags(&stream_, kStreamNonBlocking), "hipStreamCreateWithFlags" + at);
  std::string id = this->id();
  pool_ = std::make_unique<SizeClassPool>(
      id,
      [this](size_t bytes) -> uint64_t {
        void* p = nullptr;
        bind();  // hipMalloc allocates on the calling thread's device
        hipError_t r = hip_.hipMalloc(&p, bytes);
        if (r == hipErrorOutOfMemory) return 0;
        hip_.check(r, "hipMalloc of " + format_bytes(bytes) + " on " + this->id());
        return reinterpret_cast<Address>(p);
      },
      // hipFree finds the device from the address (unified addressing), whichever is current.
      [this](uint64_t p) { hip_.hipFree(device_pointer(p)); });
  // Registered for every device, and unregistered on this GPU on whichever
  // thread lets go of the last view.
  mappings_ = std::make_unique<HostMappings>(
      [this](void* data, size_t bytes) -> uint64_t {
        bind();
        hip_.check(hip_.hipHostRegister(data, bytes, kHostRegisterPortable | kHostRegisterMapped),
                   "mapping " + format_bytes(bytes) + " of host memory for " + this->id());
        void* address = nullptr;
        hipError_t r = hip_.hipHostGetDevicePointer(&address, data, 0);
        if (r != hipSuccess) hip_.hipHostUnregister(data);
        hip_.check(r, "finding mapped host memory on " + this->id());
        return reinterpret_cast<Address>(address);
      },
      [&h = hip_, ordinal](void* data) {
        h.hipSetDevice(ordinal);
        h.hipHostUnregister(data);
      });
}

Gpu::~Gpu() {
  bind();
  mappings_.reset();
  pool_.reset();
  if (stream_) hip_.hipStreamDestroy(stream_);
}

void Gpu::bind() const {
  if (hipError_t r = hip_.hipSetDevice(props_.ordinal); r != hipSuccess) hip_.check(r, "hipSetDevice (" + id() + ")");
}

void Gpu::synchronize() const {
  bind();
  if (hipError_t r = hip_.hipStreamSynchronize(stream_); r != hipSuccess) hip_.check(r, "waiting for " + id());
}

void Gpu::synchronize_all() const {
  bind();
  if (hipError_t r = hip_.hipDeviceSynchronize(); r != hipSuccess) hip_.check(r, "waiting for all work on " + id());
}

hipModule_t Gpu::load_module(const std::string& code_object) const {
  bind();
  hipModule_t m = nullptr;
  hipError_t r = hip_.hipModuleLoadData(&m, code_object.data());
  if (r != hipSuccess) {
    // The usual cause: a code object for another architecture, or not a code object at all.
    std::string target = code_object_target(code_object);
    std::string what = !target.empty()                           ? "; the code object is for " + target
                       : code_object.compare(0, 4, "\x7f" "ELF") ? "; the code object is not an ELF file"
                                                                 : "";
    throw HipError("loading a code object (" + format_bytes(code_object.size()) + ") on " + id() + " (" +
                       props_.name + ", " + props_.arch_name() + ") failed: " + hip_.error_text(r) + what,
                   r);
  }
  return m;
}

void Gpu::unload_module(hipModule_t module) const {
  bind();
  hip_.check(hip_.hipModuleUnload(module), "unloading a module on " + id());
}

hipFunction_t Gpu::function(hipModule_t module, const std::string& name) const {
  bind();
  hipFunction_t f = nullptr;
  hip_.check(hip_.hipModuleGetFunction(&f, module, name.c_str()),
             "finding kernel " + name + " in its module on " + id());
  return f;
}

void Gpu::allow_dynamic_shared(hipFunction_t, unsigned bytes) const {
  if (bytes > static_cast<unsigned>(props_.shared_per_block))
    throw HipError("a kernel cannot have " + std::to_string(bytes) + " bytes of shared memory on " + id() + " (" +
                       props_.arch + " has " + std::to_string(props_.shared_per_block) + " per block)",
                   hipErrorInvalidValue);
}

void Gpu::launch(FunctionHandle f, unsigned grid_x, unsigned block_x, unsigned shared_bytes, StreamHandle stream,
                 void** params) const {
  // The message is made only for an error: a launch costs a few microseconds.
  hipError_t r = hip_.hipModuleLaunchKernel(static_cast<hipFunction_t>(f), grid_x, 1, 1, block_x, 1, 1, shared_bytes,
                                            hip_stream(stream), params, nullptr);
  if (r != hipSuccess)
    hip_.check(r, "launching a kernel of " + std::to_string(grid_x) + "x" + std::to_string(block_x) + " threads (" +
                      std::to_string(shared_bytes) + " bytes of shared memory) on " + id());
}

// ------------------------------------------------------------ copies

void Gpu::copy_to_device(StreamHandle stream, Address dst, const void* src, size_t bytes) const {
  hip_.check(hip_.hipMemcpyHtoDAsync(device_pointer(dst), src, bytes, hip_stream(stream)),
             "copying " + format_bytes(bytes) + " to " + id());
}

void Gpu::copy_to_host(StreamHandle stream, void* dst, Address src, size_t bytes) const {
  hip_.check(hip_.hipMemcpyDtoHAsync(dst, device_pointer(src), bytes, hip_stream(stream)),
             "copying " + format_bytes(bytes) + " from " + id());
}

void Gpu::copy_on_device(StreamHandle stream, Address dst, Address src, size_t bytes) const {
  hip_.check(hip_.hipMemcpyDtoDAsync(device_pointer(dst), device_pointer(src), bytes, hip_stream(stream)),
             "copying " + format_bytes(bytes) + " on " + id());
}

void Gpu::zero(StreamHandle stream, Address dst, size_t bytes) const {
  hip_.check(hip_.hipMemsetD8Async(device_pointer(dst), 0, bytes, hip_stream(stream)), "zeroing memory on " + id());
}

std::shared_ptr<unsigned char> Gpu::allocate_pinned(size_t bytes) const {
  bind();
  void* p = nullptr;
  size_t allocated = std::max<size_t>(bytes, 1);
  hipError_t r = hip_.hipHostMalloc(&p, allocated, kHostMallocPortable | kHostMallocMapped);
  if (r == hipErrorOutOfMemory)
    throw DataError("out of pinned host memory: asked for " + format_bytes(bytes) + " (" + id() + ")");
  hip_.check(r, "hipHostMalloc of " + format_bytes(bytes) + " for " + id());
  std::memset(p, 0, bytes);
  const Hip* h = &hip_;
  void* address = nullptr;
  r = hip_.hipHostGetDevicePointer(&address, p, 0);
  if (r != hipSuccess) h->hipHostFree(p);
  hip_.check(r, "finding pinned host memory on " + id());
  // Forgotten by the table before the memory is freed.
  std::shared_ptr<void> adopted = mappings_->adopt(p, allocated, reinterpret_cast<Address>(address));
  return std::shared_ptr<unsigned char>(static_cast<unsigned char*>(p), [h, adopted](unsigned char* q) mutable {
    adopted.reset();
    h->hipHostFree(q);
  });
}

// ------------------------------------------------------------ streams and events

ModuleGpu::StreamHandle Gpu::create_stream() const {
  bind();
  hipStream_t s = nullptr;
  hip_.check(hip_.hipStreamCreateWithFlags(&s, kStreamNonBlocking), "creating a stream on " + id());
  return s;
}

void Gpu::destroy_stream(StreamHandle stream) const noexcept {
  if (stream) hip_.hipStreamDestroy(hip_stream(stream));
}

void Gpu::synchronize_stream(StreamHandle stream) const {
  bind();
  hip_.check(hip_.hipStreamSynchronize(hip_stream(stream)), "waiting for a stream of " + id());
}

ModuleGpu::EventHandle Gpu::create_event(bool timing) const {
  bind();
  hipEvent_t e = nullptr;
  hip_.check(hip_.hipEventCreateWithFlags(&e, timing ? kEventDefault : kEventDisableTiming),
             "creating an event on " + id());
  return e;
}

void Gpu::destroy_event(EventHandle event) const noexcept {
  if (event) hip_.hipEventDestroy(hip_event(event));
}

void Gpu::record_event(EventHandle event, StreamHandle stream) const {
  hip_.check(hip_.hipEventRecord(hip_event(event), hip_stream(stream)), "recording an event on " + id());
}

void Gpu::synchronize_event(EventHandle event) const {
  hip_.check(hip_.hipEventSynchronize(hip_event(event)), "waiting for an event on " + id());
}

bool Gpu::event_done(EventHandle event) const {
  hipError_t r = hip_.hipEventQuery(hip_event(event));
  if (r == hipErrorNotReady) return false;
  hip_.check(r, "querying an event on " + id());
  return true;
}

float Gpu::elapsed_ms(EventHandle start, EventHandle end) const {
  float ms = 0;
  hip_.check(hip_.hipEventElapsedTime(&ms, hip_event(start), hip_event(end)), "timing events on " + id());
  return ms;
}

}  // namespace zyntax::rocm
