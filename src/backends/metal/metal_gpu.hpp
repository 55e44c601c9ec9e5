// One Metal device: what it offers (its GpuTarget: the Apple GPU target
// adjusted by the device and by a probe kernel's pipeline), its command
// queue, buffers in shared storage (the host's and the GPU's memory are one
// on Apple silicon), libraries compiled from MSL and their compute
// pipelines, and dispatches that wait for their command buffer. Every
// object made is released again, each operation inside an autorelease pool
// of its own (the backend runs on threads without one). What Metal refuses
// is a MetalError naming the kernel and giving Metal's words.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/metal/objc_runtime.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::metal {

// "Metal cannot compile kernel k: program_source:3:5: error: ...".
class MetalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The most bytes setBytes:length:atIndex: takes; larger argument structs
// would need a buffer of their own.
constexpr uint32_t kMostInlineArgumentBytes = 4096;
// Buffer arguments one kernel function may take ([[buffer(0)]] to [[buffer(30)]]).
constexpr int kMostBufferArguments = 31;

class Gpu {
 public:
  // Every device of `runtime` the backend can use (MTLCopyAllDevices, else
  // the system's default device). `why` receives why each other device was
  // left out, and, where none is left, why there is none.
  static std::vector<std::unique_ptr<Gpu>> open_all(ObjcRuntime& runtime, std::string* why);

  // Takes `device` (a +1 reference); MetalError where its queue or the
  // probe kernel cannot be made.
  Gpu(ObjcRuntime& runtime, Owned device, int ordinal);
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const std::string& id() const { return id_; }  // "metal:0"
  const std::string& name() const { return name_; }
  const std::string& family() const { return family_; }  // "Apple9"
  uint64_t memory_bytes() const { return memory_bytes_; }   // the working set Metal recommends
  uint64_t max_buffer_bytes() const { return max_buffer_bytes_; }
  bool unified_memory() const { return unified_memory_; }
  const GpuTarget& target() const { return target_; }
  std::string driver_text() const { return "Metal, GPU family " + family_; }

  // A buffer in shared storage of `bytes` (whole 32-bit words, at least
  // one: atomics on narrower elements take their word), which the host
  // reads and writes through data().
  class Buffer {
   public:
    Buffer(Gpu& gpu, size_t bytes);
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    void* data() { return contents_; }
    size_t bytes() const { return bytes_; }
    Id handle() const { return buffer_.get(); }

   private:
    Owned buffer_;
    void* contents_ = nullptr;
    size_t bytes_ = 0;
  };

  // A compute pipeline: the MSL library compiled, its function `entry`,
  // the pipeline state. `kernel` names it in messages.
  class Pipeline {
   public:
    Pipeline(Gpu& gpu, const std::string& source, const std::string& entry, const std::string& kernel);
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;
    const std::string& kernel() const { return kernel_; }
    Id handle() const { return state_.get(); }  // the MTLComputePipelineState
    // What the compiled function allows: threads per threadgroup, and the
    // SIMD group's width.
    uint32_t max_threads() const { return max_threads_; }
    uint32_t execution_width() const { return execution_width_; }

   private:
    friend class Gpu;
    std::string kernel_;
    Owned state_;
    uint32_t max_threads_ = 0, execution_width_ = 0;
  };

  // Runs `pipeline` over groups_x by groups_y threadgroups of `threads`
  // threads: buffers[i] at [[buffer(i)]], `arguments` (where any) by
  // setBytes at [[buffer(argument_index)]], `threadgroup_bytes` (where
  // any) at [[threadgroup(0)]]; waits for the command buffer. Dispatches
  // from several threads run side by side, each on its own command buffer.
  void dispatch(const Pipeline& pipeline, const std::vector<Buffer*>& buffers, const std::vector<uint8_t>& arguments, int argument_index,
                uint32_t threadgroup_bytes, uint32_t groups_x, uint32_t groups_y, uint32_t threads);

  // Milliseconds the last dispatch ran on the GPU (its command buffer's
  // GPUStartTime to GPUEndTime); -1 where Metal gave no times.
  double last_dispatch_milliseconds() const { return last_dispatch_ms_.load(std::memory_order_relaxed); }

 private:
  ObjcRuntime& runtime_;
  Owned device_;
  Owned queue_;
  std::string id_, name_, family_;
  uint64_t memory_bytes_ = 0;
  uint64_t max_buffer_bytes_ = 0;
  bool unified_memory_ = false;
  GpuTarget target_;
  std::atomic<double> last_dispatch_ms_{-1};
};

}  // namespace zyntax::metal
