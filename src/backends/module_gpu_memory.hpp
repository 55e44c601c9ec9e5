// Device memory, streams and events of a ModuleGpu (module_gpu.hpp) as RAII
// values, and a tensor's bytes kept in a GPU's memory (Tensor::set_mirror).
#pragma once

#include <memory>
#include <string>

#include "backends/module_gpu.hpp"
#include "runtime/tensor.hpp"

namespace zyntax {

// Device memory from a GPU's pool, given back when destroyed.
class GpuBuffer {
 public:
  GpuBuffer() = default;
  GpuBuffer(ModuleGpu& gpu, size_t bytes);
  ~GpuBuffer();
  GpuBuffer(GpuBuffer&& o) noexcept;
  GpuBuffer& operator=(GpuBuffer&& o) noexcept;

  ModuleGpu::Address address() const { return address_; }
  size_t size() const { return bytes_; }
  ModuleGpu& gpu() const { return *gpu_; }
  // Copies on the GPU's stream; `wait` makes the host wait for the copy.
  void upload(const void* host, size_t bytes, bool wait = true);
  void download(void* host, size_t bytes, bool wait = true) const;
  void zero();
  // Copies bytes [offset, offset + bytes) of `src` (on the same GPU) to the
  // start of this buffer, waiting for the copy.
  void copy_from(const GpuBuffer& src, size_t offset, size_t bytes);
  // The same on `stream`, in its order, the host not waiting.
  void upload_on(ModuleGpu::StreamHandle stream, const void* host, size_t bytes);
  void download_on(ModuleGpu::StreamHandle stream, void* host, size_t bytes) const;
  void zero_on(ModuleGpu::StreamHandle stream);

 private:
  ModuleGpu* gpu_ = nullptr;
  ModuleGpu::Address address_ = 0;
  size_t bytes_ = 0;
};

class GpuStream {
 public:
  explicit GpuStream(ModuleGpu& gpu) : gpu_(gpu), stream_(gpu.create_stream()) {}
  ~GpuStream() { gpu_.destroy_stream(stream_); }
  GpuStream(const GpuStream&) = delete;
  GpuStream& operator=(const GpuStream&) = delete;
  ModuleGpu::StreamHandle get() const { return stream_; }
  void synchronize() const { gpu_.synchronize_stream(stream_); }

 private:
  ModuleGpu& gpu_;
  ModuleGpu::StreamHandle stream_;
};

class GpuEvent {
 public:
  explicit GpuEvent(ModuleGpu& gpu, bool timing = true) : gpu_(gpu), event_(gpu.create_event(timing)) {}
  ~GpuEvent() { gpu_.destroy_event(event_); }
  GpuEvent(const GpuEvent&) = delete;
  GpuEvent& operator=(const GpuEvent&) = delete;
  void record(ModuleGpu::StreamHandle stream) const { gpu_.record_event(event_, stream); }
  void synchronize() const { gpu_.synchronize_event(event_); }
  bool done() const { return gpu_.event_done(event_); }
  // Milliseconds between two recorded (and completed) events.
  static float elapsed_ms(const GpuEvent& start, const GpuEvent& end) { return start.gpu_.elapsed_ms(start.event_, end.event_); }

 private:
  ModuleGpu& gpu_;
  ModuleGpu::EventHandle event_;
};

// Page-locked host memory of a GPU (ModuleGpu::allocate_pinned: zeroed,
// mapped for its kernels): copies from and to it run at the bus's speed and
// may be asynchronous.
class GpuPinnedBuffer {
 public:
  GpuPinnedBuffer(ModuleGpu& gpu, size_t bytes) : memory_(gpu.allocate_pinned(bytes)), bytes_(bytes) {}
  void* data() const { return memory_.get(); }
  size_t size() const { return bytes_; }

 private:
  std::shared_ptr<unsigned char> memory_;
  size_t bytes_;
};

// A tensor's bytes in a GPU's memory (Tensor::set_mirror): a kernel's
// output kept there for the kernels after it, or an upload made once for a
// tensor placed on the GPU. The block goes back to the GPU's pool with the
// last tensor holding it.
class GpuBufferMirror : public DeviceMirror {
 public:
  GpuBufferMirror(std::string device, GpuBuffer buffer) : device_(std::move(device)), buffer_(std::move(buffer)) {}
  const std::string& device() const override { return device_; }
  void download(void* host, size_t bytes) const override { buffer_.download(host, bytes, /*wait=*/true); }
  std::shared_ptr<const DeviceMirror> part(size_t offset, size_t bytes) const override;
  ModuleGpu::Address address() const { return buffer_.address(); }

 private:
  std::string device_;
  GpuBuffer buffer_;
};

// The mirror `t` has on the GPU with id `device`, or null.
std::shared_ptr<const GpuBufferMirror> gpu_buffer_mirror_of(const Tensor& t, const std::string& device);

}  // namespace zyntax
