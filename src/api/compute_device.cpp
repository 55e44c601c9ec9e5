// ComputeDevice: opening devices (one, or a group that shares every op),
// and moving buffers to, from and between them.
#include <cstring>

#include "api/api_internal.hpp"
#include "api/deferred_ops.hpp"
#include "backends/registry.hpp"
#include "runtime/device.hpp"
#include "zyntax/zyntax.hpp"

namespace zyntax {

using api::tensor_of;
using api::wrap;

using api::placed;

// ------------------------------------------------------------ devices

std::vector<DeviceDescription> compute_devices() {
  std::vector<DeviceDescription> out;
  for (const auto& d : device_registry().devices()) {
    const DeviceInfo& i = d->info();
    out.push_back({i.id, i.type, i.name, i.backend, i.memory_bytes, i.cores});
  }
  return out;
}

ComputeDevice::ComputeDevice(std::shared_ptr<DeviceImpl> impl) : impl_(std::move(impl)) {}

DeviceImpl& ComputeDevice::dev() const {
  if (!impl_) throw ComputeError("this ComputeDevice holds no device (it was moved from): open one with ComputeDevice::open");
  return *impl_;
}

ComputeDevice ComputeDevice::open(const std::string& id) { return open(std::vector<std::string>{id}, Parallel::Data); }

ComputeDevice ComputeDevice::open(const std::vector<std::string>& ids, Parallel mode) {
  if (ids.empty()) throw ComputeError("open: no device named");
  auto impl = std::make_shared<DeviceImpl>();
  for (const std::string& id : ids) {
    Device* d = device_registry().find(id);
    if (!d) throw ComputeError(device_registry().not_available_message(id));
    impl->devices.push_back(d);
  }
  impl->device = impl->devices[0];
  impl->model_parallel = mode == Parallel::Model;
  if (impl->devices.size() == 1) {
    api::DeferredOps::of(*impl->device).attach();
    impl->counted = true;
  }
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

const DeviceDescription& ComputeDevice::description() const { return dev().description; }

Buffer ComputeDevice::upload(const std::vector<float>& data) const { return upload(data.data(), data.size()); }

Buffer ComputeDevice::upload(const float* data, size_t n) const {
  Tensor t = Tensor::empty(DType::F32, {static_cast<int64_t>(n)});
  if (n) std::memcpy(t.data(), data, n * sizeof(float));
  return wrap(dev(), placed(dev(), std::move(t)));
}

Buffer ComputeDevice::upload_u32(const std::vector<uint32_t>& data) const {
  Tensor t = Tensor::empty(DType::U32, {static_cast<int64_t>(data.size())});
  if (!data.empty()) std::memcpy(t.data(), data.data(), data.size() * sizeof(uint32_t));
  return wrap(dev(), placed(dev(), std::move(t)));
}

Buffer ComputeDevice::upload_as(const std::vector<float>& data, ElementType storage) const {
  if (storage != ElementType::F32 && storage != ElementType::F16 && storage != ElementType::BF16)
    throw ShapeError(std::string("upload_as: ") + element_type_name(storage) + " is not a float storage format (f32, f16, bf16)" +
                     (storage == ElementType::U32 ? "; use upload_u32" : ""));
  if (storage == ElementType::F32) return upload(data);
  Tensor f = Tensor::empty(DType::F32, {static_cast<int64_t>(data.size())});
  if (!data.empty()) std::memcpy(f.data(), data.data(), data.size() * sizeof(float));
  return wrap(dev(), placed(dev(), f.astype(api::dtype_of(storage))));
}

Buffer ComputeDevice::alloc(size_t n) const { return wrap(dev(), Tensor::zeros(DType::F32, {static_cast<int64_t>(n)})); }

std::vector<float> ComputeDevice::download(const Buffer& b) const {
  tensor_of(dev(), b, "download", "buffer");
  return b.to_vector();
}

Buffer ComputeDevice::copy_buffer(const Buffer& src) const {
  const Tensor& t = tensor_of(dev(), src, "copy_buffer", "src");
  Tensor copy = Tensor::empty(t.dtype(), t.shape());
  std::memcpy(copy.data(), t.data(), t.nbytes());
  return wrap(dev(), placed(dev(), std::move(copy)));
}

void ComputeDevice::zero_buffer(Buffer& b) const {
  const Tensor& t = tensor_of(dev(), b, "zero_buffer", "buffer");
  api::DeferredOps::flush_all();  // what waits may read it
  std::memset(b.impl()->value().data_for_overwrite(), 0, t.nbytes());  // a GPU's copy is not fetched only to be zeroed
}

void ComputeDevice::sync() const { api::flush_deferred(dev()); }  // an op run has completed when it returns

void ComputeDevice::set_fusion(bool on) { dev().fusion = on; }
bool ComputeDevice::fusion() const { return dev().fusion; }

ComputeDevice ComputeDevice::without_fusion() const {
  auto impl = std::make_shared<DeviceImpl>();
  impl->device = dev().device;
  impl->devices = dev().devices;
  impl->model_parallel = dev().model_parallel;
  impl->description = dev().description;
  impl->fusion = false;
  return ComputeDevice(std::move(impl));
}

uint64_t ComputeDevice::kernel_launches() const {
  return dev().devices.size() == 1 ? api::DeferredOps::of(*dev().device).launches() : 0;
}

Buffer ComputeDevice::to_device(const Buffer& b, bool copy) const {
  if (!b.impl()) throw ShapeError("to_device: the buffer is empty");
  Tensor t = b.impl()->value();
  if (copy) {
    t = dev().devices.size() == 1 ? dev().device->copy_in(t) : t.clone();
  } else {
    // A view every device of the group reads in place.
    try {
      for (Device* d : dev().devices) t = d->share_host(t);
    } catch (const std::runtime_error& e) {
      throw ComputeError(std::string("to_device(copy=false) onto ") + dev().description.id + ": " + e.what());
    }
  }
  return Buffer(std::make_shared<BufferImpl>(std::move(t), dev().description.id));
}

}  // namespace zyntax
