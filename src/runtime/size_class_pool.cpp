#include "runtime/size_class_pool.hpp"

#include <cstdio>

#include "runtime/tensor.hpp"

namespace zyntax {

namespace {

constexpr size_t kSmallestClass = 256;
constexpr size_t kLargeStep = size_t{2} << 20;  // 2 MiB

}  // namespace

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

size_t SizeClassPool::size_class(size_t bytes) {
  if (bytes <= kSmallestClass) return kSmallestClass;
  if (bytes > kLargeStep) {
    if (bytes > SIZE_MAX - kLargeStep) return 0;  // no class: too large for any device
    return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
  }
  size_t c = kSmallestClass;
  while (c < bytes) c <<= 1;
  return c;
}

SizeClassPool::SizeClassPool(std::string device, RawAllocate allocate, RawFree free, uint64_t limit)
    : device_(std::move(device)), raw_allocate_(std::move(allocate)), raw_free_(std::move(free)), limit_(limit) {
  stats_.limit = limit;
}

SizeClassPool::~SizeClassPool() {
  std::lock_guard<std::mutex> lock(mu_);
  trim_locked();
  for (const auto& [address, size] : live_) raw_free_(address);
}

uint64_t SizeClassPool::allocate(size_t bytes) {
  size_t c = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (c == 0 || c > limit_ || stats_.in_use > limit_ - c) {
    uint64_t left = limit_ > stats_.in_use ? limit_ - stats_.in_use : 0;
    throw DataError(device_ + ": memory limit reached: asked for " + format_bytes(bytes) + ", " + format_bytes(left) +
                    " left of the " + format_bytes(limit_) + " limit (" + format_bytes(stats_.in_use) + " in use)");
  }
  uint64_t address = 0;
  auto it = free_.find(c);
  if (it != free_.end() && !it->second.empty()) {
    address = it->second.back();
    it->second.pop_back();
    stats_.cached -= c;
  } else {
    ++stats_.raw_allocations;
    address = raw_allocate_(c);
    if (!address && stats_.cached > 0) {  // give the cache back, then try once more
      trim_locked();
      address = raw_allocate_(c);
    }
    if (!address)
      throw DataError(device_ + ": out of memory: asked for " + format_bytes(bytes) + " with " +
                      format_bytes(stats_.in_use) + " in use");
  }
  live_[address] = c;
  stats_.in_use += c;
  return address;
}

void SizeClassPool::release(uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(address);
  if (it == live_.end()) throw DataError(device_ + ": releasing memory that is not a live allocation of its pool");
  size_t c = it->second;
  live_.erase(it);
  stats_.in_use -= c;
  free_[c].push_back(address);
  stats_.cached += c;
}

void SizeClassPool::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  trim_locked();
}

void SizeClassPool::trim_locked() {
  for (auto& [c, blocks] : free_)
    for (uint64_t a : blocks) raw_free_(a);
  free_.clear();
  stats_.cached = 0;
}

void SizeClassPool::set_limit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = bytes;
  stats_.limit = bytes;
}

SizeClassPool::Stats SizeClassPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace zyntax
