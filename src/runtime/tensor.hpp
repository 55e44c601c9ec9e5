// A dense, contiguous, C-order tensor in host memory. Host code, the
// reference executor and the tests all hold data in this one type.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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

// A copy of a tensor's bytes in a device's own memory (a GPU's), which the
// device's kernels read without copying them in again. A mirror never
// changes once made: kernels write new tensors, and a host write to the
// tensor drops its mirror instead of updating it.
class DeviceMirror {
 public:
  virtual ~DeviceMirror() = default;
  // The device holding the bytes ("cuda:0").
  virtual const std::string& device() const = 0;
  // Copies the bytes into host memory, waiting for the copy.
  virtual void download(void* host, size_t bytes) const = 0;
  // A new mirror on the same device holding bytes [offset, offset + bytes)
  // of this one (copied there), or null where the device cannot.
  virtual std::shared_ptr<const DeviceMirror> part(size_t offset, size_t bytes) const { return nullptr; }
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

  // The host's bytes. Reading them first fills them from the device where
  // a device holds the only current copy (a kernel's output on a GPU);
  // the non-const form, through which the host may write, also drops the
  // device's copy.
  void* data() {
    if (residence_) residence_->for_host_write();
    return storage_.get();
  }
  const void* data() const {
    if (residence_) residence_->for_host_read();
    return storage_.get();
  }
  // The host's bytes for a write of every one of them (a fill): a device's
  // copy is dropped without being copied back first, unless this is a view
  // of part of a storage, whose other bytes must stay current.
  void* data_for_overwrite() {
    if (residence_ && residence_->covers(storage_.get(), nbytes())) residence_->discard();
    else if (residence_) residence_->for_host_write();
    return storage_.get();
  }
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
  // A new tensor holding a copy of those bytes: made on the device holding
  // this tensor's bytes where one does (DeviceMirror::part), else on the host.
  Tensor bytes_copy(size_t offset, DType dtype, Shape shape) const;
  Tensor clone() const;
  // This tensor over the same bytes, whose storage also keeps `keeper`
  // alive (a mapping of the bytes into a GPU's address space).
  Tensor kept_with(std::shared_ptr<void> keeper) const;
  Tensor astype(DType dtype) const;

  // Which device the tensor is placed on ("cpu", "cuda:0").
  const std::string& device() const { return device_; }
  // A device's copy of the whole tensor where one is current, else null.
  std::shared_ptr<const DeviceMirror> mirror() const;
  // Records `m` as a device's copy of these bytes, for every handle of the
  // storage. `host_current`: whether the host's bytes are the same (an
  // upload), or are to be filled from the device when the host first reads
  // them (a kernel's output). A later host write drops the mirror. False,
  // and nothing recorded, for a view of part of a storage (bytes_view).
  bool set_mirror(std::shared_ptr<const DeviceMirror> m, bool host_current) const;
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

  // Where the storage's current bytes are, shared by every handle and view
  // of one storage: the host's alone, the host's and a device's mirror, or
  // the mirror's alone (the host's to be filled on first access).
  class Residence {
   public:
    Residence(unsigned char* host, size_t bytes) : host_(host), bytes_(bytes) {}
    void for_host_read() {
      if (state_.load(std::memory_order_acquire) == kDeviceOnly) fetch(false);
    }
    void for_host_write() {
      if (state_.load(std::memory_order_acquire) != kHostOnly) fetch(true);
    }
    bool covers(const unsigned char* host, size_t bytes) const { return host == host_ && bytes == bytes_; }
    void discard();  // the mirror goes, its bytes not copied back
    std::shared_ptr<const DeviceMirror> mirror();
    void set(std::shared_ptr<const DeviceMirror> m, bool host_current);

   private:
    enum : int { kHostOnly, kBoth, kDeviceOnly };
    void fetch(bool drop_mirror);
    unsigned char* const host_;
    const size_t bytes_;
    std::atomic<int> state_{kHostOnly};
    std::mutex mu_;
    std::shared_ptr<const DeviceMirror> mirror_;  // under mu_
  };
  std::shared_ptr<Residence> residence_;

  unsigned char* raw() { return static_cast<unsigned char*>(data()); }
  const unsigned char* raw() const { return static_cast<const unsigned char*>(data()); }
  static std::shared_ptr<unsigned char> allocate(size_t bytes);
  static Tensor make(DType dtype, Shape shape, bool recycled);
};

}  // namespace zyntax
