#include "backends/rocm/hip_api.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace zyntax::rocm {

const std::vector<std::string>& Hip::libraries() {
  // The unversioned name first (what ROCm's own tools open), then the
  // versioned ones a runtime package installs without its development files.
  static const std::vector<std::string> names = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  return names;
}

std::unique_ptr<Hip> Hip::open(const std::string& path, std::string* why) {
  bool loaded = false;
  return open(path, why, &loaded);
}

std::unique_ptr<Hip> Hip::open(const std::string& path, std::string* why, bool* loaded) {
  // Never unloaded: modules, streams and pinned memory live as long as the process.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  *loaded = lib != nullptr;
  if (!lib) {
    const char* e = dlerror();
    *why = "no HIP runtime (" + (e ? std::string(e) : path + " cannot be loaded") + ")";
    return nullptr;
  }
  std::unique_ptr<Hip> h(new Hip());
  h->library = path;
  std::string missing;
#define ZYNTAX_RESOLVE_HIP_FUNCTION(name, symbol, type)                    \
  h->name = reinterpret_cast<std::add_pointer_t<type>>(dlsym(lib, symbol)); \
  if (!h->name) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  ZYNTAX_HIP_FUNCTIONS(ZYNTAX_RESOLVE_HIP_FUNCTION)
#undef ZYNTAX_RESOLVE_HIP_FUNCTION
  // Optional: left null where the runtime lacks them.
#define ZYNTAX_RESOLVE_OPTIONAL_HIP_FUNCTION(name, symbol, type) \
  h->name = reinterpret_cast<std::add_pointer_t<type>>(dlsym(lib, symbol));
  ZYNTAX_HIP_OPTIONAL_FUNCTIONS(ZYNTAX_RESOLVE_OPTIONAL_HIP_FUNCTION)
#undef ZYNTAX_RESOLVE_OPTIONAL_HIP_FUNCTION
  if (!h->hipInit) {
    *why = path + " is not a HIP runtime: it lacks hipInit";
    return nullptr;
  }
  if (!missing.empty()) {
    *why = "the HIP runtime " + path + " is too old: it lacks " + missing;
    return nullptr;
  }
  // The version needs no GPU; older runtimes number the device attributes differently.
  if (hipError_t r = h->hipRuntimeGetVersion(&h->runtime_version); r != hipSuccess) {
    *why = "the HIP runtime " + path + " does not tell its version: hipRuntimeGetVersion failed: " + h->error_text(r);
    return nullptr;
  }
  h->hipDriverGetVersion(&h->driver_version);
  if (h->runtime_version < kOldestRuntimeVersion) {
    *why = "the HIP runtime " + path + " is HIP " + version_text(h->runtime_version) +
           ", too old: HIP 5.0 (ROCm 5) or newer is needed";
    return nullptr;
  }
  // hipErrorNoDevice: the runtime works but sees no GPU; gpu_unavailable_reason() says so.
  h->init_result = h->hipInit(0);
  if (h->init_result != hipSuccess && h->init_result != hipErrorNoDevice) {
    *why = "the HIP runtime " + path + " does not start: hipInit failed: " + h->error_text(h->init_result);
    return nullptr;
  }
  why->clear();
  return h;
}

std::unique_ptr<Hip> Hip::open_default(std::string* why) {
  const char* env = std::getenv("ZYNTAX_HIP_RUNTIME");
  if (env && *env) return open(env, why);
  // The first library that loads decides: a broken runtime is reported, not
  // passed over for an older one.
  std::string first_why;
  for (const std::string& name : libraries()) {
    bool loaded = false;
    std::unique_ptr<Hip> h = open(name, why, &loaded);
    if (h || loaded) return h;
    if (first_why.empty()) first_why = *why;
  }
  // "no HIP runtime (libamdhip64.so: cannot open ...; libamdhip64.so.6 and libamdhip64.so.5 do not open either)".
  const std::vector<std::string>& names = libraries();
  std::string others;
  for (size_t i = 1; i < names.size(); ++i) others += (i == 1 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  *why = first_why.substr(0, first_why.size() - 1) + "; " + others + " do not open either)";
  return nullptr;
}

const Hip::Opened& Hip::opened() {
  static const Opened o = [] {
    Opened r;
    r.hip = open_default(&r.why);
    return r;
  }();
  return o;
}

const Hip* Hip::get() { return opened().hip.get(); }

const std::string& Hip::unavailable_reason() { return opened().why; }

std::string Hip::version_text(int version) {
  // HIP 4.0 and older encoded major * 100 + minor.
  if (version < 10000000) return std::to_string(version / 100) + "." + std::to_string(version % 100);
  return std::to_string(version / 10000000) + "." + std::to_string(version / 100000 % 100) + "." +
         std::to_string(version % 100000);
}

std::string Hip::error_text(hipError_t r) const {
  const char* name = hipGetErrorName ? hipGetErrorName(r) : nullptr;
  const char* text = hipGetErrorString ? hipGetErrorString(r) : nullptr;
  std::string s = name && *name ? name : "HIP error " + std::to_string(r);
  if (text && *text) s += std::string(" (") + text + ")";
  return s;
}

void Hip::check(hipError_t r, const std::string& operation) const {
  if (r != hipSuccess) throw HipError(operation + " failed: " + error_text(r), r);
}

std::string Hip::arch_name(int ordinal) const {
  // The newest layout the runtime has: R0600 from HIP 6.0, else the R0000
  // layout that hipGetDeviceProperties has in every release.
  auto get_properties = hipGetDevicePropertiesR0600 ? hipGetDevicePropertiesR0600 : hipGetDeviceProperties;
  size_t offset = hipGetDevicePropertiesR0600 ? kGcnArchNameOffsetR0600 : kGcnArchNameOffsetR0000;
  std::string at = " (rocm:" + std::to_string(ordinal) + ")";
  if (!get_properties)
    throw HipError("the HIP runtime " + library + " cannot name the GPU's architecture" + at +
                       ": it has neither hipGetDevicePropertiesR0600 nor hipGetDeviceProperties",
                   hipErrorNotFound);
  // Zeroed and aligned like the struct (its widest members are size_t and pointers).
  struct alignas(16) Buffer {
    unsigned char bytes[kDevicePropBufferBytes];
  };
  auto buffer = std::make_unique<Buffer>();
  std::memset(buffer->bytes, 0, sizeof buffer->bytes);
  check(get_properties(buffer->bytes, ordinal),
        std::string(hipGetDevicePropertiesR0600 ? "hipGetDevicePropertiesR0600" : "hipGetDeviceProperties") + at);
  const char* name = reinterpret_cast<const char*>(buffer->bytes + offset);
  return std::string(name, strnlen(name, kGcnArchNameBytes));
}

std::optional<bool> gfx_feature(const std::vector<std::string>& features, std::string_view feature) {
  for (const std::string& f : features)
    if (f.size() == feature.size() + 1 && std::string_view(f).substr(0, feature.size()) == feature)
      return f.back() == '+';
  return std::nullopt;
}

std::optional<bool> GfxArch::feature(std::string_view f) const { return gfx_feature(features, f); }

std::string GfxArch::full_name() const {
  std::string s = name;
  for (const std::string& f : features) s += ":" + f;
  return s;
}

std::optional<GfxArch> parse_gfx_arch(std::string_view text) {
  auto word = [](std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
    return true;
  };
  GfxArch arch;
  size_t colon = text.find(':');
  std::string_view name = text.substr(0, colon);
  if (name.size() <= 3 || name.substr(0, 3) != "gfx" || !word(name.substr(3))) return std::nullopt;
  arch.name = std::string(name);
  while (colon != std::string_view::npos) {
    text = text.substr(colon + 1);
    colon = text.find(':');
    std::string_view f = text.substr(0, colon);
    if (f.size() < 2 || (f.back() != '+' && f.back() != '-') || !word(f.substr(0, f.size() - 1))) return std::nullopt;
    arch.features.emplace_back(f);
  }
  return arch;
}

std::string gpu_unavailable_reason(const Hip& hip) {
  int n = 0;
  hipError_t r = hip.hipGetDeviceCount(&n);
  // hipErrorNoDevice with a count of 0: the runtime's way of saying there is none.
  if (r == hipErrorNoDevice || (r == hipSuccess && n == 0)) return "the HIP runtime reports no GPU";
  if (r != hipSuccess) return "the HIP runtime cannot count devices: " + hip.error_text(r);
  return "";
}

std::string gpu_unavailable_reason() {
  const Hip* h = Hip::get();
  if (!h) return Hip::unavailable_reason();
  return gpu_unavailable_reason(*h);
}

bool gpu_available() {
  const Hip* h = Hip::get();
  return h && gpu_unavailable_reason(*h).empty();
}

}  // namespace zyntax::rocm
