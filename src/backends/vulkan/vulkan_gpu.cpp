#include "backends/vulkan/vulkan_gpu.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace zyntax::vulkan {

namespace {

// What the device offers, and whether it has what the GLSL backend needs.
struct Features {
  VkPhysicalDeviceFeatures2 core = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  VkPhysicalDeviceVulkan11Features v11 = make<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  VkPhysicalDeviceVulkan12Features v12 = make<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);

  explicit Features(VkPhysicalDevice d) {
    core.pNext = &v11;
    v11.pNext = &v12;
    vkGetPhysicalDeviceFeatures2(d, &core);
  }

  // Why the backend cannot use the device, or "".
  std::string missing() const {
    if (!core.features.shaderInt64) return "it has no 64-bit integers in shaders (shaderInt64)";
    if (!v12.shaderBufferInt64Atomics) return "it has no 64-bit atomics on buffers (shaderBufferInt64Atomics)";
    if (!v12.storageBuffer8BitAccess) return "it has no 8-bit storage (storageBuffer8BitAccess)";
    if (!v11.storageBuffer16BitAccess) return "it has no 16-bit storage (storageBuffer16BitAccess)";
    return "";
  }
};

int compute_queue_family(VkPhysicalDevice d) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(d, &n, families.data());
  for (uint32_t i = 0; i < n; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
  return -1;
}

std::string version_text(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." + std::to_string(VK_API_VERSION_PATCH(v));
}

}  // namespace

std::vector<std::unique_ptr<Gpu>> Gpu::open_all(std::vector<std::string>* skipped) {
  std::vector<std::unique_ptr<Gpu>> out;
  Instance* instance = Instance::get();
  if (!instance) return out;
  int ordinal = 0;
  for (VkPhysicalDevice d : instance->physical_devices()) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    std::string why;
    if (p.apiVersion < VK_API_VERSION_1_2) why = "it supports Vulkan " + version_text(p.apiVersion) + ", not 1.2";
    else if (compute_queue_family(d) < 0) why = "it has no compute queue";
    else why = Features(d).missing();
    if (!why.empty()) {
      if (skipped) skipped->push_back(std::string(p.deviceName) + ": " + why);
      continue;
    }
    out.push_back(std::make_unique<Gpu>(d, ordinal++));
  }
  return out;
}

Gpu::Gpu(VkPhysicalDevice physical, int ordinal) : physical_(physical) {
  auto subgroup = make<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto driver = make<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  auto float_controls = make<VkPhysicalDeviceFloatControlsProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES);
  auto props = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props.pNext = &subgroup;
  subgroup.pNext = &driver;
  driver.pNext = &float_controls;
  vkGetPhysicalDeviceProperties2(physical, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  id_ = "vulkan:" + std::to_string(ordinal);
  name_ = p.deviceName;
  type_ = p.deviceType;
  api_version_ = p.apiVersion;
  driver_version_ = p.driverVersion;
  push_limit_ = p.limits.maxPushConstantsSize;
  max_buffer_bytes_ = p.limits.maxStorageBufferRange;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory_);
  const VkMemoryPropertyFlags shared = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  stages_ = true;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if ((memory_.memoryTypes[i].propertyFlags & shared) == shared) stages_ = false;
  if (const char* force = std::getenv("ZYNTAX_VULKAN_STAGING"); force && std::string(force) == "1") stages_ = true;
  for (uint32_t h = 0; h < memory_.memoryHeapCount; ++h)
    if (memory_.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) memory_bytes_ = std::max<uint64_t>(memory_bytes_, memory_.memoryHeaps[h].size);

  Features f(physical);
  // What the planner may use (plan/gpu_plan) and the GLSL emitter writes.
  target_.api = GpuApi::Vulkan;
  target_.arch = name_;
  target_.subgroup_size = static_cast<int>(std::max<uint32_t>(subgroup.subgroupSize, 1));
  target_.max_threads_per_block = static_cast<int>(std::min(p.limits.maxComputeWorkGroupInvocations, p.limits.maxComputeWorkGroupSize[0]));
  target_.max_blocks = p.limits.maxComputeWorkGroupCount[0];
  // Vulkan does not say how many compute units a device has: a CPU's cores
  // for a software device, else a modest guess (it only sizes tiles).
  unsigned cores = std::thread::hardware_concurrency();
  target_.multiprocessors = is_cpu() ? static_cast<int>(std::max(cores, 1u)) : 16;
  target_.shared_memory_static = target_.shared_memory_max = p.limits.maxComputeSharedMemorySize;
  target_.private_memory_per_thread = 64 << 10;
  target_.vector_bytes = 16;
  target_.index_bits = 64;
  target_.f64 = f.core.features.shaderFloat64;
  target_.preserves_ieee_specials_f32 = float_controls.shaderSignedZeroInfNanPreserveFloat32;
  target_.preserves_ieee_specials_f64 = float_controls.shaderSignedZeroInfNanPreserveFloat64;
  target_.f16 = target_.bf16 = f.v11.storageBuffer16BitAccess;
  target_.i64 = true;
  bool compute_subgroups = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  target_.subgroup_shuffles = compute_subgroups && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) &&
                              (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
  // ZYNTAX_VULKAN_NO_SUBGROUPS=1: plan and write as for a device without
  // subgroup shuffles (block reductions in shared memory), to test that path.
  if (const char* off = std::getenv("ZYNTAX_VULKAN_NO_SUBGROUPS"); off && std::string(off) == "1") target_.subgroup_shuffles = false;
  // ZYNTAX_VULKAN_NO_F64=1: as for a device without shaderFloat64 (the f32
  // math of codegen/shader/f32_math instead of the f64 helpers).
  if (const char* off = std::getenv("ZYNTAX_VULKAN_NO_F64"); off && std::string(off) == "1") target_.f64 = false;
  target_.async_copy = false;
  // Mesa's lavapipe ends loops once an invocation has run 65,535 iterations of them in all.
  target_.loop_budget = driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE ? 65535 : 0;
  target_.max_storage_buffers = static_cast<int>(std::min<uint32_t>(p.limits.maxPerStageDescriptorStorageBuffers, 1u << 20));
  if (const char* most = std::getenv("ZYNTAX_VULKAN_MAX_STORAGE_BUFFERS"); most && std::atoi(most) > 0)
    target_.max_storage_buffers = std::min(target_.max_storage_buffers, std::atoi(most));  // to try a device with fewer
  target_.max_shader_helper_calls = driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE ? 64 : 0;
  target_.atomics = GpuAtomics{.float_add = false, .block_scope = true, .system_scope = false, .system_scope_min_bytes = 4};
  target_.matrix_units = {};
  target_.precision = PrecisionContract::Ieee;
  if (target_.max_threads_per_block < target_.subgroup_size) target_.max_threads_per_block = target_.subgroup_size;

  // The logical device with every feature the shaders may use that it has.
  queue_family_ = static_cast<uint32_t>(compute_queue_family(physical));
  float priority = 1.0f;
  auto qi = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qi.queueFamilyIndex = queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  auto core = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  auto v11 = make<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto v12 = make<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  core.pNext = &v11;
  v11.pNext = &v12;
  core.features.shaderInt64 = VK_TRUE;
  core.features.shaderFloat64 = f.core.features.shaderFloat64;
  core.features.shaderInt16 = f.core.features.shaderInt16;
  v11.storageBuffer16BitAccess = VK_TRUE;
  v12.storageBuffer8BitAccess = VK_TRUE;
  v12.shaderBufferInt64Atomics = VK_TRUE;
  v12.shaderInt8 = f.v12.shaderInt8;
  v12.shaderFloat16 = f.v12.shaderFloat16;
  auto di = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  di.pNext = &core;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  check(vkCreateDevice(physical, &di, nullptr, &device_), "vkCreateDevice");
  volkLoadDeviceTable(&api_, device_);
  api_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  auto pi = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = queue_family_;
  check(api_.vkCreateCommandPool(device_, &pi, nullptr, &command_pool_), "vkCreateCommandPool");
  // Timestamps around each dispatch, where the compute queue keeps them.
  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family(families);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, family.data());
  uint32_t bits = family[queue_family_].timestampValidBits;
  if (bits > 0 && p.limits.timestampPeriod > 0) {
    auto qpi = make<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpi.queryCount = 2;
    check(api_.vkCreateQueryPool(device_, &qpi, nullptr, &timestamps_), "vkCreateQueryPool");
    timestamp_ns_ = p.limits.timestampPeriod;
    timestamp_mask_ = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  }
}

Gpu::~Gpu() {
  if (device_ == VK_NULL_HANDLE) return;
  api_.vkDeviceWaitIdle(device_);
  if (timestamps_) api_.vkDestroyQueryPool(device_, timestamps_, nullptr);
  if (command_pool_) api_.vkDestroyCommandPool(device_, command_pool_, nullptr);
  api_.vkDestroyDevice(device_, nullptr);
}

std::string Gpu::driver_text() const { return "Vulkan " + version_text(api_version_); }

uint32_t Gpu::memory_type(uint32_t allowed, Memory memory) const {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkMemoryPropertyFlags want = memory == Memory::Device ? VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) : host;
  // Shared: device-local where some host-visible memory is; staging: cached
  // (the host reads results back from it).
  const VkMemoryPropertyFlags prefer = memory == Memory::Shared    ? VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
                                       : memory == Memory::Staging ? VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                                                                   : VkMemoryPropertyFlags(0);
  int best = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags flags = memory_.memoryTypes[i].propertyFlags;
    if (!(allowed & (1u << i)) || (flags & want) != want) continue;
    if (best < 0 || (prefer && (flags & prefer))) best = static_cast<int>(i);
  }
  if (best < 0) throw VulkanError(std::string("choosing ") + (memory == Memory::Device ? "device-local" : "host-visible, coherent") + " memory for a buffer",
                                  VK_ERROR_FEATURE_NOT_PRESENT);
  return static_cast<uint32_t>(best);
}

// Whole 32-bit words (atomics on narrower elements take their word), at least one.
Gpu::Buffer::Buffer(Gpu& gpu, size_t bytes, Memory memory) : gpu_(gpu), bytes_(std::max<size_t>((bytes + 3) / 4 * 4, 4)) {
  const VolkDeviceTable& api = gpu.api_;
  auto bi = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = bytes_;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(api.vkCreateBuffer(gpu.device_, &bi, nullptr, &buffer_), "vkCreateBuffer");
  VkMemoryRequirements req;
  api.vkGetBufferMemoryRequirements(gpu.device_, buffer_, &req);
  auto ai = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = gpu.memory_type(req.memoryTypeBits, memory);
  VkResult r = api.vkAllocateMemory(gpu.device_, &ai, nullptr, &memory_);
  if (r != VK_SUCCESS) {
    api.vkDestroyBuffer(gpu.device_, buffer_, nullptr);
    throw VulkanError("vkAllocateMemory (" + std::to_string(bytes_) + " bytes on " + gpu.id_ + ")", r);
  }
  check(api.vkBindBufferMemory(gpu.device_, buffer_, memory_, 0), "vkBindBufferMemory");
  if (memory != Memory::Device) check(api.vkMapMemory(gpu.device_, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
}

Gpu::Buffer::~Buffer() {
  const VolkDeviceTable& api = gpu_.api_;
  if (mapped_) api.vkUnmapMemory(gpu_.device_, memory_);
  if (buffer_) api.vkDestroyBuffer(gpu_.device_, buffer_, nullptr);
  if (memory_) api.vkFreeMemory(gpu_.device_, memory_, nullptr);
}

Gpu::Pipeline::Pipeline(Gpu& gpu, const std::vector<uint32_t>& spirv, int bindings, uint32_t push_bytes)
    : gpu_(gpu), bindings_(bindings), push_bytes_(push_bytes) {
  const VolkDeviceTable& api = gpu.api_;
  auto si = make<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  si.codeSize = spirv.size() * 4;
  si.pCode = spirv.data();
  check(api.vkCreateShaderModule(gpu.device_, &si, nullptr, &module_), "vkCreateShaderModule");
  std::vector<VkDescriptorSetLayoutBinding> slots(static_cast<size_t>(bindings));
  for (int i = 0; i < bindings; ++i) {
    slots[static_cast<size_t>(i)] = {static_cast<uint32_t>(i), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  auto li = make<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  li.bindingCount = static_cast<uint32_t>(slots.size());
  li.pBindings = slots.data();
  check(api.vkCreateDescriptorSetLayout(gpu.device_, &li, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  auto pl = make<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout_;
  pl.pushConstantRangeCount = push_bytes ? 1 : 0;
  pl.pPushConstantRanges = push_bytes ? &range : nullptr;
  check(api.vkCreatePipelineLayout(gpu.device_, &pl, nullptr, &layout_), "vkCreatePipelineLayout");
  auto ci = make<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, module_, "main", nullptr};
  ci.layout = layout_;
  check(api.vkCreateComputePipelines(gpu.device_, VK_NULL_HANDLE, 1, &ci, nullptr, &pipeline_), "vkCreateComputePipelines");
}

Gpu::Pipeline::~Pipeline() {
  const VolkDeviceTable& api = gpu_.api_;
  if (pipeline_) api.vkDestroyPipeline(gpu_.device_, pipeline_, nullptr);
  if (layout_) api.vkDestroyPipelineLayout(gpu_.device_, layout_, nullptr);
  if (set_layout_) api.vkDestroyDescriptorSetLayout(gpu_.device_, set_layout_, nullptr);
  if (module_) api.vkDestroyShaderModule(gpu_.device_, module_, nullptr);
}

void Gpu::dispatch(const Pipeline& pipeline, const std::vector<Buffer*>& buffers, const std::vector<uint8_t>& push, uint32_t groups_x,
                   uint32_t groups_y, const std::vector<Copy>& before, const std::vector<Copy>& after) {
  if (static_cast<int>(buffers.size()) != pipeline.bindings_ || push.size() != pipeline.push_bytes_)
    throw std::logic_error("Vulkan dispatch: the buffers or push constants do not match the pipeline");
  const VolkDeviceTable& api = api_;
  // A descriptor pool of the run's own (a few buffers), freed with it.
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, static_cast<uint32_t>(std::max<size_t>(buffers.size(), 1))};
  auto dpi = make<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check(api.vkCreateDescriptorPool(device_, &dpi, nullptr, &pool), "vkCreateDescriptorPool");
  struct Release {
    const VolkDeviceTable& api;
    VkDevice device;
    VkDescriptorPool pool;
    VkFence fence = VK_NULL_HANDLE;
    ~Release() {
      if (fence) api.vkDestroyFence(device, fence, nullptr);
      api.vkDestroyDescriptorPool(device, pool, nullptr);
    }
  } release{api, device_, pool};
  auto ai = make<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
  ai.descriptorPool = pool;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &pipeline.set_layout_;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check(api.vkAllocateDescriptorSets(device_, &ai, &set), "vkAllocateDescriptorSets");
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i]->handle(), 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, static_cast<uint32_t>(i), 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                 nullptr, &infos[i], nullptr};
  }
  api.vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  auto fi = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  check(api.vkCreateFence(device_, &fi, nullptr, &release.fence), "vkCreateFence");

  std::lock_guard<std::mutex> lock(mu_);
  auto ci = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  ci.commandPool = command_pool_;
  ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ci.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  check(api.vkAllocateCommandBuffers(device_, &ci, &cmd), "vkAllocateCommandBuffers");
  struct FreeCommands {
    const VolkDeviceTable& api;
    VkDevice device;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    ~FreeCommands() { api.vkFreeCommandBuffers(device, pool, 1, &cmd); }
  } free_commands{api, device_, command_pool_, cmd};
  auto bi = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(api.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  auto record = [&](const std::vector<Copy>& copies) {
    for (const Copy& c : copies) {
      VkBufferCopy region{0, 0, std::max<size_t>((c.bytes + 3) / 4 * 4, 4)};
      api.vkCmdCopyBuffer(cmd, c.from->handle(), c.to->handle(), 1, &region);
    }
  };
  if (!before.empty()) {
    record(before);
    VkMemoryBarrier copied{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                           VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &copied, 0, nullptr, 0, nullptr);
  }
  if (timestamps_) {
    api.vkCmdResetQueryPool(cmd, timestamps_, 0, 2);
    api.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps_, 0);
  }
  api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline_);
  api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout_, 0, 1, &set, 0, nullptr);
  if (!push.empty())
    api.vkCmdPushConstants(cmd, pipeline.layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push.size()), push.data());
  api.vkCmdDispatch(cmd, groups_x, groups_y, 1);
  if (timestamps_) api.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, timestamps_, 1);
  if (!after.empty()) {
    VkMemoryBarrier written{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT};
    api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &written, 0, nullptr, 0, nullptr);
    record(after);
  }
  // The shader's (or the copies') writes visible to the host once the fence signals.
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr,
                          after.empty() ? VkAccessFlags(VK_ACCESS_SHADER_WRITE_BIT) : VkAccessFlags(VK_ACCESS_TRANSFER_WRITE_BIT), VK_ACCESS_HOST_READ_BIT};
  api.vkCmdPipelineBarrier(cmd, after.empty() ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT : VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                           &to_host, 0, nullptr, 0, nullptr);
  check(api.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  auto submit = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  check(api.vkQueueSubmit(queue_, 1, &submit, release.fence), "vkQueueSubmit");
  check(api.vkWaitForFences(device_, 1, &release.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  last_dispatch_ms_ = -1;
  if (timestamps_) {
    uint64_t ticks[2] = {0, 0};
    check(api.vkGetQueryPoolResults(device_, timestamps_, 0, 2, sizeof ticks, ticks, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    last_dispatch_ms_ = static_cast<double>((ticks[1] - ticks[0]) & timestamp_mask_) * timestamp_ns_ / 1e6;
  }
}

}  // namespace zyntax::vulkan
