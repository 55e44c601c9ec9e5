#include "backends/module_gpu_memory.hpp"

#include <stdexcept>
#include <utility>

#include "runtime/size_class_pool.hpp"

namespace zyntax {

GpuBuffer::GpuBuffer(ModuleGpu& gpu, size_t bytes) : gpu_(&gpu), bytes_(bytes) {
  gpu.bind();
  address_ = gpu.memory().allocate(bytes);
}

GpuBuffer::~GpuBuffer() {
  if (gpu_ && address_) gpu_->memory().release(address_);
}

GpuBuffer::GpuBuffer(GpuBuffer&& o) noexcept
    : gpu_(std::exchange(o.gpu_, nullptr)), address_(std::exchange(o.address_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}

GpuBuffer& GpuBuffer::operator=(GpuBuffer&& o) noexcept {
  if (this != &o) {
    if (gpu_ && address_) gpu_->memory().release(address_);
    gpu_ = std::exchange(o.gpu_, nullptr);
    address_ = std::exchange(o.address_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void GpuBuffer::upload(const void* host, size_t bytes, bool wait) {
  upload_on(gpu_->stream(), host, bytes);
  if (wait && bytes) gpu_->synchronize();
}

void GpuBuffer::download(void* host, size_t bytes, bool wait) const {
  download_on(gpu_->stream(), host, bytes);
  if (wait && bytes) gpu_->synchronize();
}

void GpuBuffer::zero() { zero_on(gpu_->stream()); }

void GpuBuffer::copy_from(const GpuBuffer& src, size_t offset, size_t bytes) {
  if (bytes == 0) return;
  if (offset > src.bytes_ || bytes > src.bytes_ - offset || bytes > bytes_)
    throw std::logic_error("GpuBuffer::copy_from: " + std::to_string(bytes) + " bytes from byte " + std::to_string(offset) +
                           " do not fit");
  gpu_->bind();
  gpu_->copy_on_device(gpu_->stream(), address_, src.address_ + offset, bytes);
  gpu_->synchronize();
}

void GpuBuffer::upload_on(ModuleGpu::StreamHandle stream, const void* host, size_t bytes) {
  if (bytes == 0) return;
  gpu_->bind();
  gpu_->copy_to_device(stream, address_, host, bytes);
}

void GpuBuffer::download_on(ModuleGpu::StreamHandle stream, void* host, size_t bytes) const {
  if (bytes == 0) return;
  gpu_->bind();
  gpu_->copy_to_host(stream, host, address_, bytes);
}

void GpuBuffer::zero_on(ModuleGpu::StreamHandle stream) {
  gpu_->bind();
  gpu_->zero(stream, address_, bytes_);
}

std::shared_ptr<const DeviceMirror> GpuBufferMirror::part(size_t offset, size_t bytes) const {
  GpuBuffer b(buffer_.gpu(), bytes ? bytes : 1);
  b.copy_from(buffer_, offset, bytes);
  return std::make_shared<GpuBufferMirror>(device_, std::move(b));
}

std::shared_ptr<const GpuBufferMirror> gpu_buffer_mirror_of(const Tensor& t, const std::string& device) {
  std::shared_ptr<const DeviceMirror> m = t.mirror();
  if (!m || m->device() != device) return nullptr;
  return std::dynamic_pointer_cast<const GpuBufferMirror>(m);
}

}  // namespace zyntax
