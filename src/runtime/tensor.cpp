#include "runtime/tensor.hpp"

#include <cstring>

#include "runtime/host_block_cache.hpp"
#include "runtime/profiler.hpp"

namespace zyntax {

namespace {

// Larger than any host memory; refusing it up front turns a corrupt shape
// into a DataError instead of an allocation failure.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 40;

template <class T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

Scalar exact_float(double v, DType t) {
  Scalar s;
  s.dtype = t;
  s.f = v;
  return s;
}

}  // namespace

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  // Zero dimensions are skipped in the overflow check so that every stride
  // and partial product of a valid shape fits in int64, even when numel is 0.
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : s) {
    if (d == 0) {
      zero = true;
    } else if (__builtin_mul_overflow(n, d, &n)) {
      throw DataError("shape " + shape_str(s) + " has too many elements");
    }
  }
  return zero ? 0 : n;
}

std::vector<int64_t> shape_strides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
  return strides;
}

std::shared_ptr<unsigned char> Tensor::allocate(size_t bytes) {
  // One byte at least, so that an empty tensor still has storage.
  auto* p = static_cast<unsigned char*>(std::calloc(bytes ? bytes : 1, 1));
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<unsigned char>(p, [](unsigned char* q) { std::free(q); });
}

Tensor Tensor::empty(DType dtype, Shape shape) { return make(dtype, std::move(shape), false); }

Tensor Tensor::for_overwrite(DType dtype, Shape shape) { return make(dtype, std::move(shape), true); }

// Far more axes than any model uses; printing, striding and compiling
// recurse or loop over the axes, so a shape has at most this many.
constexpr size_t kMaxRank = 64;

static void check_rank(const Shape& shape) {
  if (shape.size() > kMaxRank)
    throw DataError("a tensor has at most " + std::to_string(kMaxRank) + " axes, not " + std::to_string(shape.size()));
}

size_t Tensor::bytes_for(DType dtype, const Shape& shape) {
  check_rank(shape);
  for (int64_t d : shape)
    if (d < 0) throw DataError("negative dimension in shape " + shape_str(shape));
  uint64_t numel = static_cast<uint64_t>(shape_numel(shape));
  if (numel > kMaxTensorBytes / dtype_size(dtype))
    throw DataError("shape " + shape_str(shape) + " of " + dtype_name(dtype) + " is too large to allocate");
  return static_cast<size_t>(numel * dtype_size(dtype));
}

Tensor Tensor::make(DType dtype, Shape shape, bool recycled) {
  size_t bytes = bytes_for(dtype, shape);
  return in_storage(dtype, std::move(shape), recycled ? HostBlockCache::global().acquire(bytes) : allocate(bytes));
}

Tensor Tensor::in_storage(DType dtype, Shape shape, std::shared_ptr<unsigned char> storage) {
  Tensor t;
  t.storage_ = std::move(storage);
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.residence_ = std::make_shared<Residence>(t.storage_.get(), t.nbytes());
  return t;
}

Tensor Tensor::full(DType dtype, Shape shape, const Scalar& value) {
  Tensor t = empty(dtype, std::move(shape));
  int64_t n = t.numel();
  if (n == 0) return t;
  t.set(0, value);
  size_t size = dtype_size(dtype);
  unsigned char* p = t.raw();
  for (int64_t i = 1; i < n; ++i) std::memcpy(p + i * size, p, size);
  return t;
}

Tensor Tensor::scalar(const Scalar& value) { return full(value.dtype, {}, value); }

Scalar Tensor::get(int64_t flat) const {
  if (!storage_) throw DataError("get: null tensor");
  if (flat < 0 || flat >= numel())
    throw DataError("get: index " + std::to_string(flat) + " is out of range for shape " + shape_str(shape_));
  const unsigned char* p = raw() + flat * static_cast<int64_t>(dtype_size(dtype_));
  switch (dtype_) {
    case DType::F16: return exact_float(f16_to_f32(load<uint16_t>(p)), dtype_);
    case DType::BF16: return exact_float(bf16_to_f32(load<uint16_t>(p)), dtype_);
    case DType::F32: return exact_float(load<float>(p), dtype_);
    case DType::F64: return exact_float(load<double>(p), dtype_);
    case DType::I8: return Scalar::of_int(load<int8_t>(p), dtype_);
    case DType::I16: return Scalar::of_int(load<int16_t>(p), dtype_);
    case DType::I32: return Scalar::of_int(load<int32_t>(p), dtype_);
    case DType::I64: return Scalar::of_int(load<int64_t>(p), dtype_);
    case DType::U8: return Scalar::of_uint(load<uint8_t>(p), dtype_);
    case DType::U16: return Scalar::of_uint(load<uint16_t>(p), dtype_);
    case DType::U32: return Scalar::of_uint(load<uint32_t>(p), dtype_);
    case DType::U64: return Scalar::of_uint(load<uint64_t>(p), dtype_);
    case DType::Bool: return Scalar::of_bool(*p != 0);
  }
  return Scalar{};
}

void Tensor::set(int64_t flat, const Scalar& value) {
  if (!storage_) throw DataError("set: null tensor");
  if (flat < 0 || flat >= numel())
    throw DataError("set: index " + std::to_string(flat) + " is out of range for shape " + shape_str(shape_));
  unsigned char* p = raw() + flat * static_cast<int64_t>(dtype_size(dtype_));
  Scalar v = cast(value, dtype_);
  switch (dtype_) {
    case DType::F16: store(p, f32_to_f16(static_cast<float>(v.f))); break;
    case DType::BF16: store(p, f32_to_bf16(static_cast<float>(v.f))); break;
    case DType::F32: store(p, static_cast<float>(v.f)); break;
    case DType::F64: store(p, v.f); break;
    case DType::I8: store(p, static_cast<int8_t>(v.i)); break;
    case DType::I16: store(p, static_cast<int16_t>(v.i)); break;
    case DType::I32: store(p, static_cast<int32_t>(v.i)); break;
    case DType::I64: store(p, v.i); break;
    case DType::U8: store(p, static_cast<uint8_t>(v.u)); break;
    case DType::U16: store(p, static_cast<uint16_t>(v.u)); break;
    case DType::U32: store(p, static_cast<uint32_t>(v.u)); break;
    case DType::U64: store(p, v.u); break;
    case DType::Bool: *p = v.i != 0; break;
  }
}

Tensor Tensor::kept_with(std::shared_ptr<void> keeper) const {
  // The keeper goes first, then the storage (members die in reverse order).
  struct Both {
    std::shared_ptr<unsigned char> storage;
    std::shared_ptr<void> keeper;
  };
  auto both = std::make_shared<Both>(Both{storage_, std::move(keeper)});
  Tensor t = *this;
  t.storage_ = std::shared_ptr<unsigned char>(both, storage_.get());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (!storage_) throw DataError("reshape: null tensor");
  check_rank(shape);
  bool negative = false;
  for (int64_t d : shape) negative |= d < 0;
  if (negative || shape_numel(shape) != numel())
    throw DataError("reshape: cannot reshape " + shape_str(shape_) + " into " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::bytes_view(size_t offset, DType dtype, Shape shape) const {
  size_t bytes = bytes_for(dtype, shape);
  if (!storage_ || offset > nbytes() || bytes > nbytes() - offset)
    throw DataError("bytes_view: " + std::to_string(bytes) + " bytes from byte " + std::to_string(offset) + " do not fit in " + std::to_string(nbytes()));
  Tensor t;
  t.storage_ = std::shared_ptr<unsigned char>(storage_, storage_.get() + offset);  // shares ownership of the whole
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.residence_ = residence_;  // the view's bytes are the whole's
  return t;
}

Tensor Tensor::bytes_copy(size_t offset, DType dtype, Shape shape) const {
  Tensor view = bytes_view(offset, dtype, shape);  // checks that they fit
  Tensor copy = for_overwrite(dtype, std::move(shape));
  copy.device_ = device_;
  size_t bytes = copy.nbytes();
  if (std::shared_ptr<const DeviceMirror> m = mirror())
    if (std::shared_ptr<const DeviceMirror> part = m->part(offset, bytes)) {
      copy.set_mirror(std::move(part), /*host_current=*/false);
      return copy;
    }
  if (bytes) std::memcpy(copy.storage_.get(), view.data(), bytes);
  return copy;
}

Tensor Tensor::clone() const {
  if (!storage_) return Tensor{};
  Tensor t = in_storage(dtype_, shape_, allocate(nbytes()));
  t.device_ = device_;
  if (nbytes()) std::memcpy(t.storage_.get(), data(), nbytes());
  return t;
}

Tensor Tensor::astype(DType dtype) const {
  if (!storage_) throw DataError("astype: null tensor");
  if (dtype == dtype_) return clone();
  Tensor t = empty(dtype, shape_);
  t.device_ = device_;
  int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) t.set(i, get(i));
  return t;
}

std::shared_ptr<const DeviceMirror> Tensor::mirror() const {
  if (!residence_ || !residence_->covers(storage_.get(), nbytes())) return nullptr;
  return residence_->mirror();
}

bool Tensor::set_mirror(std::shared_ptr<const DeviceMirror> m, bool host_current) const {
  if (!residence_ || !residence_->covers(storage_.get(), nbytes())) return false;
  residence_->set(std::move(m), host_current);
  return true;
}

std::shared_ptr<const DeviceMirror> Tensor::Residence::mirror() {
  if (state_.load(std::memory_order_acquire) == kHostOnly) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  return mirror_;
}

void Tensor::Residence::set(std::shared_ptr<const DeviceMirror> m, bool host_current) {
  std::lock_guard<std::mutex> lock(mu_);
  // The host's bytes become current before the only copy of them goes.
  if ((host_current || !m) && state_.load(std::memory_order_relaxed) == kDeviceOnly) {
    ProfileSpan copy(ProfileEvent::Kind::Copy, "device -> host", mirror_->device());
    copy.event().bytes = bytes_;
    mirror_->download(host_, bytes_);
  }
  mirror_ = std::move(m);
  state_.store(!mirror_ ? kHostOnly : host_current ? kBoth : kDeviceOnly, std::memory_order_release);
}

void Tensor::Residence::discard() {
  std::lock_guard<std::mutex> lock(mu_);
  mirror_.reset();
  state_.store(kHostOnly, std::memory_order_release);
}

// Under the lock, so that concurrent readers copy the bytes once and none
// reads them half-copied.
void Tensor::Residence::fetch(bool drop_mirror) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_.load(std::memory_order_relaxed) == kDeviceOnly) {
    ProfileSpan copy(ProfileEvent::Kind::Copy, "device -> host", mirror_->device());
    copy.event().bytes = bytes_;
    mirror_->download(host_, bytes_);
    state_.store(kBoth, std::memory_order_release);
  }
  if (drop_mirror) {
    mirror_.reset();
    state_.store(kHostOnly, std::memory_order_release);
  }
}

}  // namespace zyntax
