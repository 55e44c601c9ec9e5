#include "runtime/device.hpp"

#include <fstream>
#include <thread>

#include "codegen/llvm/cpu/cpu_device.hpp"
#include "interp/reference_device.hpp"

namespace zyntax {

DeviceRegistry& DeviceRegistry::global() {
  static DeviceRegistry* registry = [] {
    auto* r = new DeviceRegistry();
    r->add(make_llvm_cpu_device("cpu"));
    r->add(make_reference_device("cpu:reference"));
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
