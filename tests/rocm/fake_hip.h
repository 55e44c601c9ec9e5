// What the fake HIP runtime (fake_hip.cpp) tells a test about the calls it
// answered, and how a test steers it. A test finds these with dlsym in the
// library it opened as the HIP runtime (the same handle the runtime uses).
//
// The fake describes GPUs like an MI210: "AMD Instinct MI210",
// "gfx90a:sramecc+:xnack-", 104 compute units, wave 64, 64 GiB. Environment
// variables read at each call change that:
//   ZYNTAX_FAKE_HIP_DEVICES      number of GPUs (1; 0: hipInit answers hipErrorNoDevice)
//   ZYNTAX_FAKE_HIP_ARCH         gcnArchName ("gfx90a:sramecc+:xnack-")
//   ZYNTAX_FAKE_HIP_NAME         the marketing name
//   ZYNTAX_FAKE_HIP_WAVE_SIZE    hipDeviceAttributeWarpSize (64)
//   ZYNTAX_FAKE_HIP_COMPUTE_UNITS  hipDeviceAttributeMultiprocessorCount (104)
//   ZYNTAX_FAKE_HIP_VERSION      what hipRuntimeGetVersion answers (60241134; 50731921 in the ROCm 5 build)
//   ZYNTAX_FAKE_HIP_INIT_ERROR   what hipInit answers instead of success
// Built with ZYNTAX_FAKE_HIP_ROCM5 it exports no hipGetDevicePropertiesR0600,
// as HIP 5 does, so the name is read from the older struct.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// One hipModuleLaunchKernel call.
typedef struct ZyntaxFakeHipLaunch {
  const char* kernel;  // the name given to hipModuleGetFunction (valid until reset)
  int module;          // its module, by load order since the last reset
  int device;          // the calling thread's device
  unsigned grid[3], block[3];
  unsigned shared_bytes;
  void* stream;
  int arg_count;  // arguments copied (as many as zyntax_fake_hip_set_arg_sizes gave)
} ZyntaxFakeHipLaunch;

// Forgets what was recorded (launches, modules, functions, argument sizes)
// and lifts the memory limits; live memory, streams and events stay.
void zyntax_fake_hip_reset(void);
// hipMalloc answers hipErrorOutOfMemory once this many bytes would be live;
// hipHostMalloc likewise for pinned host memory.
void zyntax_fake_hip_set_memory_limit(size_t bytes);
void zyntax_fake_hip_set_host_memory_limit(size_t bytes);
// The byte sizes of the next launches' arguments, in order: each launch
// copies kernelParams[i]'s first sizes[i] bytes.
void zyntax_fake_hip_set_arg_sizes(const size_t* sizes, int count);

int zyntax_fake_hip_launches(void);
// Launch `i` (0 = first since the reset); 0 when there is none.
int zyntax_fake_hip_launch(int i, ZyntaxFakeHipLaunch* out);
// The bytes of argument `arg` of launch `i` copied to `out` (up to
// `capacity`); its size, or 0 when there is none.
size_t zyntax_fake_hip_launch_arg(int i, int arg, void* out, size_t capacity);

int zyntax_fake_hip_modules(void);
// The image module `i` was loaded from (a copy, as long as the ELF header says it is); its size.
size_t zyntax_fake_hip_module_image(int i, const void** bytes);
int zyntax_fake_hip_modules_unloaded(void);
int zyntax_fake_hip_functions(void);
const char* zyntax_fake_hip_function(int i);

// What is live now.
size_t zyntax_fake_hip_device_allocations(void);
size_t zyntax_fake_hip_device_bytes(void);
size_t zyntax_fake_hip_pinned_allocations(void);
size_t zyntax_fake_hip_registered_ranges(void);
int zyntax_fake_hip_streams(void);
int zyntax_fake_hip_events(void);
// The device that was current when `p` was allocated with hipMalloc; -1 when it was not.
int zyntax_fake_hip_allocation_device(const void* p);
// The calling thread's device (hipSetDevice).
int zyntax_fake_hip_current_device(void);

#ifdef __cplusplus
}
#endif
