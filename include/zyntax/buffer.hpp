// A buffer of elements on a compute device. A Buffer is a handle: copies
// share the storage (as PyTorch tensors do); ComputeDevice::copy_buffer makes
// a separate one. In-place operations (add_assign, zero_buffer,
// matmul_accumulate, adamw_step) write into the buffer's storage, which
// every handle, and every view made with to_device(b, false), sees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zyntax/export.hpp"

namespace zyntax {

// What a buffer stores. f16 and bf16 are storage formats: the op library's
// operations read them as f32. A ZynML program's kernels (zyntax/program.hpp)
// take and give any of them.
enum class ElementType { F32, U32, F16, BF16, F64, I8, I16, I32, I64, U8, U16, U64, Bool };

ZYNTAX_API const char* element_type_name(ElementType t);

class BufferImpl;

class ZYNTAX_API Buffer {
 public:
  Buffer();  // empty: 0 elements, no device
  ~Buffer();
  Buffer(const Buffer&);
  Buffer& operator=(const Buffer&);
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;

  size_t size() const;  // elements
  bool empty() const { return size() == 0; }
  ElementType element_type() const;
  // The id of the device holding it ("cpu", "cuda:0").
  std::string device() const;

  // The elements, converted to f32 (u32 as its value); waits for pending work.
  std::vector<float> to_vector() const;
  // The elements of a u32 buffer.
  std::vector<uint32_t> to_vector_u32() const;

  // For the library itself.
  explicit Buffer(std::shared_ptr<BufferImpl> impl);
  const std::shared_ptr<BufferImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<BufferImpl> impl_;
};

}  // namespace zyntax
