#include "runtime/profiler.hpp"

#include <atomic>
#include <chrono>

namespace zyntax {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint32_t thread_number() {
  static std::atomic<uint32_t> next{0};
  thread_local uint32_t mine = next++;
  return mine;
}

thread_local int64_t compile_ns = 0;
const std::string kNone;
thread_local const std::string* running_kernel_name = &kNone;
thread_local const std::string* running_device_id = &kNone;

}  // namespace

Profiler& Profiler::global() {
  static Profiler* p = new Profiler();  // events are read at exit
  return *p;
}

void Profiler::enable() {
  origin_ns_ = steady_ns();
  enabled_ = true;
}

int64_t Profiler::now_ns() const { return steady_ns() - origin_ns_; }

void Profiler::record(ProfileEvent e) {
  e.thread = thread_number();
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

std::vector<ProfileEvent> Profiler::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

void Profiler::add_compile_ns(int64_t ns) { compile_ns += ns; }

namespace {
thread_local uint64_t disk_load_count = 0;
}  // namespace

void Profiler::note_disk_load() { ++disk_load_count; }

uint64_t Profiler::disk_loads() { return disk_load_count; }

int64_t Profiler::take_compile_ns() {
  int64_t n = compile_ns;
  compile_ns = 0;
  return n;
}

Profiler::Running::Running(const std::string& kernel, const std::string& device)
    : saved_kernel(running_kernel_name), saved_device(running_device_id) {
  running_kernel_name = &kernel;
  running_device_id = &device;
}

Profiler::Running::~Running() {
  running_kernel_name = saved_kernel;
  running_device_id = saved_device;
}

const std::string& Profiler::running_kernel() { return *running_kernel_name; }
const std::string& Profiler::running_device() { return *running_device_id; }

ProfileSpan::ProfileSpan(ProfileEvent::Kind kind, std::string name, std::string device)
    : on_(Profiler::global().enabled()) {
  if (!on_) return;
  e_.kind = kind;
  e_.name = std::move(name);
  e_.device = std::move(device);
  e_.start_ns = Profiler::global().now_ns();
}

ProfileSpan::~ProfileSpan() {
  if (!on_) return;
  e_.duration_ns = Profiler::global().now_ns() - e_.start_ns;
  Profiler::global().record(std::move(e_));
}

}  // namespace zyntax
