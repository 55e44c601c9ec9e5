// The HIP runtime (AMD's libamdhip64), opened at run time with dlopen, so the
// same binary builds and runs on machines with no GPU and no ROCm. Only the
// entry points the runtime uses are resolved, declared here with HIP's ABI
// (no HIP headers are needed to build). Every failing call becomes a HipError
// naming the operation and the runtime's error.
//
// The values below are HIP's, from the ROCm sources:
//   HIP 5.x–6.x: github.com/ROCm/HIP include/hip/hip_runtime_api.h (tags rocm-5.0.0 … rocm-6.2.2, develop)
//   HIP 7.x:     github.com/ROCm/rocm-systems projects/hip/include/hip/hip_runtime_api.h
//   exports:     github.com/ROCm/clr hipamd/src/hip_hcc.map.in (rocm-5.6.0 … rocm-6.2.2),
//                github.com/ROCm/rocm-systems projects/clr/hipamd/src/hip_hcc.map.in (7.x)
// hipDeviceAttribute_t was renumbered once, in ROCm 5.0 (ROCm 4 counted from
// kMaxThreadsPerBlock = 0); from 5.0 to 7.x the values used here are the same,
// so a runtime older than HIP 5 is refused instead of being read wrongly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace zyntax::rocm {

using hipError_t = int;  // an enum of int size on Linux
using hipDevice_t = int;
using hipDeviceptr_t = void*;
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;
using hipStream_t = struct ihipStream_t*;
using hipEvent_t = struct ihipEvent_t*;

// hipError_t (hip_runtime_api.h).
constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorInvalidValue = 1;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101;
constexpr hipError_t hipErrorInvalidImage = 200;
constexpr hipError_t hipErrorNotFound = 500;
constexpr hipError_t hipErrorNotReady = 600;
constexpr hipError_t hipErrorUnknown = 999;

// Device attributes (hipDeviceAttribute_t, hip_runtime_api.h) the runtime
// reads. Not CUDA's numbers: HIP lists the CUDA-compatible ones in
// alphabetical order from 0 and AMD's own from 10000. The same in every
// release from rocm-5.0.0 to 7.x (checked tag by tag); ROCm 4 differed.
enum DeviceAttribute : int {
  kCanMapHostMemory = 3,
  kClockRateKhz = 5,
  kL2CacheSize = 19,
  kComputeCapabilityMajor = 23,
  kManagedMemory = 24,
  kMaxThreadsPerBlock = 56,
  kGlobalMemoryBusWidth = 59,
  kMemoryClockRateKhz = 60,
  kComputeCapabilityMinor = 61,
  kMultiprocessorCount = 63,  // compute units (half of them in an RDNA GPU's WGP mode)
  kMaxSharedMemoryPerBlock = 74,
  kSharedMemPerBlockOptin = 75,
  kUnifiedAddressing = 85,
  kWarpSize = 87,
  kMaxSharedMemoryPerMultiprocessor = 10002,  // hipDeviceAttributeAmdSpecificBegin + 2
};

// Flags (#defines of hip_runtime_api.h, the same from 5.0 to 7.x).
constexpr unsigned kStreamNonBlocking = 0x1;      // hipStreamNonBlocking
constexpr unsigned kHostMallocDefault = 0x0;      // hipHostMallocDefault
constexpr unsigned kHostMallocPortable = 0x1;     // hipHostMallocPortable: pinned for every device
constexpr unsigned kHostMallocMapped = 0x2;       // hipHostMallocMapped: and in their address space
constexpr unsigned kHostRegisterPortable = 0x1;   // hipHostRegisterPortable
constexpr unsigned kHostRegisterMapped = 0x2;     // hipHostRegisterMapped
constexpr unsigned kEventDefault = 0x0;           // hipEventDefault
constexpr unsigned kEventDisableTiming = 0x2;     // hipEventDisableTiming
// hipFuncAttributeMaxDynamicSharedMemorySize (hipFuncAttribute, hip/driver_types.h).
constexpr int kFuncAttributeMaxDynamicSharedMemorySize = 8;

// HIP_VERSION as hipRuntimeGetVersion reports it: major * 10000000 + minor *
// 100000 + patch (ROCm/clr hipamd/CMakeLists.txt), e.g. 60241134 for 6.2.41134.
constexpr int kOldestRuntimeVersion = 50000000;  // HIP 5.0: the attribute numbers above

// Where gcnArchName ("gfx90a:sramecc+:xnack-") lies in hipDeviceProp_t, by
// layout (x86-64 LP64; offsets worked out field by field from the headers
// and confirmed with offsetof on the structs as declared there):
//   R0600 (hipGetDevicePropertiesR0600, HIP 6.0 onwards; the 7.x struct is the
//   same): name[256] @0, hipUUID @256 (16), luid[8] @272, luidDeviceNodeMask
//   @280, size_t totalGlobalMem @288 … int unifiedFunctionPointers @776,
//   int reserved[63] @780 (252 bytes), int hipReserved[32] @1032 (128 bytes),
//   so char gcnArchName[256] @1160; sizeof 1472.
//   R0000 (hipGetDeviceProperties of HIP 5.x, and the same symbol, kept for
//   the old ABI, in 6.x and 7.x; hip/hip_deprecated.h): name[256] @0,
//   size_t totalGlobalMem @256, sharedMemPerBlock @264, int regsPerBlock @272,
//   warpSize @276, maxThreadsPerBlock @280, int maxThreadsDim[3] @284,
//   maxGridSize[3] @296, int clockRate @308, memoryClockRate @312,
//   memoryBusWidth @316, size_t totalConstMem @320 (no padding), int major
//   @328 … computeMode @348, clockInstructionRate @352, hipDeviceArch_t (a
//   4-byte bitfield struct) @356, concurrentKernels @360, pciDomainID @364,
//   pciBusID @368, pciDeviceID @372, size_t maxSharedMemoryPerMultiProcessor
//   @376 (no padding), int isMultiGpuBoard @384, canMapHostMemory @388,
//   gcnArch @392, so char gcnArchName[256] @396; sizeof 792.
// No exported call returns the name alone (hipDeviceAttributeGcnArchName
// was int-valued, and from 6.0 is the placeholder Unused5), so the struct is
// read into a zeroed buffer larger than either layout.
constexpr size_t kGcnArchNameOffsetR0600 = 1160;
constexpr size_t kGcnArchNameOffsetR0000 = 396;
constexpr size_t kGcnArchNameBytes = 256;
constexpr size_t kDevicePropBufferBytes = 4096;  // > 1472 and > 792, with room for a larger future struct

// name, symbol in libamdhip64, function type. Every one is exported under
// this name by HIP 5.x–7.x (the hip_4.2 version node of hip_hcc.map.in).
// Host pointers HIP declares `void*` (hipMemcpyHtoD's source) are `const
// void*` here: the same ABI.
#define ZYNTAX_HIP_FUNCTIONS(X)                                                                                       \
  X(hipInit, "hipInit", hipError_t(unsigned))                                                                         \
  X(hipDriverGetVersion, "hipDriverGetVersion", hipError_t(int*))                                                     \
  X(hipRuntimeGetVersion, "hipRuntimeGetVersion", hipError_t(int*))                                                   \
  X(hipGetErrorName, "hipGetErrorName", const char*(hipError_t))                                                      \
  X(hipGetErrorString, "hipGetErrorString", const char*(hipError_t))                                                  \
  X(hipGetDeviceCount, "hipGetDeviceCount", hipError_t(int*))                                                         \
  X(hipSetDevice, "hipSetDevice", hipError_t(int))                                                                    \
  X(hipDeviceGet, "hipDeviceGet", hipError_t(hipDevice_t*, int))                                                      \
  X(hipDeviceGetName, "hipDeviceGetName", hipError_t(char*, int, hipDevice_t))                                        \
  X(hipDeviceTotalMem, "hipDeviceTotalMem", hipError_t(size_t*, hipDevice_t))                                         \
  X(hipDeviceGetAttribute, "hipDeviceGetAttribute", hipError_t(int*, int, int))                                       \
  X(hipDeviceSynchronize, "hipDeviceSynchronize", hipError_t())                                                       \
  X(hipMemGetInfo, "hipMemGetInfo", hipError_t(size_t*, size_t*))                                                     \
  X(hipMalloc, "hipMalloc", hipError_t(void**, size_t))                                                               \
  X(hipFree, "hipFree", hipError_t(void*))                                                                            \
  X(hipHostMalloc, "hipHostMalloc", hipError_t(void**, size_t, unsigned))                                             \
  X(hipHostFree, "hipHostFree", hipError_t(void*))                                                                    \
  X(hipHostRegister, "hipHostRegister", hipError_t(void*, size_t, unsigned))                                          \
  X(hipHostUnregister, "hipHostUnregister", hipError_t(void*))                                                        \
  X(hipHostGetDevicePointer, "hipHostGetDevicePointer", hipError_t(void**, void*, unsigned))                          \
  X(hipMemcpyHtoD, "hipMemcpyHtoD", hipError_t(hipDeviceptr_t, const void*, size_t))                                  \
  X(hipMemcpyDtoH, "hipMemcpyDtoH", hipError_t(void*, hipDeviceptr_t, size_t))                                        \
  X(hipMemcpyDtoD, "hipMemcpyDtoD", hipError_t(hipDeviceptr_t, hipDeviceptr_t, size_t))                               \
  X(hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync", hipError_t(hipDeviceptr_t, const void*, size_t, hipStream_t))           \
  X(hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync", hipError_t(void*, hipDeviceptr_t, size_t, hipStream_t))                 \
  X(hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync", hipError_t(hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t))        \
  X(hipMemsetD8Async, "hipMemsetD8Async", hipError_t(hipDeviceptr_t, unsigned char, size_t, hipStream_t))             \
  X(hipModuleLoadData, "hipModuleLoadData", hipError_t(hipModule_t*, const void*))                                    \
  X(hipModuleUnload, "hipModuleUnload", hipError_t(hipModule_t))                                                      \
  X(hipModuleGetFunction, "hipModuleGetFunction", hipError_t(hipFunction_t*, hipModule_t, const char*))               \
  X(hipModuleLaunchKernel, "hipModuleLaunchKernel",                                                                   \
    hipError_t(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, hipStream_t,      \
               void**, void**))                                                                                       \
  X(hipStreamCreateWithFlags, "hipStreamCreateWithFlags", hipError_t(hipStream_t*, unsigned))                         \
  X(hipStreamDestroy, "hipStreamDestroy", hipError_t(hipStream_t))                                                    \
  X(hipStreamSynchronize, "hipStreamSynchronize", hipError_t(hipStream_t))                                            \
  X(hipStreamWaitEvent, "hipStreamWaitEvent", hipError_t(hipStream_t, hipEvent_t, unsigned))                          \
  X(hipEventCreateWithFlags, "hipEventCreateWithFlags", hipError_t(hipEvent_t*, unsigned))                            \
  X(hipEventDestroy, "hipEventDestroy", hipError_t(hipEvent_t))                                                       \
  X(hipEventRecord, "hipEventRecord", hipError_t(hipEvent_t, hipStream_t))                                            \
  X(hipEventQuery, "hipEventQuery", hipError_t(hipEvent_t))                                                           \
  X(hipEventSynchronize, "hipEventSynchronize", hipError_t(hipEvent_t))                                               \
  X(hipEventElapsedTime, "hipEventElapsedTime", hipError_t(float*, hipEvent_t, hipEvent_t))

// Entry points a runtime may lack (null then).
//  hipFuncSetAttribute takes a host function registered by a HIP program
//  (`const void*`), not a module's hipFunction_t: the runtime looks the
//  pointer up among registered kernels and answers hipErrorInvalidSymbol for
//  anything else, so it is resolved but not called for module kernels (they
//  launch with up to the LDS size of dynamic shared memory without opting in).
//  hipGetDevicePropertiesR0600 (HIP 6.0 on) and hipGetDeviceProperties (the
//  R0000 layout in every release) fill the hipDeviceProp_t that names the
//  architecture (see kGcnArchNameOffset*).
#define ZYNTAX_HIP_OPTIONAL_FUNCTIONS(X)                                                                              \
  X(hipFuncSetAttribute, "hipFuncSetAttribute", hipError_t(const void*, int, int))                                    \
  X(hipGetDevicePropertiesR0600, "hipGetDevicePropertiesR0600", hipError_t(void*, int))                               \
  X(hipGetDeviceProperties, "hipGetDeviceProperties", hipError_t(void*, int))

// A HIP call failed: what was done, and the runtime's error.
class HipError : public std::runtime_error {
 public:
  HipError(const std::string& message, hipError_t code) : std::runtime_error(message), code_(code) {}
  hipError_t code() const { return code_; }

 private:
  hipError_t code_;
};

class Hip {
 public:
  // The runtime, opened and initialised once per process; null when there
  // is none, and unavailable_reason() says why. The library is
  // $ZYNTAX_HIP_RUNTIME when set, else the first of libraries() that opens.
  static const Hip* get();
  static const std::string& unavailable_reason();

  // What get() does, without keeping the result (tests open several).
  static std::unique_ptr<Hip> open_default(std::string* why);
  // The runtime at `path` (a name dlopen searches for, or a path): loaded
  // (never unloaded), its entry points resolved and hipInit called; null with
  // *why when any of that fails. A runtime that sees no GPU still opens
  // (gpu_unavailable_reason() says so).
  static std::unique_ptr<Hip> open(const std::string& path, std::string* why);
  // The names get() tries in order without $ZYNTAX_HIP_RUNTIME.
  static const std::vector<std::string>& libraries();

#define ZYNTAX_DECLARE_HIP_FUNCTION(name, symbol, type) std::add_pointer_t<type> name = nullptr;
  ZYNTAX_HIP_FUNCTIONS(ZYNTAX_DECLARE_HIP_FUNCTION)
  ZYNTAX_HIP_OPTIONAL_FUNCTIONS(ZYNTAX_DECLARE_HIP_FUNCTION)
#undef ZYNTAX_DECLARE_HIP_FUNCTION

  std::string library;      // as opened: "libamdhip64.so", "/opt/rocm/lib/libamdhip64.so.6"
  int runtime_version = 0;  // HIP_VERSION: 60241134 for HIP 6.2.41134
  int driver_version = 0;
  // hipInit's answer: hipErrorNoDevice where the runtime sees no GPU.
  hipError_t init_result = hipSuccess;

  // "6.2.41134".
  std::string version_text() const { return version_text(runtime_version); }
  static std::string version_text(int version);
  // "hipErrorOutOfMemory (out of memory)".
  std::string error_text(hipError_t r) const;
  // Throws HipError "<operation> failed: <error_text>" unless r is success.
  void check(hipError_t r, const std::string& operation) const;

  // The architecture of GPU `ordinal` as the runtime names it,
  // "gfx90a:sramecc+:xnack-" (hipDeviceProp_t.gcnArchName); a HipError when
  // the runtime cannot say.
  std::string arch_name(int ordinal) const;

 private:
  Hip() = default;
  struct Opened {
    std::unique_ptr<Hip> hip;
    std::string why;
  };
  static const Opened& opened();
  // *loaded: whether dlopen found the library (the next candidate is tried only where it did not).
  static std::unique_ptr<Hip> open(const std::string& path, std::string* why, bool* loaded);
};

// An AMD GPU architecture as HIP names it: the processor, then target
// features each on (+) or off (-), "gfx90a:sramecc+:xnack-". A feature not
// listed is left open (code objects for either setting run).
struct GfxArch {
  std::string name;                   // "gfx90a": LLVM's -mcpu, what code objects are compiled for
  std::vector<std::string> features;  // {"sramecc+", "xnack-"}, in the runtime's order

  // Whether feature `feature` ("xnack", "sramecc") is on; nothing when not listed.
  std::optional<bool> feature(std::string_view feature) const;
  // Back to the runtime's spelling.
  std::string full_name() const;
};
// "gfx90a:sramecc+:xnack-" → {gfx90a, {sramecc+, xnack-}}; nothing unless the
// name is gfx<digits and letters> and every feature ends in + or -.
std::optional<GfxArch> parse_gfx_arch(std::string_view text);
// Whether `feature` is on in `features` ({"sramecc+", "xnack-"}); nothing when not listed.
std::optional<bool> gfx_feature(const std::vector<std::string>& features, std::string_view feature);

// Whether a usable AMD GPU is present: a runtime that opens and reports at
// least one device.
bool gpu_available();
// Why not, for messages ("no HIP runtime (libamdhip64.so: cannot open ...)",
// "the HIP runtime reports no GPU"); "" when there is one.
std::string gpu_unavailable_reason();
// The same for a runtime at hand.
std::string gpu_unavailable_reason(const Hip& hip);

}  // namespace zyntax::rocm
