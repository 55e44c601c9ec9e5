// A HIP runtime for tests (libzyntax_fake_hip.so): every entry point the
// rocm backend resolves, exported under HIP's names with HIP's ABI, over
// host memory. Device memory is aligned host memory and copies are memcpy
// (device addresses are checked against live allocations), streams and
// events complete at once, modules are recorded images (any ELF file),
// functions are names found in their module's bytes, and launches are
// recorded with their arguments' bytes (fake_hip.h says how a test reads
// them). The device is described by fixed values or the environment.
//
// Declared here from HIP's headers, not the backend's, so that the backend's
// numbers are checked against a second reading: the attribute numbers of
// hipDeviceAttribute_t and the two hipDeviceProp_t layouts are as in
// ROCm/HIP include/hip/hip_runtime_api.h and hip/hip_deprecated.h.
#include "fake_hip.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using hipError_t = int;
constexpr hipError_t hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorOutOfMemory = 2, hipErrorNoDevice = 100,
                     hipErrorInvalidDevice = 101, hipErrorInvalidImage = 200, hipErrorInvalidHandle = 400,
                     hipErrorNotFound = 500, hipErrorHostMemoryAlreadyRegistered = 712,
                     hipErrorHostMemoryNotRegistered = 713, hipErrorInvalidSymbol = 13;

// hipDeviceAttribute_t: the CUDA-compatible attributes alphabetically from 0, AMD's from 10000.
enum hipDeviceAttribute_t {
  hipDeviceAttributeCanMapHostMemory = 3,
  hipDeviceAttributeClockRate = 5,
  hipDeviceAttributeL2CacheSize = 19,
  hipDeviceAttributeComputeCapabilityMajor = 23,
  hipDeviceAttributeManagedMemory = 24,
  hipDeviceAttributeMaxThreadsPerBlock = 56,
  hipDeviceAttributeMemoryBusWidth = 59,
  hipDeviceAttributeMemoryClockRate = 60,
  hipDeviceAttributeComputeCapabilityMinor = 61,
  hipDeviceAttributeMultiprocessorCount = 63,
  hipDeviceAttributeMaxSharedMemoryPerBlock = 74,
  hipDeviceAttributeSharedMemPerBlockOptin = 75,
  hipDeviceAttributeUnifiedAddressing = 85,
  hipDeviceAttributeWarpSize = 87,
  hipDeviceAttributeMaxSharedMemoryPerMultiprocessor = 10002,
};

struct hipDeviceArch_t {
  unsigned bits : 17;  // hasGlobalInt32Atomics ... hasDynamicParallelism
};
struct hipUUID {
  char bytes[16];
};

// hipDeviceProp_tR0600 (HIP 6.0 on).
struct hipDeviceProp_tR0600 {
  char name[256];
  hipUUID uuid;
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize;
  size_t memPitch;
  int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
  size_t totalConstMem;
  int major, minor;
  size_t textureAlignment, texturePitchAlignment;
  int deviceOverlap, multiProcessorCount, kernelExecTimeoutEnabled, integrated, canMapHostMemory, computeMode;
  int maxTexture1D, maxTexture1DMipmap, maxTexture1DLinear, maxTexture2D[2], maxTexture2DMipmap[2];
  int maxTexture2DLinear[3], maxTexture2DGather[2], maxTexture3D[3], maxTexture3DAlt[3], maxTextureCubemap;
  int maxTexture1DLayered[2], maxTexture2DLayered[3], maxTextureCubemapLayered[2], maxSurface1D, maxSurface2D[2];
  int maxSurface3D[3], maxSurface1DLayered[2], maxSurface2DLayered[3], maxSurfaceCubemap, maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver, asyncEngineCount;
  int unifiedAddressing, memoryClockRate, memoryBusWidth, l2CacheSize, persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor, streamPrioritiesSupported, globalL1CacheSupported, localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID, hostNativeAtomicSupported;
  int singleToDoublePrecisionPerfRatio, pageableMemoryAccess, concurrentManagedAccess, computePreemptionSupported;
  int canUseHostPointerForRegisteredMem, cooperativeLaunch, cooperativeMultiDeviceLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables, directManagedMemAccessFromHost, maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported, sparseHipArraySupported, hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported, memoryPoolsSupported, gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingHipArraySupported, ipcEventSupported, clusterLaunch, unifiedFunctionPointers;
  int reserved[63];
  int hipReserved[32];
  char gcnArchName[256];
  size_t maxSharedMemoryPerMultiProcessor;
  int clockInstructionRate;
  hipDeviceArch_t arch;
  unsigned int *hdpMemFlushCntl, *hdpRegFlushCntl;
  int cooperativeMultiDeviceUnmatchedFunc, cooperativeMultiDeviceUnmatchedGridDim;
  int cooperativeMultiDeviceUnmatchedBlockDim, cooperativeMultiDeviceUnmatchedSharedMem, isLargeBar, asicRevision;
};

// hipDeviceProp_tR0000 (HIP 5's hipDeviceProp_t; hipGetDeviceProperties in every release).
struct hipDeviceProp_tR0000 {
  char name[256];
  size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate, memoryClockRate;
  int memoryBusWidth;
  size_t totalConstMem;
  int major, minor, multiProcessorCount, l2CacheSize, maxThreadsPerMultiProcessor, computeMode;
  int clockInstructionRate;
  hipDeviceArch_t arch;
  int concurrentKernels, pciDomainID, pciBusID, pciDeviceID;
  size_t maxSharedMemoryPerMultiProcessor;
  int isMultiGpuBoard, canMapHostMemory, gcnArch;
  char gcnArchName[256];
  int integrated, cooperativeLaunch, cooperativeMultiDeviceLaunch, maxTexture1DLinear, maxTexture1D;
  int maxTexture2D[2], maxTexture3D[3];
  unsigned int *hdpMemFlushCntl, *hdpRegFlushCntl;
  size_t memPitch, textureAlignment, texturePitchAlignment;
  int kernelExecTimeoutEnabled, ECCEnabled, tccDriver, cooperativeMultiDeviceUnmatchedFunc;
  int cooperativeMultiDeviceUnmatchedGridDim, cooperativeMultiDeviceUnmatchedBlockDim;
  int cooperativeMultiDeviceUnmatchedSharedMem, isLargeBar, asicRevision, managedMemory;
  int directManagedMemAccessFromHost, concurrentManagedAccess, pageableMemoryAccess;
  int pageableMemoryAccessUsesHostPageTables;
};

// The layouts' sizes on x86-64 (a mistake in the lists above would move gcnArchName).
static_assert(sizeof(hipDeviceProp_tR0600) == 1472 && sizeof(hipDeviceProp_tR0000) == 792);

// An MI210, unless the environment says otherwise.
constexpr size_t kMemoryBytes = size_t{64} << 30;
constexpr int kSharedPerBlock = 65536;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
std::string env_string(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
int device_count() { return env_int("ZYNTAX_FAKE_HIP_DEVICES", 1); }
std::string arch_name() { return env_string("ZYNTAX_FAKE_HIP_ARCH", "gfx90a:sramecc+:xnack-"); }
std::string device_name() { return env_string("ZYNTAX_FAKE_HIP_NAME", "AMD Instinct MI210"); }

struct Module {
  std::vector<unsigned char> image;
  int index = 0;
};
struct Function {
  Module* module = nullptr;
  std::string name;
};
struct Launch {
  ZyntaxFakeHipLaunch info{};
  std::string kernel;
  std::vector<std::vector<unsigned char>> args;
};
struct Stream {
  unsigned flags = 0;
};
struct Event {
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point at;
};

struct State {
  std::mutex mu;
  std::map<uintptr_t, std::pair<size_t, int>> device;  // hipMalloc: address → (bytes, device)
  std::map<uintptr_t, size_t> pinned;                  // hipHostMalloc
  std::map<uintptr_t, size_t> registered;              // hipHostRegister
  size_t device_bytes = 0, pinned_bytes = 0;
  size_t device_limit = SIZE_MAX, host_limit = SIZE_MAX;
  std::vector<Module*> modules;  // since the reset
  int modules_unloaded = 0;
  std::vector<Function*> functions;
  // Every module and function made, kept until exit: handles stay valid after a reset.
  std::vector<std::unique_ptr<Module>> all_modules;
  std::vector<std::unique_ptr<Function>> all_functions;
  std::vector<Launch> launches;
  std::vector<size_t> arg_sizes;
  int streams = 0, events = 0;
};

State& state() {
  static State* s = new State();  // never destroyed: the library is never unloaded
  return *s;
}

thread_local int current_device = 0;

bool valid_device(int d) { return d >= 0 && d < device_count(); }

// Whether [p, p + bytes) lies in one range of `ranges` (address → bytes).
template <class Map, class Bytes>
bool inside(const Map& ranges, uintptr_t p, size_t bytes, Bytes bytes_of) {
  auto it = ranges.upper_bound(p);
  if (it == ranges.begin()) return false;
  --it;
  return p + bytes <= it->first + bytes_of(it->second);
}

// Device addresses: hipMalloc's, or host memory mapped for the GPU (the same address).
bool device_range(const State& s, const void* p, size_t bytes) {
  auto a = reinterpret_cast<uintptr_t>(p);
  return inside(s.device, a, bytes, [](const std::pair<size_t, int>& v) { return v.first; }) ||
         inside(s.pinned, a, bytes, [](size_t v) { return v; }) ||
         inside(s.registered, a, bytes, [](size_t v) { return v; });
}

void* aligned(size_t bytes) { return std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256); }

// An ELF image's extent by its header: the furthest of its header and tables.
size_t elf_size(const unsigned char* p) {
  auto u = [p](size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{p[at + i]} << (8 * i);
    return v;
  };
  uint64_t end = 64;
  end = std::max<uint64_t>(end, u(32, 8) + u(54, 2) * u(56, 2));  // program headers
  end = std::max<uint64_t>(end, u(40, 8) + u(58, 2) * u(60, 2));  // section headers
  return end;
}

}  // namespace

#define FAKE_HIP extern "C" __attribute__((visibility("default")))

// ------------------------------------------------------------ the runtime

FAKE_HIP hipError_t hipInit(unsigned flags) {
  if (flags != 0) return hipErrorInvalidValue;
  if (int e = env_int("ZYNTAX_FAKE_HIP_INIT_ERROR", 0)) return e;
  return device_count() > 0 ? hipSuccess : hipErrorNoDevice;
}

#ifdef ZYNTAX_FAKE_HIP_ROCM5
constexpr int kVersion = 50731921;  // HIP 5.7.31921
#else
constexpr int kVersion = 60241134;  // HIP 6.2.41134
#endif

FAKE_HIP hipError_t hipRuntimeGetVersion(int* v) {
  if (!v) return hipErrorInvalidValue;
  *v = env_int("ZYNTAX_FAKE_HIP_VERSION", kVersion);
  return hipSuccess;
}

FAKE_HIP hipError_t hipDriverGetVersion(int* v) { return hipRuntimeGetVersion(v); }

FAKE_HIP const char* hipGetErrorName(hipError_t e) {
  switch (e) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorInvalidSymbol: return "hipErrorInvalidSymbol";
    case hipErrorNoDevice: return "hipErrorNoDevice";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    case hipErrorInvalidImage: return "hipErrorInvalidImage";
    case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
    case hipErrorNotFound: return "hipErrorNotFound";
    case hipErrorHostMemoryAlreadyRegistered: return "hipErrorHostMemoryAlreadyRegistered";
    case hipErrorHostMemoryNotRegistered: return "hipErrorHostMemoryNotRegistered";
    default: return "hipErrorUnknown";
  }
}

FAKE_HIP const char* hipGetErrorString(hipError_t e) {
  switch (e) {
    case hipSuccess: return "no error";
    case hipErrorInvalidValue: return "invalid argument";
    case hipErrorOutOfMemory: return "out of memory";
    case hipErrorInvalidSymbol: return "invalid device symbol";
    case hipErrorNoDevice: return "no ROCm-capable device is detected";
    case hipErrorInvalidDevice: return "invalid device ordinal";
    case hipErrorInvalidImage: return "device kernel image is invalid";
    case hipErrorInvalidHandle: return "invalid resource handle";
    case hipErrorNotFound: return "named symbol not found";
    case hipErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
    case hipErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
    default: return "unknown error";
  }
}

FAKE_HIP hipError_t hipGetDeviceCount(int* n) {
  if (!n) return hipErrorInvalidValue;
  *n = device_count();
  return *n > 0 ? hipSuccess : hipErrorNoDevice;
}

FAKE_HIP hipError_t hipSetDevice(int d) {
  if (!valid_device(d)) return hipErrorInvalidDevice;
  current_device = d;
  return hipSuccess;
}

FAKE_HIP hipError_t hipDeviceGet(int* device, int ordinal) {
  if (!device) return hipErrorInvalidValue;
  if (!valid_device(ordinal)) return hipErrorInvalidDevice;
  *device = ordinal;
  return hipSuccess;
}

FAKE_HIP hipError_t hipDeviceGetName(char* name, int len, int d) {
  if (!name || len <= 0) return hipErrorInvalidValue;
  if (!valid_device(d)) return hipErrorInvalidDevice;
  std::string n = device_name();
  std::snprintf(name, static_cast<size_t>(len), "%s", n.c_str());
  return hipSuccess;
}

FAKE_HIP hipError_t hipDeviceTotalMem(size_t* bytes, int d) {
  if (!bytes) return hipErrorInvalidValue;
  if (!valid_device(d)) return hipErrorInvalidDevice;
  *bytes = kMemoryBytes;
  return hipSuccess;
}

FAKE_HIP hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t attr, int d) {
  if (!v) return hipErrorInvalidValue;
  if (!valid_device(d)) return hipErrorInvalidDevice;
  switch (attr) {
    case hipDeviceAttributeCanMapHostMemory: *v = 1; break;
    case hipDeviceAttributeClockRate: *v = 1700000; break;
    case hipDeviceAttributeL2CacheSize: *v = 8 << 20; break;
    case hipDeviceAttributeComputeCapabilityMajor: *v = 9; break;
    case hipDeviceAttributeManagedMemory: *v = 1; break;
    case hipDeviceAttributeMaxThreadsPerBlock: *v = 1024; break;
    case hipDeviceAttributeMemoryBusWidth: *v = 4096; break;
    case hipDeviceAttributeMemoryClockRate: *v = 1600000; break;
    case hipDeviceAttributeComputeCapabilityMinor: *v = 0; break;
    case hipDeviceAttributeMultiprocessorCount: *v = env_int("ZYNTAX_FAKE_HIP_COMPUTE_UNITS", 104); break;
    case hipDeviceAttributeMaxSharedMemoryPerBlock: *v = kSharedPerBlock; break;
    case hipDeviceAttributeSharedMemPerBlockOptin: *v = kSharedPerBlock; break;
    case hipDeviceAttributeUnifiedAddressing: *v = 1; break;
    case hipDeviceAttributeWarpSize: *v = env_int("ZYNTAX_FAKE_HIP_WAVE_SIZE", 64); break;
    case hipDeviceAttributeMaxSharedMemoryPerMultiprocessor: *v = kSharedPerBlock; break;
    default: return hipErrorInvalidValue;
  }
  return hipSuccess;
}

template <class Props>
hipError_t fill_properties(Props* p, int d) {
  if (!p) return hipErrorInvalidValue;
  if (!valid_device(d)) return hipErrorInvalidDevice;
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "%s", device_name().c_str());
  std::snprintf(p->gcnArchName, sizeof p->gcnArchName, "%s", arch_name().c_str());
  p->totalGlobalMem = kMemoryBytes;
  p->warpSize = env_int("ZYNTAX_FAKE_HIP_WAVE_SIZE", 64);
  p->multiProcessorCount = env_int("ZYNTAX_FAKE_HIP_COMPUTE_UNITS", 104);
  p->maxThreadsPerBlock = 1024;
  p->major = 9;
  return hipSuccess;
}

#ifndef ZYNTAX_FAKE_HIP_ROCM5
FAKE_HIP hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600* p, int d) { return fill_properties(p, d); }
#endif
FAKE_HIP hipError_t hipGetDeviceProperties(hipDeviceProp_tR0000* p, int d) { return fill_properties(p, d); }

FAKE_HIP hipError_t hipDeviceSynchronize() { return hipSuccess; }

FAKE_HIP hipError_t hipMemGetInfo(size_t* free, size_t* total) {
  if (!free || !total) return hipErrorInvalidValue;
  std::lock_guard<std::mutex> lock(state().mu);
  *total = kMemoryBytes;
  *free = kMemoryBytes - std::min(kMemoryBytes, state().device_bytes);
  return hipSuccess;
}

FAKE_HIP hipError_t hipMalloc(void** p, size_t bytes) {
  if (!p) return hipErrorInvalidValue;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (bytes > s.device_limit || s.device_bytes > s.device_limit - bytes) return hipErrorOutOfMemory;
  void* q = aligned(bytes);
  if (!q) return hipErrorOutOfMemory;
  s.device[reinterpret_cast<uintptr_t>(q)] = {bytes, current_device};
  s.device_bytes += bytes;
  *p = q;
  return hipSuccess;
}

FAKE_HIP hipError_t hipFree(void* p) {
  if (!p) return hipSuccess;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.device.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.device.end()) return hipErrorInvalidValue;
  s.device_bytes -= it->second.first;
  s.device.erase(it);
  std::free(p);
  return hipSuccess;
}

FAKE_HIP hipError_t hipHostMalloc(void** p, size_t bytes, unsigned flags) {
  if (!p || (flags & ~0xfu)) return hipErrorInvalidValue;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (bytes > s.host_limit || s.pinned_bytes > s.host_limit - bytes) return hipErrorOutOfMemory;
  void* q = aligned(bytes);
  if (!q) return hipErrorOutOfMemory;
  s.pinned[reinterpret_cast<uintptr_t>(q)] = bytes;
  s.pinned_bytes += bytes;
  *p = q;
  return hipSuccess;
}

FAKE_HIP hipError_t hipHostFree(void* p) {
  if (!p) return hipSuccess;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pinned.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.pinned.end()) return hipErrorInvalidValue;
  s.pinned_bytes -= it->second;
  s.pinned.erase(it);
  std::free(p);
  return hipSuccess;
}

FAKE_HIP hipError_t hipHostRegister(void* p, size_t bytes, unsigned flags) {
  if (!p || bytes == 0 || (flags & ~0xfu)) return hipErrorInvalidValue;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto a = reinterpret_cast<uintptr_t>(p);
  // Overlapping a registered range, like the real runtime.
  auto next = s.registered.lower_bound(a);
  if (next != s.registered.end() && next->first < a + bytes) return hipErrorHostMemoryAlreadyRegistered;
  if (next != s.registered.begin() && std::prev(next)->first + std::prev(next)->second > a)
    return hipErrorHostMemoryAlreadyRegistered;
  s.registered[a] = bytes;
  return hipSuccess;
}

FAKE_HIP hipError_t hipHostUnregister(void* p) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.registered.erase(reinterpret_cast<uintptr_t>(p)) == 0) return hipErrorHostMemoryNotRegistered;
  return hipSuccess;
}

FAKE_HIP hipError_t hipHostGetDevicePointer(void** device, void* host, unsigned flags) {
  if (!device || !host || flags != 0) return hipErrorInvalidValue;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto a = reinterpret_cast<uintptr_t>(host);
  if (!inside(s.pinned, a, 1, [](size_t v) { return v; }) && !inside(s.registered, a, 1, [](size_t v) { return v; }))
    return hipErrorInvalidValue;
  *device = host;  // one address space, as on AMD GPUs with large BARs
  return hipSuccess;
}

// Copies: device ranges must lie in live device memory (or mapped host memory).
FAKE_HIP hipError_t hipMemcpyHtoD(void* dst, void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!src || !device_range(state(), dst, bytes)) return hipErrorInvalidValue;
  std::memcpy(dst, src, bytes);
  return hipSuccess;
}

FAKE_HIP hipError_t hipMemcpyDtoH(void* dst, void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!dst || !device_range(state(), src, bytes)) return hipErrorInvalidValue;
  std::memcpy(dst, src, bytes);
  return hipSuccess;
}

FAKE_HIP hipError_t hipMemcpyDtoD(void* dst, void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!device_range(state(), dst, bytes) || !device_range(state(), src, bytes)) return hipErrorInvalidValue;
  std::memmove(dst, src, bytes);
  return hipSuccess;
}

// Streams run at once: the asynchronous copies are the synchronous ones.
FAKE_HIP hipError_t hipMemcpyHtoDAsync(void* dst, void* src, size_t bytes, void*) {
  return hipMemcpyHtoD(dst, src, bytes);
}
FAKE_HIP hipError_t hipMemcpyDtoHAsync(void* dst, void* src, size_t bytes, void*) {
  return hipMemcpyDtoH(dst, src, bytes);
}
FAKE_HIP hipError_t hipMemcpyDtoDAsync(void* dst, void* src, size_t bytes, void*) {
  return hipMemcpyDtoD(dst, src, bytes);
}

FAKE_HIP hipError_t hipMemsetD8Async(void* dst, unsigned char value, size_t bytes, void*) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!device_range(state(), dst, bytes)) return hipErrorInvalidValue;
  std::memset(dst, value, bytes);
  return hipSuccess;
}

FAKE_HIP hipError_t hipModuleLoadData(Module** module, const void* image) {
  if (!module || !image) return hipErrorInvalidValue;
  auto* p = static_cast<const unsigned char*>(image);
  // An ELF64 file (a code object); the real runtime also takes offload bundles.
  if (std::memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2) return hipErrorInvalidImage;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  Module* m = s.all_modules.emplace_back(std::make_unique<Module>()).get();
  m->image.assign(p, p + elf_size(p));
  m->index = static_cast<int>(s.modules.size());
  s.modules.push_back(m);
  *module = m;
  return hipSuccess;
}

FAKE_HIP hipError_t hipModuleUnload(Module* module) {
  if (!module) return hipErrorInvalidHandle;
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().modules_unloaded;
  return hipSuccess;
}

FAKE_HIP hipError_t hipModuleGetFunction(Function** f, Module* module, const char* name) {
  if (!f || !module || !name) return hipErrorInvalidValue;
  // The name as a string of the image (in a code object, of its symbol table).
  std::string needle = std::string(name) + '\0';
  const std::vector<unsigned char>& image = module->image;
  auto at = image.begin();
  while ((at = std::search(at, image.end(), needle.begin(), needle.end())) != image.end()) {
    if (at == image.begin() || *(at - 1) == '\0') break;
    ++at;
  }
  if (at == image.end()) return hipErrorNotFound;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  Function* fn = s.all_functions.emplace_back(std::make_unique<Function>(Function{module, name})).get();
  s.functions.push_back(fn);
  *f = fn;
  return hipSuccess;
}

FAKE_HIP hipError_t hipFuncSetAttribute(const void*, int, int) { return hipErrorInvalidSymbol; }

FAKE_HIP hipError_t hipModuleLaunchKernel(Function* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                          unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  if (!f || extra) return hipErrorInvalidValue;
  if (!gx || !gy || !gz || !bx || !by || !bz || uint64_t{bx} * by * bz > 1024) return hipErrorInvalidValue;
  if (shared > kSharedPerBlock) return hipErrorInvalidValue;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.arg_sizes.empty() && !params) return hipErrorInvalidValue;
  Launch l;
  l.kernel = f->name;
  l.info.module = f->module->index;
  l.info.device = current_device;
  l.info.grid[0] = gx, l.info.grid[1] = gy, l.info.grid[2] = gz;
  l.info.block[0] = bx, l.info.block[1] = by, l.info.block[2] = bz;
  l.info.shared_bytes = shared;
  l.info.stream = stream;
  for (size_t i = 0; i < s.arg_sizes.size(); ++i) {
    auto* a = static_cast<const unsigned char*>(params[i]);
    l.args.emplace_back(a, a + s.arg_sizes[i]);
  }
  l.info.arg_count = static_cast<int>(l.args.size());
  s.launches.push_back(std::move(l));
  return hipSuccess;
}

FAKE_HIP hipError_t hipStreamCreateWithFlags(Stream** stream, unsigned flags) {
  if (!stream || flags > 1) return hipErrorInvalidValue;
  std::lock_guard<std::mutex> lock(state().mu);
  *stream = new Stream{flags};
  ++state().streams;
  return hipSuccess;
}

FAKE_HIP hipError_t hipStreamDestroy(Stream* stream) {
  if (!stream) return hipErrorInvalidHandle;
  std::lock_guard<std::mutex> lock(state().mu);
  delete stream;
  --state().streams;
  return hipSuccess;
}

FAKE_HIP hipError_t hipStreamSynchronize(Stream*) { return hipSuccess; }

FAKE_HIP hipError_t hipStreamWaitEvent(Stream*, Event* event, unsigned flags) {
  return event && flags == 0 ? hipSuccess : hipErrorInvalidValue;
}

FAKE_HIP hipError_t hipEventCreateWithFlags(Event** event, unsigned flags) {
  if (!event) return hipErrorInvalidValue;
  std::lock_guard<std::mutex> lock(state().mu);
  *event = new Event{flags, false, {}};
  ++state().events;
  return hipSuccess;
}

FAKE_HIP hipError_t hipEventDestroy(Event* event) {
  if (!event) return hipErrorInvalidHandle;
  std::lock_guard<std::mutex> lock(state().mu);
  delete event;
  --state().events;
  return hipSuccess;
}

FAKE_HIP hipError_t hipEventRecord(Event* event, Stream*) {
  if (!event) return hipErrorInvalidHandle;
  event->recorded = true;
  event->at = std::chrono::steady_clock::now();
  return hipSuccess;
}

FAKE_HIP hipError_t hipEventQuery(Event* event) { return event ? hipSuccess : hipErrorInvalidHandle; }
FAKE_HIP hipError_t hipEventSynchronize(Event* event) { return event ? hipSuccess : hipErrorInvalidHandle; }

FAKE_HIP hipError_t hipEventElapsedTime(float* ms, Event* start, Event* end) {
  if (!ms || !start || !end) return hipErrorInvalidValue;
  // hipEventDisableTiming (2) on either, or one not recorded.
  if ((start->flags & 2) || (end->flags & 2) || !start->recorded || !end->recorded) return hipErrorInvalidHandle;
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return hipSuccess;
}

// ------------------------------------------------------------ what tests read

FAKE_HIP void zyntax_fake_hip_reset(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.modules.clear();
  s.modules_unloaded = 0;
  s.functions.clear();
  s.launches.clear();
  s.arg_sizes.clear();
  s.device_limit = s.host_limit = SIZE_MAX;
}

FAKE_HIP void zyntax_fake_hip_set_memory_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().device_limit = bytes;
}

FAKE_HIP void zyntax_fake_hip_set_host_memory_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().host_limit = bytes;
}

FAKE_HIP void zyntax_fake_hip_set_arg_sizes(const size_t* sizes, int count) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().arg_sizes.assign(sizes, sizes + count);
}

FAKE_HIP int zyntax_fake_hip_launches(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return static_cast<int>(state().launches.size());
}

FAKE_HIP int zyntax_fake_hip_launch(int i, ZyntaxFakeHipLaunch* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (i < 0 || i >= static_cast<int>(s.launches.size()) || !out) return 0;
  *out = s.launches[i].info;
  out->kernel = s.launches[i].kernel.c_str();
  return 1;
}

FAKE_HIP size_t zyntax_fake_hip_launch_arg(int i, int arg, void* out, size_t capacity) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (i < 0 || i >= static_cast<int>(s.launches.size())) return 0;
  const Launch& l = s.launches[i];
  if (arg < 0 || arg >= static_cast<int>(l.args.size())) return 0;
  if (out && capacity) std::memcpy(out, l.args[arg].data(), std::min(capacity, l.args[arg].size()));
  return l.args[arg].size();
}

FAKE_HIP int zyntax_fake_hip_modules(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return static_cast<int>(state().modules.size());
}

FAKE_HIP size_t zyntax_fake_hip_module_image(int i, const void** bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (i < 0 || i >= static_cast<int>(s.modules.size())) return 0;
  *bytes = s.modules[i]->image.data();
  return s.modules[i]->image.size();
}

FAKE_HIP int zyntax_fake_hip_modules_unloaded(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().modules_unloaded;
}

FAKE_HIP int zyntax_fake_hip_functions(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return static_cast<int>(state().functions.size());
}

FAKE_HIP const char* zyntax_fake_hip_function(int i) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (i < 0 || i >= static_cast<int>(s.functions.size())) return nullptr;
  return s.functions[i]->name.c_str();
}

FAKE_HIP size_t zyntax_fake_hip_device_allocations(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().device.size();
}

FAKE_HIP size_t zyntax_fake_hip_device_bytes(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().device_bytes;
}

FAKE_HIP size_t zyntax_fake_hip_pinned_allocations(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().pinned.size();
}

FAKE_HIP size_t zyntax_fake_hip_registered_ranges(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().registered.size();
}

FAKE_HIP int zyntax_fake_hip_streams(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().streams;
}

FAKE_HIP int zyntax_fake_hip_events(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().events;
}

FAKE_HIP int zyntax_fake_hip_allocation_device(const void* p) {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().device.find(reinterpret_cast<uintptr_t>(p));
  return it == state().device.end() ? -1 : it->second.second;
}

FAKE_HIP int zyntax_fake_hip_current_device(void) { return current_device; }
