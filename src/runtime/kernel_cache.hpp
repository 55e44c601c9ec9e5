// What a device built for a kernel, kept under the hash of the kernel's CIR
// so that a kernel launched again is not built again. Safe to share between
// threads (asynchronous launches).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "runtime/profiler.hpp"
#include "support/stack.hpp"

namespace zyntax {

template <class T>
class KernelCache {
 public:
  // The cached value for `key`, built with `build()` on first use.
  std::shared_ptr<T> get(uint64_t key, const std::function<std::shared_ptr<T>()>& build) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        ++hits_;
        return it->second;
      }
    }
    // Outside the lock: building may be slow. Compiling walks the kernel's
    // trees recursively, so it gets a deep stack on any thread.
    ProfileSpan span(ProfileEvent::Kind::Compile, Profiler::running_kernel(), Profiler::running_device());
    uint64_t loads = Profiler::disk_loads();
    std::shared_ptr<T> built = with_deep_stack(build);
    span.event().from_disk = Profiler::disk_loads() != loads;
    if (Profiler::global().enabled()) Profiler::add_compile_ns(Profiler::global().now_ns() - span.event().start_ns);
    std::lock_guard<std::mutex> lock(mu_);
    ++misses_;
    return entries_.emplace(key, std::move(built)).first->second;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }
  uint64_t hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
  }
  uint64_t misses() const {
    std::lock_guard<std::mutex> lock(mu_);
    return misses_;
  }

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<T>> entries_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace zyntax
