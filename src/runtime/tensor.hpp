// A dense, contiguous, C-order tensor in host memory. Host code, the
// reference executor and the tests all hold data in this one type.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/dtype.hpp"
#include "support/scalar.hpp"

namespace zyntax {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);  // "[2, 3]", "[]" for a 0-d tensor
int64_t shape_numel(const Shape& s);    // 1 for a 0-d tensor
// Row-major strides in elements.
std::vector<int64_t> shape_strides(const Shape& s);

// A problem with data (shapes, dtypes, files): the message names the
// operation, the argument and the shapes involved. The caller adds the
// source location.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Tensor {
 public:
  Tensor() = default;  // a null tensor: valid() is false

  // Uninitialised storage (zero-filled, so nothing ever reads garbage).
  static Tensor empty(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape) { return empty(dtype, std::move(shape)); }
  // Storage that may hold anything (a recycled block): only for a result
  // that is written whole before anyone reads it.
  static Tensor for_overwrite(DType dtype, Shape shape);
  static Tensor full(DType dtype, Shape shape, const Scalar& value);
  static Tensor scalar(const Scalar& value);  // 0-d
  // The bytes of a tensor of this shape, or a DataError for a shape no
  // tensor can have (a negative or too large one).
  static size_t bytes_for(DType dtype, const Shape& shape);
  // A tensor over zeroed storage of bytes_for(dtype, shape) bytes that
  // another allocator made (page-locked memory from a GPU driver).
  static Tensor in_storage(DType dtype, Shape shape, std::shared_ptr<unsigned char> storage);

  bool valid() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_.at(static_cast<size_t>(axis)); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  template <class T>
  T* data_as() { return static_cast<T*>(data()); }
  template <class T>
  const T* data_as() const { return static_cast<const T*>(data()); }

  // Element access by flat (row-major) index, converting through Scalar.
  Scalar get(int64_t flat) const;
  void set(int64_t flat, const Scalar& value);  // converts value to dtype()
  double get_f64(int64_t flat) const { return get(flat).as_double(); }

  // A tensor sharing this storage with another shape of the same numel.
  Tensor reshaped(Shape shape) const;
  // A tensor over this one's bytes from `offset` on, of any dtype (the
  // arrays a GPU schedule placed in one block's shared memory); a
  // DataError where they do not fit.
  Tensor bytes_view(size_t offset, DType dtype, Shape shape) const;
  Tensor clone() const;
  // This tensor over the same bytes, whose storage also keeps `keeper`
  // alive (a mapping of the bytes into a GPU's address space).
  Tensor kept_with(std::shared_ptr<void> keeper) const;
  Tensor astype(DType dtype) const;

  // Which device holds the data ("cpu" for now; the runtime moves tensors).
  const std::string& device() const { return device_; }
  void set_device(std::string d) { device_ = std::move(d); }
  // True when both refer to the same storage.
  bool same_storage(const Tensor& o) const { return storage_ == o.storage_; }

 private:
  // calloc'd bytes: large zero tensors come as fresh zero pages from the
  // operating system, touched first by whichever thread writes them.
  std::shared_ptr<unsigned char> storage_;
  DType dtype_ = DType::F32;
  Shape shape_;
  std::string device_ = "cpu";
  unsigned char* raw() { return storage_.get(); }
  const unsigned char* raw() const { return storage_.get(); }
  static std::shared_ptr<unsigned char> allocate(size_t bytes);
  static Tensor make(DType dtype, Shape shape, bool recycled);
};

}  // namespace zyntax
