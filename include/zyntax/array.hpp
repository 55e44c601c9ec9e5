// A buffer with a shape: what a ZynML program's kernels take and give
// (zyntax/program.hpp). Like a Buffer, an Array is a handle: copies share
// the storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <memory>
#include <vector>

#include "zyntax/buffer.hpp"
#include "zyntax/export.hpp"

namespace zyntax {

class ComputeDevice;

class ZYNTAX_API Array {
 public:
  Array() = default;
  // ShapeError when the shape's elements are not the buffer's.
  Array(Buffer buffer, std::vector<size_t> shape);

  // Host data of `type` and `shape` (row-major, contiguous) on `device`: a
  // copy; or, with copy = false on a CPU device, the caller's memory itself,
  // which kernels then read in place (it must outlive the Array and every
  // result that is a view of it).
  static Array from_host(const ComputeDevice& device, const void* data, ElementType type, std::vector<size_t> shape,
                         bool copy = true);
  // The caller's memory itself on a CPU device, kept alive by `owner`
  // (another library's tensor) for as long as anything reads it: the Array,
  // its views, and ops still waiting to run on it.
  static Array from_host(const ComputeDevice& device, const void* data, ElementType type, std::vector<size_t> shape,
                         std::shared_ptr<const void> owner);
  template <class T>
  static Array from_vector(const ComputeDevice& device, const std::vector<T>& data, std::vector<size_t> shape);

  const Buffer& buffer() const { return buffer_; }
  const std::vector<size_t>& shape() const { return shape_; }
  ElementType element_type() const { return buffer_.element_type(); }
  size_t size() const { return buffer_.size(); }  // elements
  size_t bytes() const;

  // Copies the elements to host memory of bytes() bytes (ShapeError if
  // `bytes` differs); waits for pending work.
  void copy_to_host(void* out, size_t bytes) const;
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> out(size());
    copy_to_host(out.data(), out.size() * sizeof(T));
    return out;
  }
  // The host address of the elements where they live in host memory (a CPU
  // device), else null: for zero-copy exchange (DLPack).
  void* host_data() const;

 private:
  static Array in_host_memory(const ComputeDevice& device, const void* data, ElementType type, std::vector<size_t> shape,
                              bool copy, std::shared_ptr<const void> owner);

  Buffer buffer_;
  std::vector<size_t> shape_;
};

// ShapeError unless `shape` has `count` elements: "OP: 5 elements, but the
// shape [2, 3] has 6".
ZYNTAX_API void check_elements(const char* op, size_t count, const std::vector<size_t>& shape);

// The element type of a C++ type (float -> F32, int64_t -> I64, ...).
template <class T>
constexpr ElementType element_type_for();
template <> constexpr ElementType element_type_for<float>() { return ElementType::F32; }
template <> constexpr ElementType element_type_for<double>() { return ElementType::F64; }
template <> constexpr ElementType element_type_for<int8_t>() { return ElementType::I8; }
template <> constexpr ElementType element_type_for<int16_t>() { return ElementType::I16; }
template <> constexpr ElementType element_type_for<int32_t>() { return ElementType::I32; }
template <> constexpr ElementType element_type_for<int64_t>() { return ElementType::I64; }
template <> constexpr ElementType element_type_for<uint8_t>() { return ElementType::U8; }
template <> constexpr ElementType element_type_for<uint16_t>() { return ElementType::U16; }
template <> constexpr ElementType element_type_for<uint32_t>() { return ElementType::U32; }
template <> constexpr ElementType element_type_for<uint64_t>() { return ElementType::U64; }
template <> constexpr ElementType element_type_for<bool>() { return ElementType::Bool; }

template <class T>
Array Array::from_vector(const ComputeDevice& device, const std::vector<T>& data, std::vector<size_t> shape) {
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no contiguous storage: use uint8_t and ElementType::Bool");
  check_elements("Array::from_vector", data.size(), shape);
  return from_host(device, data.data(), element_type_for<T>(), std::move(shape));
}

}  // namespace zyntax
