// The helpers every file of the API shares (api_internal.hpp), and the
// public error types, version and element type names.
#include "api/api_internal.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "api/deferred_ops.hpp"
#include "api/op_library.hpp"
#include "support/diagnostics.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax {

// ------------------------------------------------------------ errors, version

ShapeError::ShapeError(const std::string& message) : std::invalid_argument(message) {}
ComputeError::ComputeError(const std::string& message) : std::runtime_error(message) {}
ProgramError::ProgramError(const std::string& message) : std::runtime_error(message) {}

const char* version() { return ZYNTAX_VERSION; }

const char* element_type_name(ElementType t) {
  switch (t) {
    case ElementType::F32: return "f32";
    case ElementType::U32: return "u32";
    case ElementType::F16: return "f16";
    case ElementType::BF16: return "bf16";
    default: return dtype_name(api::dtype_of(t));
  }
}

// ------------------------------------------------------------ buffers and devices

Tensor& BufferImpl::value() {
  std::shared_ptr<PendingBlock> op;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending_) return tensor_;
    op = pending_;
  }
  queue_->flush();  // this op, and with it everything waiting on the device
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_) {
    if (!op->computed())
      throw ComputeError(op->label + ": this buffer was not computed: an op waiting with it failed (its error was raised then)");
    tensor_ = op->result.reshaped({op->result.numel()});
    pending_.reset();
  }
  return tensor_;
}

int64_t BufferImpl::numel() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_ ? shape_numel(pending_->shape) : tensor_.numel();
}

DType BufferImpl::dtype() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_ ? pending_->dtype : tensor_.dtype();
}

std::shared_ptr<PendingBlock> BufferImpl::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

DeviceImpl::~DeviceImpl() {
  // The ops nobody read still run, and their checks, when the device's
  // last handle goes; there is no caller left to take an error.
  try {
    if (counted && api::DeferredOps::of(*device).detach() == 0) api::flush_deferred(*this);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zyntax: an op whose result was never read failed: %s\n", e.what());
  }
}

namespace api {

DType dtype_of(ElementType t) {
  switch (t) {
    case ElementType::F32: return DType::F32;
    case ElementType::U32: return DType::U32;
    case ElementType::F16: return DType::F16;
    case ElementType::BF16: return DType::BF16;
    case ElementType::F64: return DType::F64;
    case ElementType::I8: return DType::I8;
    case ElementType::I16: return DType::I16;
    case ElementType::I32: return DType::I32;
    case ElementType::I64: return DType::I64;
    case ElementType::U8: return DType::U8;
    case ElementType::U16: return DType::U16;
    case ElementType::U64: return DType::U64;
    case ElementType::Bool: return DType::Bool;
  }
  return DType::F32;
}

ElementType element_type_of(DType t) {
  switch (t) {
    case DType::U32: return ElementType::U32;
    case DType::F16: return ElementType::F16;
    case DType::BF16: return ElementType::BF16;
    case DType::F64: return ElementType::F64;
    case DType::I8: return ElementType::I8;
    case DType::I16: return ElementType::I16;
    case DType::I32: return ElementType::I32;
    case DType::I64: return ElementType::I64;
    case DType::U8: return ElementType::U8;
    case DType::U16: return ElementType::U16;
    case DType::U64: return ElementType::U64;
    case DType::Bool: return ElementType::Bool;
    default: return ElementType::F32;
  }
}

std::string shape_text(const std::vector<size_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

size_t product(const std::vector<size_t>& shape) {
  uint64_t n = 1;
  for (size_t d : shape)
    if (d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) ||
        n > static_cast<uint64_t>(INT64_MAX))
      throw ShapeError("the shape " + shape_text(shape) + " is more elements than a buffer can hold");
  return n;
}

Shape to_shape(const std::vector<size_t>& s) {
  Shape out;
  for (size_t d : s) out.push_back(static_cast<int64_t>(d));
  return out;
}

Tensor placed(const DeviceImpl& dev, Tensor t) {
  if (dev.devices.size() == 1 && dev.device->info().type == "gpu") return dev.device->copy_in(t);
  return t;
}

Buffer wrap(const DeviceImpl& dev, Tensor t) {
  if (t.shape().size() != 1) t = t.reshaped({t.numel()});
  return Buffer(std::make_shared<BufferImpl>(std::move(t), dev.description.id));
}

void check_device(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg) {
  if (!b.impl()) throw ShapeError(std::string(op) + ": argument " + arg + " is an empty buffer");
  if (b.impl()->device != dev.description.id)
    throw ComputeError(std::string(op) + ": argument " + arg + " is on device " + b.impl()->device + ", not on " +
                       dev.description.id);
}

const Tensor& tensor_of(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg) {
  check_device(dev, b, op, arg);
  return b.impl()->value();
}

void check_size(const char* op, const char* arg, const Buffer& b, const std::vector<size_t>& shape, const char* names) {
  // Sizes whose product leaves 63 bits describe no buffer (and would wrap).
  uint64_t want = 1;
  bool overflow = false;
  for (size_t d : shape)
    overflow = overflow || d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(want, static_cast<uint64_t>(d), &want) ||
               want > static_cast<uint64_t>(INT64_MAX);
  if (overflow)
    throw ShapeError(std::string(op) + ": " + names + " = " + shape_text(shape) + " is more elements than a buffer can hold (argument " +
                     arg + " has " + std::to_string(b.size()) + ")");
  if (b.size() != want)
    throw ShapeError(std::string(op) + ": argument " + arg + " has " + std::to_string(b.size()) + " elements, but " +
                     names + " = " + shape_text(shape) + " needs " + std::to_string(want));
}

void write_into(Buffer& b, const Tensor& result, size_t offset) {
  DeferredOps::flush_all();
  Tensor& t = b.impl()->value();
  size_t bytes = t.nbytes();
  if (offset > result.nbytes() || result.nbytes() - offset < bytes) throw std::logic_error("in-place result of the wrong size");
  if (std::shared_ptr<const DeviceMirror> m = result.mirror()) {
    std::shared_ptr<const DeviceMirror> mine = offset == 0 && bytes == result.nbytes() ? m : m->part(offset, bytes);
    if (mine && t.set_mirror(std::move(mine), /*host_current=*/false)) return;
  }
  std::memcpy(t.data_for_overwrite(), static_cast<const unsigned char*>(result.data()) + offset, bytes);
}

void check_ids(const char* op, const char* arg, const Buffer& b) {
  if (b.element_type() != ElementType::U32)
    throw ShapeError(std::string(op) + ": argument " + arg + " must hold u32 token ids, not " +
                     element_type_name(b.element_type()));
}

namespace {

template <class F>
Tensor translating_errors(const std::string& op, F&& run) {
  try {
    return run();
  } catch (const Error& e) {
    throw ComputeError(op + ": " + e.what());
  } catch (const DataError& e) {
    throw ComputeError(op + ": " + e.what());
  }
}

SplitMode split_mode(const DeviceImpl& dev) { return dev.model_parallel ? SplitMode::Model : SplitMode::Data; }

}  // namespace

Tensor run_op(const DeviceImpl& dev, const std::string& op, const std::vector<Tensor>& inputs,
              const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars) {
  return run_compiled(dev, OpLibrary::instance().op(op), op, inputs, host_dims, scalars);
}

Tensor run_compiled(const DeviceImpl& dev, CompiledCompute& kernel, const std::string& name, const std::vector<Tensor>& inputs,
                    const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars) {
  return translating_errors(name, [&] { return launch_compiled(dev, kernel, inputs, host_dims, scalars); });
}

Tensor launch_compiled(const DeviceImpl& dev, CompiledCompute& kernel, const std::vector<Tensor>& inputs,
                       const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars,
                       const std::map<std::string, int64_t>* bound) {
  if (dev.devices.size() > 1) return launch_split(kernel, dev.devices, split_mode(dev), inputs, host_dims, scalars);
  DeferredOps::of(*dev.device).count_launch();
  return bound ? kernel.launch_bound(*dev.device, inputs, *bound, scalars) : kernel.launch(*dev.device, inputs, host_dims, scalars);
}

Tensor run_kernel(const DeviceImpl& dev, const cir::Kernel& k, uint64_t hash, const std::vector<Tensor>& inputs) {
  return translating_errors(k.name, [&] {
    if (dev.devices.size() > 1) {
      CompiledCompute once(k);  // already specialised: nothing to bind
      return launch_split(once, dev.devices, split_mode(dev), inputs, {}, {});
    }
    DeferredOps::of(*dev.device).count_launch();
    return dev.device->run(k, hash, inputs, {});
  });
}

}  // namespace api

}  // namespace zyntax
