// A memory pool of a fixed capacity on one device (`memory_pool(device=,
// size=)`): tensors allocated from it count against the capacity until freed
// or until the pool is reset. On the CPU the pool bounds and accounts host
// memory; device pools with size classes come with the GPU runtime.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "runtime/tensor.hpp"

namespace zyntax {

class MemoryPool {
 public:
  MemoryPool(std::string device, int64_t capacity_bytes) : device_(std::move(device)), capacity_(capacity_bytes) {}

  // Zero-filled; DataError when it does not fit in what is left.
  Tensor allocate(DType dtype, const Shape& shape);
  // DataError if `t` is not a live allocation of this pool.
  void free(const Tensor& t);
  void reset();

  const std::string& device() const { return device_; }
  int64_t capacity() const { return capacity_; }
  int64_t used() const;

 private:
  std::string device_;
  int64_t capacity_;
  mutable std::mutex mu_;
  int64_t used_ = 0;
  std::map<const void*, int64_t> live_;  // storage → bytes
};

}  // namespace zyntax
