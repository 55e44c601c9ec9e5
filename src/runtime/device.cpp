#include "runtime/device.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "codegen/llvm/cpu/cpu_device.hpp"
#include "codegen/llvm/nvptx/cuda_device.hpp"
#include "runtime/cuda/cuda_driver.hpp"
#include "runtime/thread_pool.hpp"
#include "interp/reference_device.hpp"

namespace zyntax {

DeviceRegistry& DeviceRegistry::global() {
  static DeviceRegistry* registry = [] {
    auto* r = new DeviceRegistry();
    r->add(make_llvm_cpu_device("cpu"));
    r->add(make_reference_device("cpu:reference"));
    // The cores split into logical CPU devices (ZYNTAX_CPU_DEVICES, default
    // 2), so that programs using several devices run on any machine.
    int logical = 2;
    if (const char* env = std::getenv("ZYNTAX_CPU_DEVICES")) logical = std::max(0, std::min(64, std::atoi(env)));
    int threads = std::max(1, ThreadPool::global().size() / std::max(1, logical));
    for (int i = 0; i < logical; ++i) r->add(make_llvm_cpu_device("cpu:" + std::to_string(i), threads));
    // Every GPU the CUDA driver reports (none where there is no driver).
    try {
      for (std::unique_ptr<cuda::Gpu>& gpu : cuda::Gpu::open_all()) r->add(make_cuda_device(std::move(gpu)));
    } catch (const cuda::CudaError& e) {
      r->gpu_error_ = e.what();
    }
    return r;
  }();
  return *registry;
}

Device* DeviceRegistry::find(const std::string& id) const {
  if (devices_.empty()) return nullptr;
  if (id == "auto" || id.empty()) {
    for (const auto& d : devices_)
      if (d->info().type == "gpu") return d.get();
    return devices_.front().get();
  }
  for (const auto& d : devices_)
    if (d->info().id == id) return d.get();
  return nullptr;
}

std::string DeviceRegistry::available() const {
  std::string s;
  for (const auto& d : devices_) s += (s.empty() ? "" : ", ") + d->info().id;
  return s;
}

std::string DeviceRegistry::unavailable_reason(const std::string& id) const {
  if (id.rfind("cuda", 0) != 0 && id.rfind("gpu", 0) != 0) return "";
  if (!gpu_error_.empty()) return "the GPU cannot be used: " + gpu_error_;
  if (!cuda::gpu_available()) return "no CUDA GPU: " + cuda::gpu_unavailable_reason();
  return "";
}

std::string DeviceRegistry::not_available_message(const std::string& id) const {
  std::string why = unavailable_reason(id);
  return "device '" + id + "' is not available (available: " + available() + (why.empty() ? "" : "; " + why) + ")";
}

DeviceInfo host_cpu_info(const std::string& id, std::string backend) {
  DeviceInfo info;
  info.id = id;
  info.type = "cpu";
  info.name = cpu_model_name();
  info.backend = std::move(backend);
  info.cores = cpu_core_count();
  info.memory_bytes = host_memory_bytes();
  return info;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "unknown CPU";
}

int cpu_core_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

uint64_t host_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  while (in >> key >> kb) {
    if (key == "MemTotal:") return kb * 1024;
    in.ignore(256, '\n');
  }
  return 0;
}

}  // namespace zyntax
