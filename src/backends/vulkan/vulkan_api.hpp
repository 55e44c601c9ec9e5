// The Vulkan API, opened at run time: volk loads the loader
// (libvulkan.so.1; $ZYNTAX_VULKAN_LOADER names another), so zyntax builds
// and runs where there is no Vulkan at all and simply has no vulkan:N
// device. One instance per process; with ZYNTAX_VULKAN_VALIDATION=1 it
// runs under the Khronos validation layer, and every message the layer
// gives is printed to standard error and makes the next kernel run fail.
#pragma once

#include <volk.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace zyntax::vulkan {

// A failed Vulkan call: "vkCreateDevice failed: VK_ERROR_OUT_OF_HOST_MEMORY".
class VulkanError : public std::runtime_error {
 public:
  VulkanError(const std::string& call, VkResult r);
  VkResult result() const { return result_; }

 private:
  VkResult result_;
};

const char* result_name(VkResult r);

// A Vulkan structure with its sType set and everything else zero.
template <class T>
T make(VkStructureType type) {
  T s{};
  s.sType = type;
  return s;
}
// Throws VulkanError naming `call` unless `r` is VK_SUCCESS.
void check(VkResult r, const char* call);

class Instance {
 public:
  // The process's instance; null where there is no loader or no instance
  // can be made (why_not() says why).
  static Instance* get();
  static const std::string& why_not();

  VkInstance handle() const { return instance_; }
  std::vector<VkPhysicalDevice> physical_devices() const;
  bool validating() const { return messenger_ != VK_NULL_HANDLE; }
  // The validation layer's messages since the last call (then forgotten).
  std::vector<std::string> take_messages();

 private:
  Instance() = default;
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
                                                    const VkDebugUtilsMessengerCallbackDataEXT* data, void* self);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::mutex mu_;
  std::vector<std::string> messages_;
};

}  // namespace zyntax::vulkan
