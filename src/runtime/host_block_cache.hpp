// Reuse of large host blocks between tensors.
//
// A fresh large allocation comes from the operating system as untouched
// pages, and the first write to each page faults: a kernel that writes a new
// 64 MiB output spends most of its time in the kernel, not copying. Blocks
// given back here are kept (up to a byte limit) and handed out again for the
// same size class, so outputs of repeated launches land in warm pages.
// Only storage that is fully overwritten before it is read may come from
// here: a reused block holds the bytes of its last owner.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace zyntax {

class HostBlockCache {
 public:
  // Blocks below this size go straight to malloc: small ones are cheap.
  static constexpr size_t kMinBytes = size_t{1} << 20;

  static HostBlockCache& global();

  // `bytes` of 64-byte aligned storage, returned to the cache when released.
  std::shared_ptr<unsigned char> acquire(size_t bytes);

  size_t cached_bytes() const;
  void clear();  // frees every cached block

 private:
  HostBlockCache() = default;
  void release(unsigned char* p, size_t size_class);

  mutable std::mutex mu_;
  std::multimap<size_t, unsigned char*> free_blocks_;  // by size class
  size_t cached_ = 0;
};

}  // namespace zyntax
