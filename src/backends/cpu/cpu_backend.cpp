// The cpu backend: kernels compiled by LLVM for the host and run on its
// cores. Devices: "cpu" (every core), and logical devices "cpu:0", "cpu:1",
// ... each with a share of the cores (ZYNTAX_CPU_DEVICES, default 2), so
// that programs using several devices run on any machine.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "backends/cpu/cpu_device.hpp"
#include "runtime/thread_pool.hpp"

namespace zyntax {

void register_cpu_backend(DeviceRegistry& registry) {
  registry.add(make_llvm_cpu_device("cpu"));
  int logical = 2;
  if (const char* env = std::getenv("ZYNTAX_CPU_DEVICES")) logical = std::max(0, std::min(64, std::atoi(env)));
  int threads = std::max(1, ThreadPool::global().size() / std::max(1, logical));
  for (int i = 0; i < logical; ++i) registry.add(make_llvm_cpu_device("cpu:" + std::to_string(i), threads));
}

}  // namespace zyntax
