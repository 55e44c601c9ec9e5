#include "runtime/device.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "cir/flop_count.hpp"
#include "runtime/profiler.hpp"
#include "runtime/tuner.hpp"
#include "runtime/tuning_database.hpp"

namespace zyntax {

namespace {

// A kernel's floating-point operations, counted once per kernel.
double flops_of(const cir::Kernel& kernel, uint64_t key) {
  static std::mutex mu;
  static std::map<uint64_t, double> counted;
  std::lock_guard<std::mutex> lock(mu);
  auto it = counted.find(key);
  if (it != counted.end()) return it->second;
  return counted[key] = cir::count_flops(kernel).value_or(-1);
}

}  // namespace

Tensor Device::copy_in_device_memory(uint64_t, DType, Shape) {
  throw DataError(info().id + " has no memory of its own to take another library's device memory into");
}

Tensor Device::run(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                   const std::map<std::string, Scalar>& scalars) {
  // With tuning on, a kernel with no record is tuned first (not part of its run's time).
  if (tune_mode() == TuneMode::On) tune_if_needed(*this, kernel, key, inputs, scalars);
  Profiler& profiler = Profiler::global();
  if (!profiler.enabled()) return run_with_fallbacks(kernel, key, inputs, scalars, nullptr);
  // Profiled: the kernel's own time, less the compile it triggered.
  ProfileEvent e;
  e.kind = ProfileEvent::Kind::Kernel;
  e.name = kernel.name;
  e.device = info().id;
  e.start_ns = profiler.now_ns();
  Profiler::Running running(e.name, e.device);
  int64_t outer_compile = Profiler::take_compile_ns();
  uint64_t loads = Profiler::disk_loads();
  const Device* ran_on = this;
  Tensor out = run_with_fallbacks(kernel, key, inputs, scalars, &ran_on);
  e.device = ran_on->info().id;  // where it ran after any fallback
  if (ran_on == this && tune_mode() != TuneMode::Off) {
    // The plan it ran: one the tuner chose, the default the tuner kept, or untuned.
    bool recorded = false;
    TuningChoice c = tuned_choice(kernel, key, &recorded);
    e.plan = !recorded ? "-" : c.empty() ? "default" : "tuned";
  }
  int64_t compile = Profiler::take_compile_ns();
  e.span_ns = profiler.now_ns() - e.start_ns;
  e.duration_ns = e.span_ns - compile;
  double device_ms = ran_on->last_kernel_milliseconds();
  if (ran_on->info().type == "gpu" && device_ms >= 0) e.duration_ns = static_cast<int64_t>(device_ms * 1e6);
  e.from_disk = Profiler::disk_loads() != loads;
  e.compiled = compile > 0 && !e.from_disk;
  for (const Tensor& t : inputs) e.bytes += t.nbytes();
  e.bytes += out.nbytes();
  e.flops = flops_of(kernel, key);
  profiler.record(std::move(e));
  Profiler::add_compile_ns(outer_compile + compile);  // an enclosing run subtracts it too
  return out;
}

Tensor Device::run_with_fallbacks(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                                  const std::map<std::string, Scalar>& scalars, const Device** ran_on) {
  Attempt a = execute(kernel, key, inputs, scalars);
  if (a.outcome == Outcome::Done) {
    if (ran_on) *ran_on = this;
    return std::move(a.result);
  }
  // Unsupported: the host's compiled CPU device, unless this is it (or it
  // cannot either), then the reference executor. A failed check: the
  // reference executor, which says what failed and where.
  Device* next = a.outcome == Outcome::Unsupported && fallbacks_.host != this ? fallbacks_.host : fallbacks_.reference;
  if (next == this || !next)
    throw std::logic_error("device " + info().id + " cannot run kernel " + kernel.name + " and has no device to fall back on");
  return next->run_with_fallbacks(kernel, key, inputs, scalars, ran_on);
}

std::string Device::tuning_signature() const {
  const DeviceInfo& i = info();
  std::string s = i.name + " | " + i.backend + " | " + std::to_string(i.cores) + " cores";
  if (!i.compute_capability.empty()) s += " | " + i.compute_capability;
  return s;
}

TuningChoice Device::tuned_choice(const cir::Kernel& kernel, uint64_t key, bool* tuned) {
  if (tuned) *tuned = false;
  if (tune_mode() == TuneMode::Off) return {};
  TuningDatabase& db = TuningDatabase::global();
  uint64_t generation = db.generation();
  {
    std::lock_guard<std::mutex> lock(tuned_mu_);
    auto it = tuned_.find(key);
    if (it != tuned_.end() && it->second.generation == generation) {
      if (tuned) *tuned = it->second.recorded;
      return it->second.choice;
    }
  }
  // Outside the lock: the key prints the kernel once.
  Tuned t;
  t.generation = generation;
  if (std::optional<TuningRecord> r = db.find(tuning_key(kernel, tuning_signature()).hash())) {
    t.recorded = true;
    t.choice = r->choice;
  }
  if (tuned) *tuned = t.recorded;
  std::lock_guard<std::mutex> lock(tuned_mu_);
  tuned_[key] = t;
  return t.choice;
}

const std::vector<std::unique_ptr<Device>>& DeviceRegistry::devices() const {
  open_deferred();
  return devices_;
}

void DeviceRegistry::open_deferred() const {
  if (deferred_.empty()) return;
  std::call_once(opened_, [this] {
    auto* self = const_cast<DeviceRegistry*>(this);  // opening adds devices; the registry is logically unchanged
    for (const auto& open : deferred_) open(*self);
  });
}

Device* DeviceRegistry::find(const std::string& id) const {
  if (id != "auto" && !id.empty())
    for (Device* d : first_)
      if (d->info().id == id) return d;
  open_deferred();
  if (devices_.empty()) return nullptr;
  if (id == "auto" || id.empty()) {
    for (const auto& d : devices_)
      if (d->info().type == "gpu") return d.get();
    Device* cpu = find("cpu");
    return cpu ? cpu : devices_.front().get();
  }
  for (const auto& d : devices_)
    if (d->info().id == id) return d.get();
  return nullptr;
}

Device::Fallbacks DeviceRegistry::fallbacks() const {
  auto host = [this](const std::string& id) -> Device* {
    for (const auto& d : devices_)
      if (d->info().id == id) return d.get();
    return nullptr;
  };
  return {host("cpu"), host("cpu:reference")};
}

void DeviceRegistry::add(std::unique_ptr<Device> d) {
  Device::Fallbacks before = fallbacks();
  devices_.push_back(std::move(d));
  if (deferred_.empty()) first_.push_back(devices_.back().get());
  Device::Fallbacks f = fallbacks();
  devices_.back()->set_fallbacks(f);
  // Devices running already are told again only if the fallbacks changed,
  // which the host's devices, added first, settle.
  if (f.host != before.host || f.reference != before.reference)
    for (const auto& device : devices_) device->set_fallbacks(f);
}

void DeviceRegistry::defer(std::function<void(DeviceRegistry&)> open) { deferred_.push_back(std::move(open)); }

void DeviceRegistry::lend_fallbacks(Device& d) const { d.set_fallbacks(fallbacks()); }

void DeviceRegistry::add_unavailable(const std::string& prefix, std::string why, bool gpu) {
  unavailable_.push_back({prefix, std::move(why), gpu});
}

std::string DeviceRegistry::available() const {
  std::string s;
  for (const auto& d : devices()) s += (s.empty() ? "" : ", ") + d->info().id;
  return s;
}

std::string DeviceRegistry::unavailable_reason(const std::string& id) const {
  open_deferred();
  std::string why;
  for (const Unavailable& u : unavailable_)
    if (id.rfind(u.prefix, 0) == 0 || (u.gpu && id.rfind("gpu", 0) == 0)) why += (why.empty() ? "" : "; ") + u.why;
  return why;
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
