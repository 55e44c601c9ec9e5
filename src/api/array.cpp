#include <cstring>
#include <utility>

#include "api/api_internal.hpp"
#include "api/deferred_ops.hpp"
#include "zyntax/array.hpp"

namespace zyntax {

void check_elements(const char* op, size_t count, const std::vector<size_t>& shape) {
  size_t n = api::product(shape);
  if (n != count)
    throw ShapeError(std::string(op) + ": " + std::to_string(count) + " elements, but the shape " + api::shape_text(shape) +
                     " has " + std::to_string(n));
}

Array::Array(Buffer buffer, std::vector<size_t> shape) : buffer_(std::move(buffer)), shape_(std::move(shape)) {
  if (shape_.size() > 64) throw ShapeError("Array: " + std::to_string(shape_.size()) + " axes; tensors have at most 64");
  check_elements("Array", buffer_.size(), shape_);
}

Array Array::from_host(const ComputeDevice& device, const void* data, ElementType type, std::vector<size_t> shape,
                       bool copy) {
  return in_host_memory(device, data, type, std::move(shape), copy, nullptr);
}

Array Array::from_host(const ComputeDevice& device, const void* data, ElementType type, std::vector<size_t> shape,
                       std::shared_ptr<const void> owner) {
  return in_host_memory(device, data, type, std::move(shape), false, std::move(owner));
}

Array Array::in_host_memory(const ComputeDevice& device, const void* data, ElementType type, std::vector<size_t> shape,
                            bool copy, std::shared_ptr<const void> owner) {
  const DeviceImpl& dev = *device.impl();
  if (!device.impl()) throw ComputeError("Array::from_host: the device was moved from");
  size_t n = api::product(shape);  // ShapeError past 63 bits
  if (shape.size() > 64) throw ShapeError("Array::from_host: " + std::to_string(shape.size()) + " axes; tensors have at most 64");
  if (n > 0 && !data) throw ShapeError("Array::from_host: no data for " + std::to_string(n) + " elements");
  DType dtype = api::dtype_of(type);
  Shape flat{static_cast<int64_t>(n)};
  Tensor t;
  if (!copy) {
    if (dev.devices.size() != 1 || dev.device->info().type != "cpu")
      throw ComputeError("Array::from_host: only a CPU device reads host memory in place, not " + dev.description.id +
                         " (copy it)");
    // Kernels read and write the caller's memory; it stays the caller's.
    auto* bytes = static_cast<unsigned char*>(const_cast<void*>(data));
    t = Tensor::in_storage(dtype, flat, std::shared_ptr<unsigned char>(bytes, [owner = std::move(owner)](unsigned char*) {}));
  } else {
    t = Tensor::for_overwrite(dtype, flat);
    if (n > 0) std::memcpy(t.data_for_overwrite(), data, t.nbytes());
    t = api::placed(dev, std::move(t));
  }
  return Array(api::wrap(dev, std::move(t)), std::move(shape));
}

size_t Array::bytes() const {
  if (!buffer_.impl()) return 0;
  return static_cast<size_t>(buffer_.impl()->numel()) * dtype_size(buffer_.impl()->dtype());
}

void Array::copy_to_host(void* out, size_t bytes) const {
  if (bytes != this->bytes())
    throw ShapeError("Array::copy_to_host: " + std::to_string(bytes) + " bytes given for an array of " +
                     std::to_string(this->bytes()) + " (" + api::shape_text(shape_) + " " + element_type_name(element_type()) + ")");
  if (bytes == 0) return;
  std::memcpy(out, std::as_const(buffer_.impl()->value()).data(), bytes);
}

void* Array::host_data() const {
  if (!buffer_.impl()) return nullptr;
  if (buffer_.device().rfind("cpu", 0) != 0) return nullptr;
  api::DeferredOps::flush_all();  // what waits may read it, and the application may write it
  const Tensor& t = buffer_.impl()->value();
  buffer_.impl()->expose();
  return const_cast<void*>(t.data());
}

}  // namespace zyntax
