// BufferPool: the runtime's memory pool behind the API, keyed by buffer.
#include <limits>
#include <mutex>

#include "api/api_internal.hpp"
#include "api/deferred_ops.hpp"
#include "runtime/memory_pool.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax {

// ------------------------------------------------------------ memory pools

class PoolImpl {
 public:
  PoolImpl(std::string device, int64_t bytes) : pool(device, bytes), device(std::move(device)) {}
  MemoryPool pool;  // the runtime's pool: the accounting and its errors
  std::string device;
  // Each live buffer and the allocation it was given (in-place ops may
  // since have replaced its storage).
  std::mutex mu;
  std::map<std::shared_ptr<BufferImpl>, Tensor> live;
};

BufferPool::BufferPool(std::shared_ptr<PoolImpl> impl) : impl_(std::move(impl)) {}

Buffer BufferPool::alloc(size_t n, ElementType type) {
  Tensor t;
  try {
    t = impl_->pool.allocate(api::dtype_of(type), {static_cast<int64_t>(n)});
  } catch (const DataError& e) {
    throw ComputeError(std::string("alloc: ") + e.what());
  }
  auto b = std::make_shared<BufferImpl>(t, impl_->device);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->live.emplace(b, t);
  return Buffer(b);
}

void BufferPool::free(const Buffer& b) {
  api::DeferredOps::flush_all();  // what waits may read it
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->live.find(b.impl());
  if (it == impl_->live.end()) throw ComputeError("free: the buffer is not a live allocation of this pool");
  impl_->pool.free(it->second);
  impl_->live.erase(it);
}

void BufferPool::reset() {
  api::DeferredOps::flush_all();  // what waits may read its buffers
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->pool.reset();
  impl_->live.clear();
}
size_t BufferPool::capacity() const { return static_cast<size_t>(impl_->pool.capacity()); }
size_t BufferPool::used() const { return static_cast<size_t>(impl_->pool.used()); }

BufferPool ComputeDevice::memory_pool(size_t bytes) const {
  // The pool counts in int64: a larger size is no size at all.
  if (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max()))
    throw ShapeError("memory_pool: argument bytes is " + std::to_string(bytes) + ", more than a pool can hold (2^63 - 1)");
  return BufferPool(std::make_shared<PoolImpl>(dev().description.id, static_cast<int64_t>(bytes)));
}

}  // namespace zyntax
