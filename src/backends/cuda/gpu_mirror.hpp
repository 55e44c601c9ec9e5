// A tensor's bytes in a GPU's memory (Tensor::set_mirror): a kernel's
// output kept there for the kernels after it, or an upload made once for a
// tensor placed on the GPU. The block goes back to the GPU's pool with the
// last tensor holding it.
#pragma once

#include <string>

#include "backends/cuda/cuda_gpu.hpp"
#include "runtime/tensor.hpp"

namespace zyntax::cuda {

class GpuMirror : public DeviceMirror {
 public:
  GpuMirror(std::string device, DeviceBuffer buffer) : device_(std::move(device)), buffer_(std::move(buffer)) {}
  const std::string& device() const override { return device_; }
  void download(void* host, size_t bytes) const override { buffer_.download(host, bytes, /*wait=*/true); }
  std::shared_ptr<const DeviceMirror> part(size_t offset, size_t bytes) const override {
    DeviceBuffer b(buffer_.gpu(), bytes ? bytes : 1);
    b.copy_from(buffer_, offset, bytes);
    return std::make_shared<GpuMirror>(device_, std::move(b));
  }
  CUdeviceptr address() const { return buffer_.address(); }

 private:
  std::string device_;
  DeviceBuffer buffer_;
};

// The mirror `t` has on the GPU with id `device`, or null.
inline std::shared_ptr<const GpuMirror> gpu_mirror_of(const Tensor& t, const std::string& device) {
  std::shared_ptr<const DeviceMirror> m = t.mirror();
  if (!m || m->device() != device) return nullptr;
  return std::dynamic_pointer_cast<const GpuMirror>(m);
}

}  // namespace zyntax::cuda
