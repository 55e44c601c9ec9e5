// What the public API's handles hold: a Buffer is a runtime Tensor (flat,
// one axis) with the device it lives on; a ComputeDevice is a registry
// device. Shared by the files of src/api.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "interp/pending_block.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/split_launch.hpp"
#include "runtime/tensor.hpp"
#include "zyntax/buffer.hpp"
#include "zyntax/compute_device.hpp"

namespace zyntax {

namespace api {
class DeferredOps;
}

class BufferImpl {
 public:
  BufferImpl(Tensor t, std::string device) : device(std::move(device)), tensor_(std::move(t)) {}
  // An op's result, pending in `queue` (api/deferred_ops) until first read.
  BufferImpl(std::shared_ptr<PendingBlock> op, api::DeferredOps* queue, std::string device)
      : device(std::move(device)), pending_(std::move(op)), queue_(queue) {}

  // The elements (one axis), computed first where they are pending; a
  // ComputeError where the op computing them failed.
  Tensor& value();
  // Without computing anything.
  int64_t numel() const;
  DType dtype() const;
  // The op whose result this is, until the buffer is first read; else null.
  std::shared_ptr<PendingBlock> waiting() const;
  // Its memory handed to the application (Array::host_data,
  // device_memory_of), which may write it: ops reading it run at once.
  void expose() { exposed_ = true; }
  bool exposed() const { return exposed_; }

  std::string device;

 private:
  mutable std::mutex mu_;
  Tensor tensor_;
  std::shared_ptr<PendingBlock> pending_;
  api::DeferredOps* queue_ = nullptr;
  std::atomic<bool> exposed_{false};
};

class DeviceImpl {
 public:
  ~DeviceImpl();  // the last handle of a device computes what waits on it
  Device* device = nullptr;        // the first of `devices`
  std::vector<Device*> devices;    // more than one: ops are split over them
  bool model_parallel = false;
  bool fusion = true;              // ops wait and fuse (api/deferred_ops); false: each runs when called
  bool counted = false;            // one of the handles its device's queue counts
  DeviceDescription description;
};

namespace api {

DType dtype_of(ElementType t);
ElementType element_type_of(DType t);

// A buffer's new data placed on the device: copied into a GPU's own memory
// at once, where its kernels read it; a group's (and a CPU's) stay on the host.
Tensor placed(const DeviceImpl& dev, Tensor t);

// A new buffer on `dev` holding `t` (flattened).
Buffer wrap(const DeviceImpl& dev, Tensor t);
// A ShapeError for an empty buffer, a ComputeError for one on another device;
// `op` and `arg` name it.
void check_device(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg);
// The buffer's tensor (computed, where it is pending), checked to be on
// `dev`; `op` and `arg` name it in errors.
const Tensor& tensor_of(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg);

// "[3, 5]", for messages; the product of a shape (ShapeError past 63
// bits); a runtime Shape of it.
std::string shape_text(const std::vector<size_t>& shape);
size_t product(const std::vector<size_t>& shape);
Shape to_shape(const std::vector<size_t>& s);

// "matmul: argument b has 12 elements, but [k, n] = [4, 5] needs 20".
void check_size(const char* op, const char* arg, const Buffer& b, const std::vector<size_t>& shape,
                const char* shape_names);
void check_ids(const char* op, const char* arg, const Buffer& b);
// An in-place op's result (what waits on any device computed first, since
// it may read the buffer; bytes [offset, offset + b's bytes) of `result`)
// written into the buffer's own storage, so that every handle and view of
// it sees the change. A result a GPU holds becomes the buffer's bytes there
// (a device copy), the host's filled when the host reads them.
void write_into(Buffer& b, const Tensor& result, size_t offset = 0);

// Runs a stdlib op on the device: its kernel, the inputs (reshaped views of
// flat buffers), host integers and scalars by name. Kernel errors become
// ComputeError.
Tensor run_op(const DeviceImpl& dev, const std::string& op, const std::vector<Tensor>& inputs,
              const std::map<std::string, int64_t>& host_dims = {}, const std::map<std::string, Scalar>& scalars = {});

// Runs a compiled compute block on the device (the op library's, a
// program's); errors become ComputeError naming `name`.
Tensor run_compiled(const DeviceImpl& dev, CompiledCompute& kernel, const std::string& name, const std::vector<Tensor>& inputs,
                    const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars);

// The same, its errors as they come (Error with the source location,
// DataError).
// `bound`, where given: the kernel's dims for these inputs and host_dims,
// bound by the caller already.
Tensor launch_compiled(const DeviceImpl& dev, CompiledCompute& kernel, const std::vector<Tensor>& inputs,
                       const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars,
                       const std::map<std::string, int64_t>* bound = nullptr);

// Runs a built CIR kernel (already specialised) on the device.
Tensor run_kernel(const DeviceImpl& dev, const cir::Kernel& k, uint64_t hash, const std::vector<Tensor>& inputs);

}  // namespace api
}  // namespace zyntax
