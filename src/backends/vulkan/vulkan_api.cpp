#define VOLK_IMPLEMENTATION
#include "backends/vulkan/vulkan_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace zyntax::vulkan {

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "an unknown VkResult";
  }
}

VulkanError::VulkanError(const std::string& call, VkResult r)
    : std::runtime_error(call + " failed: " + result_name(r) + " (" + std::to_string(static_cast<int>(r)) + ")"), result_(r) {}

void check(VkResult r, const char* call) {
  if (r != VK_SUCCESS) throw VulkanError(call, r);
}

namespace {

std::string& why_none() {
  static std::string why;
  return why;
}

bool wants_validation() {
  const char* v = std::getenv("ZYNTAX_VULKAN_VALIDATION");
  return v && std::string(v) == "1";
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (const VkLayerProperties& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

// The loader: $ZYNTAX_VULKAN_LOADER, else the system's libvulkan.so.1.
bool load_loader() {
  if (const char* path = std::getenv("ZYNTAX_VULKAN_LOADER")) {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      why_none() = std::string("no Vulkan loader (") + dlerror() + ")";
      return false;
    }
    auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!get) {
      why_none() = std::string("'") + path + "' is not a Vulkan loader (no vkGetInstanceProcAddr)";
      return false;
    }
    volkInitializeCustom(get);
    return true;
  }
  if (volkInitialize() != VK_SUCCESS) {
    why_none() = "no Vulkan loader (libvulkan.so.1 cannot be opened)";
    return false;
  }
  return true;
}

}  // namespace

const std::string& Instance::why_not() {
  get();
  return why_none();
}

Instance* Instance::get() {
  static Instance* instance = []() -> Instance* {
    if (!load_loader()) return nullptr;
    auto* self = new Instance();  // never destroyed: devices outlive static destruction
    bool validate = wants_validation() && has_layer("VK_LAYER_KHRONOS_validation");
    if (wants_validation() && !validate)
      std::cerr << "zyntax: ZYNTAX_VULKAN_VALIDATION=1, but the Khronos validation layer is not installed\n";
    auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "zyntax";
    app.apiVersion = VK_API_VERSION_1_2;
    std::vector<const char*> layers, extensions;
    if (validate) {
      layers.push_back("VK_LAYER_KHRONOS_validation");
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    auto ci = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    ci.pApplicationInfo = &app;
    ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
    ci.ppEnabledLayerNames = layers.data();
    ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    ci.ppEnabledExtensionNames = extensions.data();
    VkResult r = vkCreateInstance(&ci, nullptr, &self->instance_);
    if (r != VK_SUCCESS) {
      why_none() = std::string("vkCreateInstance failed: ") + result_name(r);
      delete self;
      return nullptr;
    }
    volkLoadInstance(self->instance_);
    if (validate) {
      auto mi = make<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
      mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
      mi.pfnUserCallback = &Instance::on_message;
      mi.pUserData = self;
      check(vkCreateDebugUtilsMessengerEXT(self->instance_, &mi, nullptr, &self->messenger_), "vkCreateDebugUtilsMessengerEXT");
    }
    return self;
  }();
  return instance;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void* self) {
  std::string text = data && data->pMessage ? data->pMessage : "(no message)";
  std::cerr << "zyntax: vulkan validation " << (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning") << ": "
            << text << "\n";
  auto* instance = static_cast<Instance*>(self);
  std::lock_guard<std::mutex> lock(instance->mu_);
  instance->messages_.push_back(std::move(text));
  return VK_FALSE;
}

std::vector<std::string> Instance::take_messages() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.swap(messages_);
  return out;
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
  uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> out(n);
  check(vkEnumeratePhysicalDevices(instance_, &n, out.data()), "vkEnumeratePhysicalDevices");
  return out;
}

}  // namespace zyntax::vulkan
