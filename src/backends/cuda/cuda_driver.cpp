#include "backends/cuda/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace zyntax::cuda {

const Driver* Driver::open(std::string* why) {
  const char* env = std::getenv("ZYNTAX_CUDA_DRIVER");
  std::string path = env && *env ? env : "libcuda.so.1";
  // Never unloaded: kernels, modules and contexts live as long as the process.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    *why = "no CUDA driver (" + (e ? std::string(e) : path + " cannot be loaded") + ")";
    return nullptr;
  }
  auto* d = new Driver();
  std::string missing;
#define ZYNTAX_RESOLVE_CUDA_FUNCTION(name, symbol, type)                \
  d->name = reinterpret_cast<std::add_pointer_t<type>>(dlsym(lib, symbol));                 \
  if (!d->name) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  ZYNTAX_CUDA_DRIVER_FUNCTIONS(ZYNTAX_RESOLVE_CUDA_FUNCTION)
#undef ZYNTAX_RESOLVE_CUDA_FUNCTION
  // Optional: left null where the driver lacks them.
#define ZYNTAX_RESOLVE_OPTIONAL_CUDA_FUNCTION(name, symbol, type) \
  d->name = reinterpret_cast<std::add_pointer_t<type>>(dlsym(lib, symbol));
  ZYNTAX_CUDA_DRIVER_OPTIONAL_FUNCTIONS(ZYNTAX_RESOLVE_OPTIONAL_CUDA_FUNCTION)
#undef ZYNTAX_RESOLVE_OPTIONAL_CUDA_FUNCTION
  d->tensor_maps = d->cuTensorMapEncodeTiled != nullptr;
  d->clusters = d->cuLaunchKernelEx != nullptr && d->version >= 12000;
  if (!missing.empty()) {
    *why = "the CUDA driver " + path + " is too old or not a CUDA driver: it lacks " + missing;
    delete d;
    return nullptr;
  }
  CUresult r = d->cuInit(0);
  if (r != CUDA_SUCCESS) {
    *why = "the CUDA driver does not start: cuInit failed: " + d->error_text(r);
    delete d;
    return nullptr;
  }
  d->cuDriverGetVersion(&d->version);
  return d;
}

const Driver::Opened& Driver::opened() {
  static const Opened o = [] {
    Opened r;
    r.driver = open(&r.why);
    return r;
  }();
  return o;
}

const Driver* Driver::get() { return opened().driver; }

const std::string& Driver::unavailable_reason() { return opened().why; }

std::string Driver::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void Driver::check(CUresult r, const std::string& operation) const {
  if (r != CUDA_SUCCESS) throw CudaError(operation + " failed: " + error_text(r), r);
}

bool gpu_available() {
  const Driver* d = Driver::get();
  int n = 0;
  return d && d->cuDeviceGetCount(&n) == CUDA_SUCCESS && n > 0;
}

std::string gpu_unavailable_reason() {
  const Driver* d = Driver::get();
  if (!d) return Driver::unavailable_reason();
  int n = 0;
  CUresult r = d->cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS) return "the CUDA driver cannot count devices: " + d->error_text(r);
  if (n == 0) return "the CUDA driver reports no GPU";
  return "";
}

}  // namespace zyntax::cuda
