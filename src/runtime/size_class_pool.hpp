// A caching allocator over a device's raw allocator (cuMemAlloc on a GPU).
// Requests are rounded up to size classes (powers of two from 256 bytes to
// 2 MiB, then whole multiples of 2 MiB) and released blocks stay on a free
// list per class, so repeated launches of the same shapes take nothing from
// the driver. A limit bounds the bytes handed out; when the raw allocator
// fails, the cached blocks are given back and it is tried once more. Every
// failure is a DataError that names the device, what was asked and what is
// left. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace zyntax {

class SizeClassPool {
 public:
  using RawAllocate = std::function<uint64_t(size_t bytes)>;  // 0 when out of memory
  using RawFree = std::function<void(uint64_t address)>;

  SizeClassPool(std::string device, RawAllocate allocate, RawFree free, uint64_t limit = UINT64_MAX);
  ~SizeClassPool();  // gives every block back, live or cached
  SizeClassPool(const SizeClassPool&) = delete;
  SizeClassPool& operator=(const SizeClassPool&) = delete;

  // A block of at least `bytes` (a zero-byte request gets the smallest class).
  uint64_t allocate(size_t bytes);
  // DataError if `address` is not a live block of this pool.
  void release(uint64_t address);
  // Gives the cached (free) blocks back to the raw allocator.
  void trim();
  void set_limit(uint64_t bytes);

  struct Stats {
    uint64_t in_use = 0;  // bytes of live blocks (by class size)
    uint64_t cached = 0;  // bytes of free blocks kept
    uint64_t limit = 0;
    uint64_t raw_allocations = 0;  // calls that reached the raw allocator
  };
  Stats stats() const;

  static size_t size_class(size_t bytes);

 private:
  void trim_locked();

  std::string device_;
  RawAllocate raw_allocate_;
  RawFree raw_free_;
  uint64_t limit_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<uint64_t>> free_;  // class → cached blocks
  std::map<uint64_t, size_t> live_;              // address → class
  Stats stats_;
};

// "1.5 GiB", "512 B": sizes in messages.
std::string format_bytes(uint64_t bytes);

}  // namespace zyntax
