#include <cmath>
#include <cstring>
#include <mutex>

#include "api/api_internal.hpp"
#include "api/op_library.hpp"
#include "api/trace.hpp"
#include "cir/hash.hpp"
#include "runtime/device.hpp"
#include "runtime/memory_pool.hpp"
#include "support/diagnostics.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax {

// ------------------------------------------------------------ errors, version

ShapeError::ShapeError(const std::string& message) : std::invalid_argument(message) {}
ComputeError::ComputeError(const std::string& message) : std::runtime_error(message) {}

const char* version() { return ZYNTAX_VERSION; }

const char* element_type_name(ElementType t) {
  switch (t) {
    case ElementType::F32: return "f32";
    case ElementType::U32: return "u32";
    case ElementType::F16: return "f16";
    case ElementType::BF16: return "bf16";
  }
  return "?";
}

namespace api {

DType dtype_of(ElementType t) {
  switch (t) {
    case ElementType::F32: return DType::F32;
    case ElementType::U32: return DType::U32;
    case ElementType::F16: return DType::F16;
    case ElementType::BF16: return DType::BF16;
  }
  return DType::F32;
}

ElementType element_type_of(DType t) {
  switch (t) {
    case DType::U32: return ElementType::U32;
    case DType::F16: return ElementType::F16;
    case DType::BF16: return ElementType::BF16;
    default: return ElementType::F32;
  }
}

namespace {

std::string shape_text(const std::vector<size_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

size_t product(const std::vector<size_t>& shape) {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}

Shape to_shape(const std::vector<size_t>& s) {
  Shape out;
  for (size_t d : s) out.push_back(static_cast<int64_t>(d));
  return out;
}

}  // namespace

Buffer wrap(const DeviceImpl& dev, Tensor t) {
  if (t.shape().size() != 1) t = t.reshaped({t.numel()});
  return Buffer(std::make_shared<BufferImpl>(std::move(t), dev.description.id));
}

const Tensor& tensor_of(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg) {
  if (!b.impl()) throw ShapeError(std::string(op) + ": argument " + arg + " is an empty buffer");
  if (b.impl()->device != dev.description.id)
    throw ComputeError(std::string(op) + ": argument " + arg + " is on device " + b.impl()->device + ", not on " +
                       dev.description.id);
  return b.impl()->tensor;
}

void check_size(const char* op, const char* arg, const Buffer& b, const std::vector<size_t>& shape, const char* names) {
  size_t want = product(shape);
  if (b.size() != want)
    throw ShapeError(std::string(op) + ": argument " + arg + " has " + std::to_string(b.size()) + " elements, but " +
                     names + " = " + shape_text(shape) + " needs " + std::to_string(want));
}

void write_into(Buffer& b, const void* data, size_t bytes) {
  Tensor& t = b.impl()->tensor;
  if (static_cast<size_t>(t.nbytes()) != bytes) throw std::logic_error("in-place result of the wrong size");
  std::memcpy(t.data(), data, bytes);
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

}  // namespace

SplitMode split_mode(const DeviceImpl& dev) { return dev.model_parallel ? SplitMode::Model : SplitMode::Data; }

Tensor run_op(const DeviceImpl& dev, const std::string& op, const std::vector<Tensor>& inputs,
              const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars) {
  CompiledCompute& kernel = OpLibrary::instance().op(op);
  return translating_errors(op, [&] {
    if (dev.devices.size() > 1) return launch_split(kernel, dev.devices, split_mode(dev), inputs, host_dims, scalars);
    return kernel.launch(*dev.device, inputs, host_dims, scalars);
  });
}

Tensor run_kernel(const DeviceImpl& dev, const cir::Kernel& k, uint64_t hash, const std::vector<Tensor>& inputs) {
  return translating_errors(k.name, [&] {
    if (dev.devices.size() > 1) {
      CompiledCompute once(k);  // already specialised: nothing to bind
      return launch_split(once, dev.devices, split_mode(dev), inputs, {}, {});
    }
    return dev.device->run(k, hash, inputs, {});
  });
}

}  // namespace api

using api::check_ids;
using api::check_size;
using api::run_op;
using api::tensor_of;
using api::wrap;

// ------------------------------------------------------------ Buffer

Buffer::Buffer() = default;
Buffer::~Buffer() = default;
Buffer::Buffer(const Buffer&) = default;
Buffer& Buffer::operator=(const Buffer&) = default;
Buffer::Buffer(Buffer&&) noexcept = default;
Buffer& Buffer::operator=(Buffer&&) noexcept = default;
Buffer::Buffer(std::shared_ptr<BufferImpl> impl) : impl_(std::move(impl)) {}

size_t Buffer::size() const { return impl_ ? static_cast<size_t>(impl_->tensor.numel()) : 0; }
ElementType Buffer::element_type() const { return impl_ ? api::element_type_of(impl_->tensor.dtype()) : ElementType::F32; }
std::string Buffer::device() const { return impl_ ? impl_->device : ""; }

std::vector<float> Buffer::to_vector() const {
  if (!impl_) return {};
  Tensor f = impl_->tensor.dtype() == DType::F32 ? impl_->tensor : impl_->tensor.astype(DType::F32);
  const float* p = static_cast<const float*>(f.data());
  return std::vector<float>(p, p + f.numel());
}

std::vector<uint32_t> Buffer::to_vector_u32() const {
  if (!impl_) return {};
  if (impl_->tensor.dtype() != DType::U32)
    throw ShapeError(std::string("to_vector_u32: the buffer holds ") + element_type_name(element_type()) + ", not u32");
  const uint32_t* p = static_cast<const uint32_t*>(impl_->tensor.data());
  return std::vector<uint32_t>(p, p + impl_->tensor.numel());
}

// ------------------------------------------------------------ devices

std::vector<DeviceDescription> compute_devices() {
  std::vector<DeviceDescription> out;
  for (const auto& d : DeviceRegistry::global().devices()) {
    const DeviceInfo& i = d->info();
    out.push_back({i.id, i.type, i.name, i.backend, i.memory_bytes, i.cores});
  }
  return out;
}

ComputeDevice::ComputeDevice(std::shared_ptr<DeviceImpl> impl) : impl_(std::move(impl)) {}

ComputeDevice ComputeDevice::open(const std::string& id) { return open(std::vector<std::string>{id}, Parallel::Data); }

ComputeDevice ComputeDevice::open(const std::vector<std::string>& ids, Parallel mode) {
  if (ids.empty()) throw ComputeError("open: no device named");
  auto impl = std::make_shared<DeviceImpl>();
  for (const std::string& id : ids) {
    Device* d = DeviceRegistry::global().find(id);
    if (!d) throw ComputeError(DeviceRegistry::global().not_available_message(id));
    impl->devices.push_back(d);
  }
  impl->device = impl->devices[0];
  impl->model_parallel = mode == Parallel::Model;
  const DeviceInfo& i = impl->device->info();
  impl->description = {i.id, i.type, i.name, i.backend, i.memory_bytes, i.cores};
  for (size_t k = 1; k < impl->devices.size(); ++k) {
    const DeviceInfo& o = impl->devices[k]->info();
    impl->description.id += "+" + o.id;
    impl->description.cores += o.cores;
    if (o.name != i.name) impl->description.name += " + " + o.name;
  }
  return ComputeDevice(std::move(impl));
}

const DeviceDescription& ComputeDevice::description() const { return impl_->description; }

Buffer ComputeDevice::upload(const std::vector<float>& data) const { return upload(data.data(), data.size()); }

Buffer ComputeDevice::upload(const float* data, size_t n) const {
  Tensor t = Tensor::empty(DType::F32, {static_cast<int64_t>(n)});
  if (n) std::memcpy(t.data(), data, n * sizeof(float));
  return wrap(*impl_, std::move(t));
}

Buffer ComputeDevice::upload_u32(const std::vector<uint32_t>& data) const {
  Tensor t = Tensor::empty(DType::U32, {static_cast<int64_t>(data.size())});
  if (!data.empty()) std::memcpy(t.data(), data.data(), data.size() * sizeof(uint32_t));
  return wrap(*impl_, std::move(t));
}

Buffer ComputeDevice::upload_as(const std::vector<float>& data, ElementType storage) const {
  if (storage == ElementType::U32) throw ShapeError("upload_as: u32 is not a float storage format (use upload_u32)");
  Buffer f = upload(data);
  if (storage == ElementType::F32) return f;
  return wrap(*impl_, f.impl()->tensor.astype(api::dtype_of(storage)));
}

Buffer ComputeDevice::alloc(size_t n) const { return wrap(*impl_, Tensor::zeros(DType::F32, {static_cast<int64_t>(n)})); }

std::vector<float> ComputeDevice::download(const Buffer& b) const {
  tensor_of(*impl_, b, "download", "buffer");
  return b.to_vector();
}

Buffer ComputeDevice::copy_buffer(const Buffer& src) const {
  const Tensor& t = tensor_of(*impl_, src, "copy_buffer", "src");
  Tensor copy = Tensor::empty(t.dtype(), t.shape());
  std::memcpy(copy.data(), t.data(), t.nbytes());
  return wrap(*impl_, std::move(copy));
}

void ComputeDevice::zero_buffer(Buffer& b) const {
  const Tensor& t = tensor_of(*impl_, b, "zero_buffer", "buffer");
  std::memset(b.impl()->tensor.data(), 0, t.nbytes());
}

void ComputeDevice::sync() const {}  // every operation has completed when it returns

Buffer ComputeDevice::to_device(const Buffer& b, bool copy) const {
  if (!b.impl()) throw ShapeError("to_device: the buffer is empty");
  Tensor t = b.impl()->tensor;
  if (copy) {
    Tensor c = Tensor::empty(t.dtype(), t.shape());
    std::memcpy(c.data(), t.data(), t.nbytes());
    t = c;
  }
  return Buffer(std::make_shared<BufferImpl>(std::move(t), impl_->description.id));
}

// ------------------------------------------------------------ memory pools

class PoolImpl {
 public:
  PoolImpl(std::string device, int64_t bytes) : pool(device, bytes), device(std::move(device)) {}
  MemoryPool pool;  // the runtime's pool: the accounting and its errors
  std::string device;
  // Each live buffer and the allocation it was given (in-place ops may
  // since have replaced its storage).
  std::mutex mu;
  std::map<std::shared_ptr<BufferImpl>, Tensor> live;
};

BufferPool::BufferPool(std::shared_ptr<PoolImpl> impl) : impl_(std::move(impl)) {}

Buffer BufferPool::alloc(size_t n, ElementType type) {
  Tensor t;
  try {
    t = impl_->pool.allocate(api::dtype_of(type), {static_cast<int64_t>(n)});
  } catch (const DataError& e) {
    throw ComputeError(std::string("alloc: ") + e.what());
  }
  auto b = std::make_shared<BufferImpl>(t, impl_->device);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->live.emplace(b, t);
  return Buffer(b);
}

void BufferPool::free(const Buffer& b) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->live.find(b.impl());
  if (it == impl_->live.end()) throw ComputeError("free: the buffer is not a live allocation of this pool");
  impl_->pool.free(it->second);
  impl_->live.erase(it);
}

void BufferPool::reset() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->pool.reset();
  impl_->live.clear();
}
size_t BufferPool::capacity() const { return static_cast<size_t>(impl_->pool.capacity()); }
size_t BufferPool::used() const { return static_cast<size_t>(impl_->pool.used()); }

BufferPool ComputeDevice::memory_pool(size_t bytes) const {
  return BufferPool(std::make_shared<PoolImpl>(impl_->description.id, static_cast<int64_t>(bytes)));
}

// ------------------------------------------------------------ element-wise

namespace {

struct TracedKernel {
  cir::Kernel kernel;
  uint64_t hash = 0;
};

// Traced kernels by their graph's key, kept for the process.
const TracedKernel& traced_kernel(const Trace& trace, const std::vector<ExprId>& outputs, size_t numel,
                                  const std::vector<DType>& dtypes, const std::vector<size_t>& lengths) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<TracedKernel>> cache;
  std::string key = trace.key(outputs, numel, dtypes, lengths);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  auto k = std::make_unique<TracedKernel>();
  k->kernel = trace.kernel(outputs, numel, dtypes, lengths);
  k->hash = cir::hash_kernel(k->kernel);
  return *(cache[key] = std::move(k));
}

}  // namespace

std::vector<Buffer> ComputeDevice::elementwise_multi(const std::vector<Buffer>& inputs, size_t numel,
                                                     const ElementFnMulti& f) const {
  std::vector<Tensor> tensors;
  std::vector<DType> dtypes;
  std::vector<size_t> lengths;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string arg = "inputs[" + std::to_string(i) + "]";
    const Tensor& t = tensor_of(*impl_, inputs[i], "elementwise", arg.c_str());
    size_t len = static_cast<size_t>(t.numel());
    if (len == 0 ? numel != 0 : numel % len != 0)
      throw ShapeError("elementwise: argument " + arg + " has " + std::to_string(len) +
                       " elements, which neither equals nor divides numel = " + std::to_string(numel));
    tensors.push_back(t);
    dtypes.push_back(t.dtype() == DType::U32 ? DType::U32 : t.dtype());
    lengths.push_back(len);
  }
  Trace trace;
  std::vector<ExprId> outputs = f(trace.inputs(inputs.size()));
  if (outputs.empty()) throw ShapeError("elementwise: the function returned no output");
  for (ExprId& o : outputs)
    if (o.trace() != &trace) o = trace.node(Trace::Op::Add, {o, ExprId(0.0f)});  // a constant or an input alone
  if (numel == 0) {
    std::vector<Buffer> empty;
    for (size_t i = 0; i < outputs.size(); ++i) empty.push_back(alloc(0));
    return empty;
  }
  const TracedKernel& k = traced_kernel(trace, outputs, numel, dtypes, lengths);
  Tensor result = api::run_kernel(*impl_, k.kernel, k.hash, tensors);
  if (outputs.size() == 1) return {wrap(*impl_, std::move(result))};
  std::vector<Buffer> out;
  for (size_t o = 0; o < outputs.size(); ++o) {
    Tensor row = Tensor::empty(DType::F32, {static_cast<int64_t>(numel)});
    std::memcpy(row.data(), static_cast<const float*>(result.data()) + o * numel, numel * sizeof(float));
    out.push_back(wrap(*impl_, std::move(row)));
  }
  return out;
}

Buffer ComputeDevice::elementwise(const std::vector<Buffer>& inputs, size_t numel, const ElementFn& f) const {
  return elementwise_multi(inputs, numel, [&](const std::vector<ExprId>& x) { return std::vector<ExprId>{f(x)}; })[0];
}

// ------------------------------------------------------------ the op library

namespace {

// The buffer as a tensor of `shape`, checked: a view, no copy.
Tensor shaped(const DeviceImpl& dev, const Buffer& b, const char* op, const char* arg, const std::vector<size_t>& shape,
              const char* names) {
  const Tensor& t = tensor_of(dev, b, op, arg);
  check_size(op, arg, b, shape, names);
  return t.reshaped(api::to_shape(shape));
}

Scalar f32(float v) { return Scalar::of_float(v, DType::F32); }

}  // namespace

Buffer ComputeDevice::matmul(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const {
  return wrap(*impl_, run_op(*impl_, "matmul", {shaped(*impl_, a, "matmul", "a", {m, k}, "[m, k]"),
                                                 shaped(*impl_, b, "matmul", "b", {k, n}, "[k, n]")}));
}

Buffer ComputeDevice::matmul_transposed_a(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const {
  const char* op = "matmul_transposed_a";
  return wrap(*impl_, run_op(*impl_, "matmul_at", {shaped(*impl_, a, op, "a", {k, m}, "[k, m]"),
                                                    shaped(*impl_, b, op, "b", {k, n}, "[k, n]")}));
}

Buffer ComputeDevice::matmul_transposed_b(const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const {
  const char* op = "matmul_transposed_b";
  return wrap(*impl_, run_op(*impl_, "matmul_bt", {shaped(*impl_, a, op, "a", {m, k}, "[m, k]"),
                                                    shaped(*impl_, b, op, "b", {n, k}, "[n, k]")}));
}

void ComputeDevice::matmul_accumulate(Buffer& c, const Buffer& a, const Buffer& b, size_t m, size_t k, size_t n) const {
  const char* op = "matmul_accumulate";
  Tensor r = run_op(*impl_, "matmul_acc", {shaped(*impl_, a, op, "a", {m, k}, "[m, k]"), shaped(*impl_, b, op, "b", {k, n}, "[k, n]"),
                                            shaped(*impl_, c, op, "c", {m, n}, "[m, n]")});
  api::write_into(c, r.data(), r.nbytes());
}

Buffer ComputeDevice::transpose_2d(const Buffer& x, size_t rows, size_t cols) const {
  return wrap(*impl_, run_op(*impl_, "transpose_2d", {shaped(*impl_, x, "transpose_2d", "x", {rows, cols}, "[rows, cols]")}));
}

Buffer ComputeDevice::bias_add(const Buffer& matrix, const Buffer& bias, size_t numel, size_t dim) const {
  if (dim == 0 || numel % dim != 0)
    throw ShapeError("bias_add: numel = " + std::to_string(numel) + " is not a multiple of dim = " + std::to_string(dim));
  return wrap(*impl_, run_op(*impl_, "bias_add", {shaped(*impl_, matrix, "bias_add", "matrix", {numel / dim, dim}, "[numel / dim, dim]"),
                                                   shaped(*impl_, bias, "bias_add", "bias", {dim}, "[dim]")}));
}

void ComputeDevice::add_assign(Buffer& dst, const Buffer& src) const {
  size_t n = dst.size();
  Tensor r = run_op(*impl_, "add", {shaped(*impl_, dst, "add_assign", "dst", {n}, "[n]"), shaped(*impl_, src, "add_assign", "src", {n}, "[n] (dst's size)")});
  api::write_into(dst, r.data(), r.nbytes());
}

Buffer ComputeDevice::softmax(const Buffer& x, size_t n_rows, size_t row_len) const {
  return wrap(*impl_, run_op(*impl_, "softmax", {shaped(*impl_, x, "softmax", "data", {n_rows, row_len}, "[n_rows, row_len]")}));
}

Buffer ComputeDevice::rms_norm(const Buffer& x, const Buffer& weight, size_t n_groups, size_t dim, float eps) const {
  return wrap(*impl_, run_op(*impl_, "rms_norm",
                             {shaped(*impl_, x, "rms_norm", "data", {n_groups, dim}, "[n_groups, dim]"),
                              shaped(*impl_, weight, "rms_norm", "weight", {dim}, "[dim]")},
                             {}, {{"eps", f32(eps)}}));
}

Buffer ComputeDevice::layer_norm(const Buffer& x, const Buffer& gamma, const Buffer& beta, size_t n_rows, size_t dim,
                                 float eps) const {
  const char* op = "layer_norm";
  return wrap(*impl_, run_op(*impl_, op,
                             {shaped(*impl_, x, op, "data", {n_rows, dim}, "[n_rows, dim]"), shaped(*impl_, gamma, op, "gamma", {dim}, "[dim]"),
                              shaped(*impl_, beta, op, "beta", {dim}, "[dim]")},
                             {}, {{"eps", f32(eps)}}));
}

Buffer ComputeDevice::reduce_sum(const Buffer& x, const std::vector<size_t>& shape, size_t axis) const {
  if (axis >= shape.size())
    throw ShapeError("reduce_sum: axis " + std::to_string(axis) + " is out of range for shape " + api::shape_text(shape));
  size_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const Tensor& t = tensor_of(*impl_, x, "reduce_sum", "data");
  check_size("reduce_sum", "data", x, shape, "shape");
  Tensor view = t.reshaped({static_cast<int64_t>(outer), static_cast<int64_t>(shape[axis]), static_cast<int64_t>(inner)});
  return wrap(*impl_, run_op(*impl_, "reduce_sum_axis", {view}));
}

Buffer ComputeDevice::embedding(const Buffer& weight, const Buffer& ids, size_t seq_len, size_t dim) const {
  check_ids("embedding", "ids", ids);
  if (dim == 0 || weight.size() % dim != 0)
    throw ShapeError("embedding: argument weight has " + std::to_string(weight.size()) + " elements, not a multiple of dim = " +
                     std::to_string(dim));
  size_t vocab = weight.size() / dim;
  return wrap(*impl_, run_op(*impl_, "embedding", {shaped(*impl_, weight, "embedding", "weight", {vocab, dim}, "[vocab, dim]"),
                                                    shaped(*impl_, ids, "embedding", "ids", {seq_len}, "[seq_len]")}));
}

Buffer ComputeDevice::softmax_backward(const Buffer& y, const Buffer& grad, size_t n_rows, size_t row_len) const {
  const char* op = "softmax_backward";
  return wrap(*impl_, run_op(*impl_, op, {shaped(*impl_, y, op, "softmax_out", {n_rows, row_len}, "[n_rows, row_len]"),
                                           shaped(*impl_, grad, op, "grad_output", {n_rows, row_len}, "[n_rows, row_len]")}));
}

std::pair<Buffer, Buffer> ComputeDevice::rms_norm_backward(const Buffer& input, const Buffer& weight, const Buffer& grad_output,
                                                           size_t n_groups, size_t dim, float eps) const {
  const char* op = "rms_norm_backward";
  Tensor x = shaped(*impl_, input, op, "input", {n_groups, dim}, "[n_groups, dim]");
  Tensor w = shaped(*impl_, weight, op, "weight", {dim}, "[dim]");
  Tensor g = shaped(*impl_, grad_output, op, "grad_output", {n_groups, dim}, "[n_groups, dim]");
  Buffer dx = wrap(*impl_, run_op(*impl_, "rms_norm_backward_input", {x, w, g}, {}, {{"eps", f32(eps)}}));
  Buffer dw = wrap(*impl_, run_op(*impl_, "rms_norm_backward_weight", {x, g}, {}, {{"eps", f32(eps)}}));
  return {dx, dw};
}

Buffer ComputeDevice::embedding_backward(const Buffer& grad_output, const Buffer& ids, size_t vocab_size, size_t seq_len,
                                         size_t dim) const {
  const char* op = "embedding_backward";
  check_ids(op, "ids", ids);
  return wrap(*impl_, run_op(*impl_, op,
                             {shaped(*impl_, grad_output, op, "grad_output", {seq_len, dim}, "[seq_len, dim]"),
                              shaped(*impl_, ids, op, "ids", {seq_len}, "[seq_len]")},
                             {{"vocab", static_cast<int64_t>(vocab_size)}}));
}

namespace {

// The heads' shapes of an attention call, checked: n_heads a multiple of n_kv_heads.
void check_heads(const char* op, size_t n_heads, size_t n_kv_heads, size_t head_dim) {
  if (n_kv_heads == 0 || n_heads % n_kv_heads != 0)
    throw ShapeError(std::string(op) + ": n_heads = " + std::to_string(n_heads) + " is not a multiple of n_kv_heads = " +
                     std::to_string(n_kv_heads));
  if (head_dim == 0) throw ShapeError(std::string(op) + ": head_dim is 0");
}

}  // namespace

namespace {

Buffer rotate(const DeviceImpl& dev, const char* op, const Buffer& x, size_t seq, size_t nh, size_t hd, size_t offset,
              float sign) {
  if (hd % 2 != 0) throw ShapeError(std::string(op) + ": head_dim = " + std::to_string(hd) + " is odd (rotary pairs need it even)");
  return wrap(dev, run_op(dev, "rope", {shaped(dev, x, op, "x", {seq, nh, hd}, "[seq_len, n_heads, head_dim]")},
                          {{"offset", static_cast<int64_t>(offset)}}, {{"sign", f32(sign)}}));
}

}  // namespace

Buffer ComputeDevice::rope(const Buffer& x, size_t seq, size_t nh, size_t hd, size_t offset) const {
  return rotate(*impl_, "rope", x, seq, nh, hd, offset, 1.0f);
}

Buffer ComputeDevice::rope_backward(const Buffer& grad, size_t seq, size_t nh, size_t hd, size_t offset) const {
  return rotate(*impl_, "rope_backward", grad, seq, nh, hd, offset, -1.0f);
}

Buffer ComputeDevice::causal_attention(const Buffer& q, const Buffer& k, const Buffer& v, size_t seq, size_t nh, size_t nkv,
                                       size_t hd) const {
  const char* op = "causal_attention";
  check_heads(op, nh, nkv, hd);
  return wrap(*impl_, run_op(*impl_, op,
                             {shaped(*impl_, q, op, "q", {seq, nh, hd}, "[seq_len, n_heads, head_dim]"),
                              shaped(*impl_, k, op, "k", {seq, nkv, hd}, "[seq_len, n_kv_heads, head_dim]"),
                              shaped(*impl_, v, op, "v", {seq, nkv, hd}, "[seq_len, n_kv_heads, head_dim]")},
                             {{"group", static_cast<int64_t>(nh / nkv)}}));
}

Buffer ComputeDevice::kv_attention(const Buffer& q, const Buffer& k_cache, const Buffer& v_cache, size_t cache_start,
                                   size_t q_len, size_t nh, size_t nkv, size_t hd) const {
  const char* op = "kv_attention";
  check_heads(op, nh, nkv, hd);
  size_t total = cache_start + q_len;
  return wrap(*impl_, run_op(*impl_, op,
                             {shaped(*impl_, q, op, "q", {q_len, nh, hd}, "[q_len, n_heads, head_dim]"),
                              shaped(*impl_, k_cache, op, "k_cache", {total, nkv, hd}, "[cache_start + q_len, n_kv_heads, head_dim]"),
                              shaped(*impl_, v_cache, op, "v_cache", {total, nkv, hd}, "[cache_start + q_len, n_kv_heads, head_dim]")},
                             {{"group", static_cast<int64_t>(nh / nkv)}, {"cache_start", static_cast<int64_t>(cache_start)}}));
}

std::tuple<Buffer, Buffer, Buffer> ComputeDevice::causal_attention_backward(const Buffer& grad_output, const Buffer& q,
                                                                            const Buffer& k, const Buffer& v, size_t seq,
                                                                            size_t nh, size_t nkv, size_t hd) const {
  const char* op = "causal_attention_backward";
  check_heads(op, nh, nkv, hd);
  Tensor Q = shaped(*impl_, q, op, "q", {seq, nh, hd}, "[seq_len, n_heads, head_dim]");
  Tensor K = shaped(*impl_, k, op, "k", {seq, nkv, hd}, "[seq_len, n_kv_heads, head_dim]");
  Tensor V = shaped(*impl_, v, op, "v", {seq, nkv, hd}, "[seq_len, n_kv_heads, head_dim]");
  Tensor dO = shaped(*impl_, grad_output, op, "grad_output", {seq, nh, hd}, "[seq_len, n_heads, head_dim]");
  std::map<std::string, int64_t> group = {{"group", static_cast<int64_t>(nh / nkv)}};
  Tensor O = run_op(*impl_, "causal_attention", {Q, K, V}, group);
  Tensor lse = run_op(*impl_, "attention_logsumexp", {Q, K}, group);
  Tensor delta = run_op(*impl_, "attention_delta", {O, dO});
  Buffer dq = wrap(*impl_, run_op(*impl_, "attention_backward_q", {Q, K, V, dO, lse, delta}, group));
  Buffer dk = wrap(*impl_, run_op(*impl_, "attention_backward_k", {Q, K, V, dO, lse, delta}, group));
  Buffer dv = wrap(*impl_, run_op(*impl_, "attention_backward_v", {Q, K, dO, lse}, group));
  return {dq, dk, dv};
}

std::pair<float, Buffer> ComputeDevice::cross_entropy_forward_backward(const Buffer& logits, const Buffer& targets, size_t n,
                                                                       size_t vocab, uint32_t pad_id) const {
  const char* op = "cross_entropy_forward_backward";
  check_ids(op, "targets", targets);
  Tensor L = shaped(*impl_, logits, op, "logits", {n, vocab}, "[n_positions, vocab_size]");
  Tensor T = shaped(*impl_, targets, op, "targets", {n}, "[n_positions]");
  std::map<std::string, int64_t> pad = {{"pad_id", static_cast<int64_t>(pad_id)}};
  Tensor count = run_op(*impl_, "cross_entropy_count", {T}, pad);
  Tensor rows = run_op(*impl_, "cross_entropy_rows", {L, T}, pad);
  Tensor mean = run_op(*impl_, "cross_entropy_mean", {rows, count});
  Buffer grad = wrap(*impl_, run_op(*impl_, "cross_entropy_grad", {L, T, count}, pad));
  return {static_cast<const float*>(mean.data())[0], grad};
}

void ComputeDevice::adamw_step(Buffer& param, const Buffer& grad, Buffer& m, Buffer& v, float lr, float beta1, float beta2,
                               float eps, float weight_decay, size_t step_t) const {
  const char* op = "adamw_step";
  if (step_t == 0) throw ShapeError("adamw_step: step_t counts from 1");
  size_t n = param.size();
  std::vector<Tensor> in = {shaped(*impl_, param, op, "param", {n}, "[n]"), shaped(*impl_, grad, op, "grad", {n}, "[n] (param's size)"),
                            shaped(*impl_, m, op, "m", {n}, "[n] (param's size)"), shaped(*impl_, v, op, "v", {n}, "[n] (param's size)")};
  double t = static_cast<double>(step_t);
  std::map<std::string, Scalar> s = {{"lr", f32(lr)},
                                     {"beta1", f32(beta1)},
                                     {"beta2", f32(beta2)},
                                     {"eps", f32(eps)},
                                     {"weight_decay", f32(weight_decay)},
                                     {"bc1", f32(static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), t)))},
                                     {"bc2", f32(static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), t)))}};
  Tensor r = run_op(*impl_, op, in, {}, s);
  const float* rows = static_cast<const float*>(r.data());
  api::write_into(param, rows, n * sizeof(float));
  api::write_into(m, rows + n, n * sizeof(float));
  api::write_into(v, rows + 2 * n, n * sizeof(float));
}

}  // namespace zyntax
