// A CUDA driver library as found on a machine whose driver sees no GPU:
// every entry point the runtime resolves exists, cuInit reports
// CUDA_ERROR_NO_DEVICE, and the error names are the driver's. Loaded with
// ZYNTAX_CUDA_DRIVER=<this library> to test that path of the runtime.
#include <cstring>

#include "backends/cuda/cuda_driver.hpp"

namespace {

constexpr int kNoDevice = 100;

// Every entry point: the error-name functions answer, the rest report no device.
int answer(const char* name, int code, const char** out) {
  bool error_name = std::strcmp(name, "cuGetErrorName") == 0;
  if (error_name || std::strcmp(name, "cuGetErrorString") == 0) {
    if (code != kNoDevice || !out) return 1;
    *out = error_name ? "CUDA_ERROR_NO_DEVICE" : "no CUDA-capable device is detected";
    return 0;
  }
  return kNoDevice;
}

}  // namespace

#define ZYNTAX_STUB_CUDA_FUNCTION(name, symbol, type)                                                 \
  extern "C" __attribute__((visibility("default"))) int stub_##name(long a, const char** b, ...) __asm__(symbol); \
  extern "C" int stub_##name(long a, const char** b, ...) { return answer(#name, static_cast<int>(a), b); }
ZYNTAX_CUDA_DRIVER_FUNCTIONS(ZYNTAX_STUB_CUDA_FUNCTION)
