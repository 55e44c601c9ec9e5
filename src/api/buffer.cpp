// Buffer: a handle to a flat runtime tensor on a device.
#include <utility>

#include "api/api_internal.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax {

// ------------------------------------------------------------ Buffer

Buffer::Buffer() = default;
Buffer::~Buffer() = default;
Buffer::Buffer(const Buffer&) = default;
Buffer& Buffer::operator=(const Buffer&) = default;
Buffer::Buffer(Buffer&&) noexcept = default;
Buffer& Buffer::operator=(Buffer&&) noexcept = default;
Buffer::Buffer(std::shared_ptr<BufferImpl> impl) : impl_(std::move(impl)) {}

size_t Buffer::size() const { return impl_ ? static_cast<size_t>(impl_->numel()) : 0; }
ElementType Buffer::element_type() const { return impl_ ? api::element_type_of(impl_->dtype()) : ElementType::F32; }
std::string Buffer::device() const { return impl_ ? impl_->device : ""; }

std::vector<float> Buffer::to_vector() const {
  if (!impl_) return {};
  const Tensor& t = impl_->value();
  Tensor f = t.dtype() == DType::F32 ? t : t.astype(DType::F32);
  const float* p = static_cast<const float*>(std::as_const(f).data());  // a read: a GPU's copy stays
  return std::vector<float>(p, p + f.numel());
}

std::vector<uint32_t> Buffer::to_vector_u32() const {
  if (!impl_) return {};
  if (impl_->dtype() != DType::U32)
    throw ShapeError(std::string("to_vector_u32: the buffer holds ") + element_type_name(element_type()) + ", not u32");
  const Tensor& t = impl_->value();
  const uint32_t* p = static_cast<const uint32_t*>(std::as_const(t).data());
  return std::vector<uint32_t>(p, p + t.numel());
}

}  // namespace zyntax
