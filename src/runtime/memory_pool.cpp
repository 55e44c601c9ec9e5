#include "runtime/memory_pool.hpp"

namespace zyntax {

namespace {

std::string bytes_text(int64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

}  // namespace

Tensor MemoryPool::allocate(DType dtype, const Shape& shape) {
  int64_t need = shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype));
  std::lock_guard<std::mutex> lock(mu_);
  if (need > capacity_ - used_)
    throw DataError("memory pool on " + device_ + ": " + shape_str(shape) + " " + dtype_name(dtype) + " needs " +
                    bytes_text(need) + ", but only " + bytes_text(capacity_ - used_) + " of " + bytes_text(capacity_) +
                    " are free");
  Tensor t = Tensor::zeros(dtype, shape);
  t.set_device(device_);
  used_ += need;
  live_[t.data()] = need;
  return t;
}

void MemoryPool::free(const Tensor& t) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(t.data());
  if (it == live_.end())
    throw DataError("memory pool on " + device_ + ": this tensor (" + shape_str(t.shape()) +
                    ") is not a live allocation of the pool");
  used_ -= it->second;
  live_.erase(it);
}

void MemoryPool::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  used_ = 0;
  live_.clear();
}

int64_t MemoryPool::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

}  // namespace zyntax
