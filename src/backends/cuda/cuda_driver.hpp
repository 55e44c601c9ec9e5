// The CUDA driver API, opened at run time (dlopen of libcuda.so.1), so the
// same binary builds and runs on machines with no GPU and no driver. Only
// the entry points the runtime uses are resolved, declared here with the
// driver's ABI (no CUDA headers are needed to build). Every failing call
// becomes a CudaError naming the operation and the driver's error.
// Entry points newer drivers add (tensor maps, CUDA 12) are optional: a
// driver without them still runs everything else, and a flag says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace zyntax::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// Device attributes (CUdevice_attribute) the runtime reads.
enum DeviceAttribute : int {
  kMaxThreadsPerBlock = 1,
  kWarpSize = 10,
  kClockRateKhz = 13,
  kMultiprocessorCount = 16,
  kCanMapHostMemory = 19,
  kMemoryClockRateKhz = 36,
  kGlobalMemoryBusWidth = 37,
  kL2CacheSize = 38,
  kUnifiedAddressing = 41,
  kComputeCapabilityMajor = 75,
  kComputeCapabilityMinor = 76,
  kMaxSharedMemoryPerMultiprocessor = 81,
  kManagedMemory = 83,
  kMaxSharedMemoryPerBlockOptin = 97,
};

// Options of cuModuleLoadDataEx (CUjit_option).
enum JitOption : int {
  kJitInfoLogBuffer = 3,
  kJitInfoLogBufferSizeBytes = 4,
  kJitErrorLogBuffer = 5,
  kJitErrorLogBufferSizeBytes = 6,
};

// Tensor maps (CUDA 12, compute capability 9.0): what Hopper's tensor copy
// engine reads to copy a box of a tensor into shared memory. An opaque
// 128-byte value, 64-byte aligned, made on the host by cuTensorMapEncodeTiled
// and passed to a kernel by value.
struct alignas(64) CUtensorMap {
  unsigned long long opaque[16];
};
static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) == 64);
using cuuint32_t = uint32_t;
using cuuint64_t = uint64_t;
// CUtensorMapDataType.
enum TensorMapDataType : int {
  kTensorMapUint8 = 0,
  kTensorMapUint16 = 1,
  kTensorMapUint32 = 2,
  kTensorMapInt32 = 3,
  kTensorMapUint64 = 4,
  kTensorMapInt64 = 5,
  kTensorMapFloat16 = 6,
  kTensorMapFloat32 = 7,
  kTensorMapFloat64 = 8,
  kTensorMapBfloat16 = 9,
  kTensorMapFloat32Ftz = 10,
  kTensorMapTfloat32 = 11,
  kTensorMapTfloat32Ftz = 12,
};
// CUtensorMapInterleave.
enum TensorMapInterleave : int { kTensorMapInterleaveNone = 0 };
// CUtensorMapSwizzle.
enum TensorMapSwizzle : int {
  kTensorMapSwizzleNone = 0,
  kTensorMapSwizzle32B = 1,
  kTensorMapSwizzle64B = 2,
  kTensorMapSwizzle128B = 3,
};
// CUtensorMapL2promotion.
enum TensorMapL2Promotion : int {
  kTensorMapL2PromotionNone = 0,
  kTensorMapL2Promotion64B = 1,
  kTensorMapL2Promotion128B = 2,
  kTensorMapL2Promotion256B = 3,
};
// A launch with attributes (CUlaunchAttribute, CUlaunchConfig; CUDA 12):
// only the cluster's shape is set here.
constexpr int kLaunchAttributeClusterDimension = 4;  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
struct CUlaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union alignas(8) Value {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } cluster_dim;
  } value{};
};
static_assert(sizeof(CUlaunchAttribute) == 72);
struct CUlaunchConfig {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  CUlaunchAttribute* attrs = nullptr;
  unsigned attr_count = 0;
};
// The driver's layouts (cuda.h, CUDA 12 and 13).
static_assert(sizeof(CUlaunchConfig) == 56 && offsetof(CUlaunchConfig, stream) == 32 && offsetof(CUlaunchConfig, attrs) == 40 &&
              offsetof(CUlaunchConfig, attr_count) == 48);
static_assert(offsetof(CUlaunchAttribute, value) == 8 && alignof(CUlaunchAttribute) == 8);
// CUtensorMapFloatOOBfill: NONE fills elements past the edges with zeros.
enum TensorMapOobFill : int {
  kTensorMapOobFillNone = 0,
  kTensorMapOobFillNanRequestZeroFma = 1,
};

constexpr unsigned kStreamNonBlocking = 0x1;
constexpr unsigned kMemHostAllocPortable = 0x1;  // page-locked for every context
constexpr unsigned kMemHostAllocDeviceMap = 0x2;  // and in the GPUs' address space
constexpr unsigned kMemHostRegisterPortable = 0x1;
constexpr unsigned kMemHostRegisterDeviceMap = 0x2;
constexpr unsigned kEventDefault = 0x0;
constexpr unsigned kEventDisableTiming = 0x2;

// name, symbol in libcuda, function type
#define ZYNTAX_CUDA_DRIVER_FUNCTIONS(X)                                                                           \
  X(cuInit, "cuInit", CUresult(unsigned))                                                                     \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult(int*))                                                 \
  X(cuGetErrorName, "cuGetErrorName", CUresult(CUresult, const char**))                                       \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char**))                                   \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int*))                                                     \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice*, int))                                                     \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char*, int, CUdevice))                                       \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult(size_t*, CUdevice))                                     \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult(int*, int, CUdevice))                              \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult(CUcontext*, CUdevice))                     \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult(CUdevice))                            \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                                                  \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult())                                                         \
  X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult(size_t*, size_t*))                                              \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr*, size_t))                                              \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                                                         \
  X(cuMemAllocHost, "cuMemAllocHost_v2", CUresult(void**, size_t))                                            \
  X(cuMemFreeHost, "cuMemFreeHost", CUresult(void*))                                                          \
  X(cuMemHostAlloc, "cuMemHostAlloc", CUresult(void**, size_t, unsigned))                                      \
  X(cuMemHostRegister, "cuMemHostRegister_v2", CUresult(void*, size_t, unsigned))                             \
  X(cuMemHostUnregister, "cuMemHostUnregister", CUresult(void*))                                              \
  X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", CUresult(CUdeviceptr*, void*, unsigned))       \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUresult(CUdeviceptr, const void*, size_t))                              \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult(void*, CUdeviceptr, size_t))                                    \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", CUresult(CUdeviceptr, CUdeviceptr, size_t))                              \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult(CUdeviceptr, const void*, size_t, CUstream))          \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult(void*, CUdeviceptr, size_t, CUstream))                \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", CUresult(CUdeviceptr, CUdeviceptr, size_t, CUstream))          \
  X(cuMemsetD8Async, "cuMemsetD8Async", CUresult(CUdeviceptr, unsigned char, size_t, CUstream))               \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx", CUresult(CUmodule*, const void*, unsigned, int*, void**))       \
  X(cuModuleUnload, "cuModuleUnload", CUresult(CUmodule))                                                     \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult(CUfunction*, CUmodule, const char*))                 \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult(CUfunction, int, int))                                 \
  X(cuLaunchKernel, "cuLaunchKernel",                                                                             \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,     \
                 void**, void**))                                                                                 \
  X(cuStreamCreate, "cuStreamCreate", CUresult(CUstream*, unsigned))                                          \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult(CUstream))                                                \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult(CUstream))                                           \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", CUresult(CUstream, CUevent, unsigned))                            \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent*, unsigned))                                             \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                                                   \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))                                              \
  X(cuEventQuery, "cuEventQuery", CUresult(CUevent))                                                          \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))                                              \
  X(cuEventElapsedTime, "cuEventElapsedTime", CUresult(float*, CUevent, CUevent))

// Entry points a driver may lack (null then; the device runs without what
// they offer). cuTensorMapEncodeTiled: tensorMap, data type, rank, global
// address, globalDim[rank], globalStrides[rank - 1] (bytes, of dims 1..),
// boxDim[rank], elementStrides[rank], interleave, swizzle, L2 promotion,
// out-of-bounds fill.
// cuLaunchKernelEx: a launch with attributes (a cluster's shape).
#define ZYNTAX_CUDA_DRIVER_OPTIONAL_FUNCTIONS(X)                                                                  \
  X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled",                                                             \
    CUresult(CUtensorMap*, int, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,      \
             const cuuint32_t*, int, int, int, int))                                                              \
  X(cuLaunchKernelEx, "cuLaunchKernelEx", CUresult(const CUlaunchConfig*, CUfunction, void**, void**))

// A driver call failed: what was done, and the driver's error.
class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& message, CUresult code) : std::runtime_error(message), code_(code) {}
  CUresult code() const { return code_; }

 private:
  CUresult code_;
};

class Driver {
 public:
  // The driver, opened and initialised once per process; null when there
  // is none, and unavailable_reason() says why. The library is
  // $ZYNTAX_CUDA_DRIVER when set, else libcuda.so.1.
  static const Driver* get();
  static const std::string& unavailable_reason();

#define ZYNTAX_DECLARE_CUDA_FUNCTION(name, symbol, type) std::add_pointer_t<type> name = nullptr;
  ZYNTAX_CUDA_DRIVER_FUNCTIONS(ZYNTAX_DECLARE_CUDA_FUNCTION)
  ZYNTAX_CUDA_DRIVER_OPTIONAL_FUNCTIONS(ZYNTAX_DECLARE_CUDA_FUNCTION)
#undef ZYNTAX_DECLARE_CUDA_FUNCTION

  int version = 0;  // e.g. 12040 for CUDA 12.4
  // Whether the driver makes tensor maps (cuTensorMapEncodeTiled, CUDA 12):
  // without them no kernel reads its factors through Hopper's tensor copies.
  bool tensor_maps = false;
  // Whether it launches thread block clusters (cuLaunchKernelEx, CUDA 12).
  bool clusters = false;

  // "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string error_text(CUresult r) const;
  // Throws CudaError "<operation> failed: <error_text>" unless r is success.
  void check(CUresult r, const std::string& operation) const;

 private:
  Driver() = default;
  struct Opened {
    const Driver* driver = nullptr;
    std::string why;
  };
  static const Opened& opened();
  static const Driver* open(std::string* why);
};

// Whether a usable NVIDIA GPU is present: a driver that initialises and
// reports at least one device.
bool gpu_available();
// Why not, for messages ("no CUDA driver: libcuda.so.1: cannot open ...").
std::string gpu_unavailable_reason();

}  // namespace zyntax::cuda
