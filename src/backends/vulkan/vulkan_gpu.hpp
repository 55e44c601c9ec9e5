// One Vulkan device with a compute queue: what it offers (its GpuTarget,
// from its properties and features), its logical device with those
// features on, storage buffers in host-visible memory, compute pipelines
// from SPIR-V, and dispatches that wait for the queue. Every Vulkan call's
// failure is a VulkanError naming the call.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_api.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::vulkan {

class Gpu {
 public:
  // Every device with a compute queue and what the backend needs (Vulkan
  // 1.2, 64-bit integers and their atomics in buffers, 8- and 16-bit
  // storage); `skipped` receives why each other device was left out.
  static std::vector<std::unique_ptr<Gpu>> open_all(std::vector<std::string>* skipped);

  Gpu(VkPhysicalDevice physical, int ordinal);
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const std::string& id() const { return id_; }  // "vulkan:0"
  const std::string& name() const { return name_; }
  bool is_cpu() const { return type_ == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  uint64_t memory_bytes() const { return memory_bytes_; }
  const GpuTarget& target() const { return target_; }
  uint32_t push_constant_limit() const { return push_limit_; }
  uint64_t max_buffer_bytes() const { return max_buffer_bytes_; }
  std::string driver_text() const;

  // Where the kernels' buffers live: host-visible memory the device reads
  // directly where it has such device-local memory (integrated and
  // software devices, most GPUs with a resizable BAR), else device-local
  // memory, which staging buffers fill and empty around each dispatch
  // (ZYNTAX_VULKAN_STAGING=1 asks for staging anywhere, to test it).
  bool stages() const { return stages_; }

  // A storage buffer of `bytes` (in whole 32-bit words, at least one):
  // Shared (host-visible, coherent, mapped; device-local where that
  // exists), Device (device-local, not mapped) or Staging (host-visible,
  // coherent, mapped, for copies).
  enum class Memory { Shared, Device, Staging };
  class Buffer {
   public:
    Buffer(Gpu& gpu, size_t bytes, Memory memory = Memory::Shared);
    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    void* data() { return mapped_; }
    size_t bytes() const { return bytes_; }
    VkBuffer handle() const { return buffer_; }

   private:
    Gpu& gpu_;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    void* mapped_ = nullptr;
    size_t bytes_ = 0;
  };

  // A compute pipeline: `bindings` storage buffers at set 0, bindings
  // 0..n-1, and `push_bytes` of push constants.
  class Pipeline {
   public:
    Pipeline(Gpu& gpu, const std::vector<uint32_t>& spirv, int bindings, uint32_t push_bytes);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

   private:
    friend class Gpu;
    Gpu& gpu_;
    int bindings_ = 0;
    uint32_t push_bytes_ = 0;
    VkShaderModule module_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipeline pipeline_ = VK_NULL_HANDLE;
  };

  // A copy between buffers, recorded around a dispatch.
  struct Copy {
    Buffer* from;
    Buffer* to;
    size_t bytes;
  };
  // Runs `pipeline` over groups_x by groups_y workgroups with these buffers
  // bound in order and these push constants, the copies `before` ahead of
  // it and `after` behind it, and waits for it all.
  void dispatch(const Pipeline& pipeline, const std::vector<Buffer*>& buffers, const std::vector<uint8_t>& push, uint32_t groups_x,
                uint32_t groups_y, const std::vector<Copy>& before = {}, const std::vector<Copy>& after = {});

  // Milliseconds the last dispatch's shader ran, by the queue's timestamps
  // around it (the copies excluded); -1 where the queue has no timestamps.
  double last_dispatch_milliseconds() const { return last_dispatch_ms_; }

 private:
  // The memory type for a buffer (allowed: its requirements' bits).
  uint32_t memory_type(uint32_t allowed, Memory memory) const;

  VkPhysicalDevice physical_;
  VkDevice device_ = VK_NULL_HANDLE;
  VolkDeviceTable api_{};
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  std::mutex mu_;  // the queue and the command pool are used by one thread at a time
  std::string id_, name_;
  VkPhysicalDeviceType type_ = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version_ = 0, driver_version_ = 0;
  uint64_t memory_bytes_ = 0;
  uint32_t push_limit_ = 0;
  uint64_t max_buffer_bytes_ = 0;
  bool stages_ = false;
  VkQueryPool timestamps_ = VK_NULL_HANDLE;  // two, around the dispatch; null where the queue has none
  double timestamp_ns_ = 0;                  // nanoseconds per tick
  uint64_t timestamp_mask_ = 0;              // the bits the queue's timestamps keep
  double last_dispatch_ms_ = -1;
  GpuTarget target_;
  VkPhysicalDeviceMemoryProperties memory_{};
};

}  // namespace zyntax::vulkan
