#include "runtime/host_block_cache.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace zyntax {

namespace {

// At most this much is kept: a quarter of a typical machine's memory would
// be too much to hold idle, a few large tensors is what repeated launches need.
constexpr size_t kMaxCachedBytes = size_t{1} << 30;

// Sizes round up to 1/8 steps of their power of two, so near sizes share blocks.
size_t size_class(size_t bytes) {
  size_t p = 1;
  while (p < bytes) p <<= 1;
  size_t step = p >= 64 ? p / 8 : 8;
  return (bytes + step - 1) / step * step;
}

}  // namespace

HostBlockCache& HostBlockCache::global() {
  // Never destroyed: tensors held by static objects may be released late.
  static HostBlockCache* cache = new HostBlockCache();
  return *cache;
}

std::shared_ptr<unsigned char> HostBlockCache::acquire(size_t bytes) {
  if (bytes < kMinBytes) {
    auto* p = static_cast<unsigned char*>(std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)));
    if (!p) throw std::bad_alloc();
    return std::shared_ptr<unsigned char>(p, [](unsigned char* q) { std::free(q); });
  }
  size_t cls = size_class(bytes);
  unsigned char* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_blocks_.find(cls);
    if (it != free_blocks_.end()) {
      p = it->second;
      free_blocks_.erase(it);
      cached_ -= cls;
    }
  }
  if (!p) p = static_cast<unsigned char*>(std::aligned_alloc(64, cls));
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<unsigned char>(p, [this, cls](unsigned char* q) { release(q, cls); });
}

void HostBlockCache::release(unsigned char* p, size_t cls) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + cls <= kMaxCachedBytes) {
      free_blocks_.emplace(cls, p);
      cached_ += cls;
      return;
    }
  }
  std::free(p);
}

size_t HostBlockCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

void HostBlockCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [cls, p] : free_blocks_) std::free(p);
  free_blocks_.clear();
  cached_ = 0;
}

}  // namespace zyntax
