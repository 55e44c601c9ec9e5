// The rocm backend's runtime against a fake HIP runtime (tests/rocm/fake_hip.cpp,
// built as libzyntax_fake_hip.so; no GPU or ROCm needed): opening the runtime
// and why it cannot be, the properties and architecture read back (from both
// hipDeviceProp_t layouts), memory and copies, code objects, kernels and
// launches as the runtime receives them, mapped and pinned host memory,
// streams and events, and errors naming the GPU; and the rocm:N device (the
// run shared with cuda, backends/module_gpu_device) end to end, but for the
// kernel's own work, which a test writes into the output's device memory. The fake's path comes from
// ZYNTAX_FAKE_HIP_LIBRARY (a compile definition, or the environment);
// without it the tests skip.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "../rocm/fake_hip.h"
#include "backends/rocm/hip_api.hpp"
#include "backends/registry.hpp"
#include "backends/rocm/rocm_device.hpp"
#include "backends/rocm/rocm_gpu.hpp"
#include "kernel_source.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor.hpp"
#include "test_helpers.hpp"

namespace zyntax::rocm {
namespace {

using testing::message_of;

std::string library_path(const char* env, const char* built) {
  const char* e = std::getenv(env);
  return e && *e ? e : built;
}

#ifdef ZYNTAX_FAKE_HIP_LIBRARY
const std::string kFake = library_path("ZYNTAX_FAKE_HIP_LIBRARY", ZYNTAX_FAKE_HIP_LIBRARY);
#else
const std::string kFake = library_path("ZYNTAX_FAKE_HIP_LIBRARY", "");
#endif
#ifdef ZYNTAX_FAKE_HIP5_LIBRARY
const std::string kFake5 = library_path("ZYNTAX_FAKE_HIP5_LIBRARY", ZYNTAX_FAKE_HIP5_LIBRARY);
#else
const std::string kFake5 = library_path("ZYNTAX_FAKE_HIP5_LIBRARY", "");
#endif

// Sets an environment variable for the life of the value, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The fake's own functions (fake_hip.h), from the library the runtime opened.
struct FakeApi {
  void* lib = nullptr;
  template <class F>
  F* fn(const char* name) const {
    auto* f = reinterpret_cast<F*>(dlsym(lib, name));
    EXPECT_NE(f, nullptr) << name;
    return f;
  }
  void reset() const { fn<void()>("zyntax_fake_hip_reset")(); }
  void set_memory_limit(size_t b) const { fn<void(size_t)>("zyntax_fake_hip_set_memory_limit")(b); }
  void set_host_memory_limit(size_t b) const { fn<void(size_t)>("zyntax_fake_hip_set_host_memory_limit")(b); }
  void set_arg_sizes(const std::vector<size_t>& s) const {
    fn<void(const size_t*, int)>("zyntax_fake_hip_set_arg_sizes")(s.data(), static_cast<int>(s.size()));
  }
  int launches() const { return fn<int()>("zyntax_fake_hip_launches")(); }
  ZyntaxFakeHipLaunch launch(int i) const {
    ZyntaxFakeHipLaunch l{};
    EXPECT_EQ(fn<int(int, ZyntaxFakeHipLaunch*)>("zyntax_fake_hip_launch")(i, &l), 1);
    return l;
  }
  std::vector<unsigned char> launch_arg(int i, int arg) const {
    auto get = fn<size_t(int, int, void*, size_t)>("zyntax_fake_hip_launch_arg");
    std::vector<unsigned char> bytes(get(i, arg, nullptr, 0));
    get(i, arg, bytes.data(), bytes.size());
    return bytes;
  }
  int modules() const { return fn<int()>("zyntax_fake_hip_modules")(); }
  std::string module_image(int i) const {
    const void* p = nullptr;
    size_t n = fn<size_t(int, const void**)>("zyntax_fake_hip_module_image")(i, &p);
    return std::string(static_cast<const char*>(p), n);
  }
  int modules_unloaded() const { return fn<int()>("zyntax_fake_hip_modules_unloaded")(); }
  std::vector<std::string> functions() const {
    std::vector<std::string> names;
    int n = fn<int()>("zyntax_fake_hip_functions")();
    for (int i = 0; i < n; ++i) names.push_back(fn<const char*(int)>("zyntax_fake_hip_function")(i));
    return names;
  }
  size_t device_allocations() const { return fn<size_t()>("zyntax_fake_hip_device_allocations")(); }
  size_t pinned_allocations() const { return fn<size_t()>("zyntax_fake_hip_pinned_allocations")(); }
  size_t registered_ranges() const { return fn<size_t()>("zyntax_fake_hip_registered_ranges")(); }
  int streams() const { return fn<int()>("zyntax_fake_hip_streams")(); }
  int events() const { return fn<int()>("zyntax_fake_hip_events")(); }
  int allocation_device(uint64_t p) const {
    return fn<int(const void*)>("zyntax_fake_hip_allocation_device")(reinterpret_cast<const void*>(p));
  }
  int current_device() const { return fn<int()>("zyntax_fake_hip_current_device")(); }
};

// An AMDGPU code object as far as the runtime looks: an ELF64 header for
// `mach` (EF_AMDGPU_MACH) with flags `features`, code object v5, then the
// strings of its symbol table, then one empty section header (so that the
// image's extent is in its header).
std::string code_object(const std::vector<std::string>& symbols, unsigned mach = 0x03f, unsigned features = 0) {
  std::string strings(1, '\0');
  for (const std::string& s : symbols) strings += s + '\0';
  std::string elf(64, '\0');
  auto put = [&](size_t at, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) elf[at + i] = static_cast<char>(v >> (8 * i));
  };
  elf.replace(0, 4, "\x7f" "ELF");
  elf[4] = 2;   // ELFCLASS64
  elf[5] = 1;   // little-endian
  elf[6] = 1;   // EV_CURRENT
  elf[7] = 64;  // ELFOSABI_AMDGPU_HSA
  elf[8] = 3;   // code object v5
  put(16, 3, 2);    // ET_DYN
  put(18, 224, 2);  // EM_AMDGPU
  put(20, 1, 4);
  put(40, 64 + strings.size(), 8);  // e_shoff
  put(48, mach | features, 4);      // e_flags
  put(52, 64, 2);                   // e_ehsize
  put(58, 64, 2);                   // e_shentsize
  put(60, 1, 2);                    // e_shnum
  return elf + strings + std::string(64, '\0');
}

class RocmRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kFake.empty()) GTEST_SKIP() << "built without the fake HIP runtime (ZYNTAX_FAKE_HIP_LIBRARY)";
    std::string why;
    hip_ = Hip::open(kFake, &why);
    ASSERT_NE(hip_, nullptr) << why;
    fake_.lib = dlopen(kFake.c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(fake_.lib, nullptr);
    fake_.reset();
  }
  void TearDown() override {
    if (fake_.lib) dlclose(fake_.lib);  // the runtime's own reference keeps the library loaded
  }

  std::unique_ptr<Hip> hip_;
  FakeApi fake_;
};

// ------------------------------------------------------------ opening

TEST_F(RocmRuntime, OpensTheRuntimeAndReadsItsVersion) {
  EXPECT_EQ(hip_->library, kFake);
  EXPECT_EQ(hip_->runtime_version, 60241134);
  EXPECT_EQ(hip_->version_text(), "6.2.41134");
  EXPECT_EQ(hip_->init_result, hipSuccess);
  EXPECT_NE(hip_->hipGetDevicePropertiesR0600, nullptr);
  EXPECT_NE(hip_->hipFuncSetAttribute, nullptr);
  EXPECT_EQ(gpu_unavailable_reason(*hip_), "");
  EXPECT_EQ(hip_->error_text(hipErrorOutOfMemory), "hipErrorOutOfMemory (out of memory)");
}

TEST(RocmRuntimeOpen, ANonexistentLibraryIsNamedInTheReason) {
  std::string why;
  EXPECT_EQ(Hip::open("/nonexistent/libamdhip64.so", &why), nullptr);
  EXPECT_EQ(why.rfind("no HIP runtime (/nonexistent/libamdhip64.so: cannot open shared object file", 0), 0) << why;

  // The same through $ZYNTAX_HIP_RUNTIME, as Hip::get() opens it.
  ScopedEnv env("ZYNTAX_HIP_RUNTIME", "/nonexistent/libamdhip64.so");
  EXPECT_EQ(Hip::open_default(&why), nullptr);
  EXPECT_NE(why.find("/nonexistent/libamdhip64.so"), std::string::npos) << why;
}

TEST(RocmRuntimeOpen, WithoutTheVariableTheUsualNamesAreTried) {
  ScopedEnv env("ZYNTAX_HIP_RUNTIME", nullptr);
  std::string why;
  std::unique_ptr<Hip> hip = Hip::open_default(&why);
  if (hip) GTEST_SKIP() << "this machine has a HIP runtime (" << hip->library << ")";
  if (why.find("cannot open shared object file") == std::string::npos) GTEST_SKIP() << why;
  EXPECT_EQ(why.rfind("no HIP runtime (libamdhip64.so: cannot open shared object file", 0), 0) << why;
  EXPECT_NE(why.find("; libamdhip64.so.6 and libamdhip64.so.5 do not open either)"), std::string::npos) << why;
}

TEST(RocmRuntimeOpen, GetKeepsItsAnswer) {
  // Whatever this machine has: get() answers the same twice, and says why when it has nothing.
  const Hip* first = Hip::get();
  EXPECT_EQ(Hip::get(), first);
  if (!first) {
    EXPECT_FALSE(Hip::unavailable_reason().empty());
    EXPECT_EQ(gpu_unavailable_reason(), Hip::unavailable_reason());
    EXPECT_FALSE(gpu_available());
    EXPECT_TRUE(Gpu::open_all().empty());
  }
}

TEST(RocmRuntimeOpen, ALibraryThatIsNotHipIsRefused) {
  std::string why;
  EXPECT_EQ(Hip::open("libz.so.1", &why), nullptr);
  EXPECT_EQ(why, "libz.so.1 is not a HIP runtime: it lacks hipInit");
}

TEST(RocmRuntimeOpen, ARuntimeOlderThanHip5IsRefused) {
  if (kFake.empty()) GTEST_SKIP() << "built without the fake HIP runtime";
  ScopedEnv env("ZYNTAX_FAKE_HIP_VERSION", "40522211");
  std::string why;
  EXPECT_EQ(Hip::open(kFake, &why), nullptr);
  EXPECT_EQ(why, "the HIP runtime " + kFake + " is HIP 4.5.22211, too old: HIP 5.0 (ROCm 5) or newer is needed");
}

TEST(RocmRuntimeOpen, ARuntimeThatDoesNotStartSaysWhy) {
  if (kFake.empty()) GTEST_SKIP() << "built without the fake HIP runtime";
  ScopedEnv env("ZYNTAX_FAKE_HIP_INIT_ERROR", "101");
  std::string why;
  EXPECT_EQ(Hip::open(kFake, &why), nullptr);
  EXPECT_EQ(why, "the HIP runtime " + kFake + " does not start: hipInit failed: hipErrorInvalidDevice (invalid device "
                 "ordinal)");
}

TEST(RocmRuntimeOpen, ARuntimeWithoutGpusOpensAndSaysSo) {
  if (kFake.empty()) GTEST_SKIP() << "built without the fake HIP runtime";
  ScopedEnv env("ZYNTAX_FAKE_HIP_DEVICES", "0");
  std::string why;
  std::unique_ptr<Hip> hip = Hip::open(kFake, &why);
  ASSERT_NE(hip, nullptr) << why;
  EXPECT_EQ(hip->init_result, hipErrorNoDevice);
  EXPECT_EQ(gpu_unavailable_reason(*hip), "the HIP runtime reports no GPU");
  EXPECT_TRUE(Gpu::open_all(*hip).empty());
}

// ------------------------------------------------------------ properties

TEST_F(RocmRuntime, ReadsTheGpusProperties) {
  std::vector<std::unique_ptr<Gpu>> gpus = Gpu::open_all(*hip_);
  ASSERT_EQ(gpus.size(), 1u);
  const Gpu& gpu = *gpus[0];
  const GpuProperties& p = gpu.properties();
  EXPECT_EQ(gpu.id(), "rocm:0");
  EXPECT_EQ(p.ordinal, 0);
  EXPECT_EQ(p.name, "AMD Instinct MI210");
  EXPECT_EQ(p.arch, "gfx90a");
  EXPECT_EQ(p.arch_features, (std::vector<std::string>{"sramecc+", "xnack-"}));
  EXPECT_EQ(p.arch_name(), "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(p.arch_feature("sramecc"), true);
  EXPECT_EQ(p.arch_feature("xnack"), false);
  EXPECT_EQ(p.arch_feature("tgsplit"), std::nullopt);
  EXPECT_EQ(p.major, 9);
  EXPECT_EQ(p.minor, 0);
  EXPECT_EQ(p.memory_bytes, uint64_t{64} << 30);
  EXPECT_EQ(p.compute_units, 104);
  EXPECT_EQ(p.max_threads_per_block, 1024);
  EXPECT_EQ(p.wave_size, 64);
  EXPECT_EQ(p.clock_khz, 1700000);
  EXPECT_EQ(p.memory_clock_khz, 1600000);
  EXPECT_EQ(p.memory_bus_bits, 4096);
  EXPECT_EQ(p.l2_bytes, 8 << 20);
  EXPECT_EQ(p.shared_per_block, 65536);
  EXPECT_EQ(p.shared_per_compute_unit, 65536);
  EXPECT_TRUE(p.can_map_host_memory);
  EXPECT_TRUE(p.unified_addressing);
  EXPECT_TRUE(p.managed_memory);
  EXPECT_TRUE(gpu.maps_host_memory());
  EXPECT_NEAR(p.peak_bandwidth_gbs(), 1638.4, 1e-9);
}

TEST_F(RocmRuntime, ReadsAnotherGpuFromTheEnvironment) {
  ScopedEnv arch("ZYNTAX_FAKE_HIP_ARCH", "gfx1100");
  ScopedEnv wave("ZYNTAX_FAKE_HIP_WAVE_SIZE", "32");
  ScopedEnv units("ZYNTAX_FAKE_HIP_COMPUTE_UNITS", "48");
  ScopedEnv name("ZYNTAX_FAKE_HIP_NAME", "Radeon RX 7900 XTX");
  Gpu gpu(*hip_, 0);
  EXPECT_EQ(gpu.properties().name, "Radeon RX 7900 XTX");
  EXPECT_EQ(gpu.properties().arch, "gfx1100");
  EXPECT_TRUE(gpu.properties().arch_features.empty());
  EXPECT_EQ(gpu.properties().arch_feature("xnack"), std::nullopt);
  EXPECT_EQ(gpu.properties().wave_size, 32);
  EXPECT_EQ(gpu.properties().compute_units, 48);
}

TEST(RocmRuntimeOpen, ReadsTheArchitectureFromHip5sStruct) {
  if (kFake5.empty()) GTEST_SKIP() << "built without the HIP 5 fake";
  std::string why;
  std::unique_ptr<Hip> hip = Hip::open(kFake5, &why);
  ASSERT_NE(hip, nullptr) << why;
  EXPECT_EQ(hip->version_text(), "5.7.31921");
  EXPECT_EQ(hip->hipGetDevicePropertiesR0600, nullptr);
  ASSERT_NE(hip->hipGetDeviceProperties, nullptr);
  EXPECT_EQ(hip->arch_name(0), "gfx90a:sramecc+:xnack-");
  ScopedEnv arch("ZYNTAX_FAKE_HIP_ARCH", "gfx942:sramecc+:xnack+");
  EXPECT_EQ(hip->arch_name(0), "gfx942:sramecc+:xnack+");
  Gpu gpu(*hip, 0);
  EXPECT_EQ(gpu.properties().arch, "gfx942");
  EXPECT_EQ(gpu.properties().arch_feature("xnack"), true);
}

TEST_F(RocmRuntime, TheArchitectureOfAMissingGpuIsAnError) {
  std::string m = message_of<HipError>([&] { hip_->arch_name(3); });
  EXPECT_EQ(m, "hipGetDevicePropertiesR0600 (rocm:3) failed: hipErrorInvalidDevice (invalid device ordinal)");
  m = message_of<HipError>([&] { Gpu gpu(*hip_, 1); });
  EXPECT_EQ(m, "hipDeviceGet (rocm:1) failed: hipErrorInvalidDevice (invalid device ordinal)");
}

TEST_F(RocmRuntime, AnArchitectureThatIsNotGfxIsAnError) {
  ScopedEnv arch("ZYNTAX_FAKE_HIP_ARCH", "sm_90");
  std::string m = message_of<HipError>([&] { Gpu gpu(*hip_, 0); });
  EXPECT_EQ(m, "the HIP runtime names the architecture of rocm:0 (AMD Instinct MI210) 'sm_90', not an AMD GPU "
               "architecture (gfx...)");
}

TEST(RocmGfxArch, ParsesTheRuntimesNames) {
  std::optional<GfxArch> a = parse_gfx_arch("gfx90a:sramecc+:xnack-");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "gfx90a");
  EXPECT_EQ(a->features, (std::vector<std::string>{"sramecc+", "xnack-"}));
  EXPECT_EQ(a->feature("sramecc"), true);
  EXPECT_EQ(a->feature("xnack"), false);
  EXPECT_EQ(a->feature("xnac"), std::nullopt);
  EXPECT_EQ(a->full_name(), "gfx90a:sramecc+:xnack-");

  a = parse_gfx_arch("gfx1100");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "gfx1100");
  EXPECT_TRUE(a->features.empty());
  a = parse_gfx_arch("gfx942:xnack+");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->feature("xnack"), true);
  EXPECT_EQ(a->feature("sramecc"), std::nullopt);

  for (const char* bad : {"", "gfx", "sm_90", "gfx90a:", "gfx90a:xnack", "gfx90a::xnack-", "gfx 90a", "gfx90a:+"})
    EXPECT_FALSE(parse_gfx_arch(bad)) << bad;
}

TEST(RocmGfxArch, NamesTheTargetOfACodeObject) {
  EXPECT_EQ(code_object_target(code_object({"k"})), "gfx90a");
  EXPECT_EQ(code_object_target(code_object({"k"}, 0x04c, 0xc00 | 0x200)), "gfx942:sramecc+:xnack-");
  EXPECT_EQ(code_object_target(code_object({"k"}, 0x041, 0x100)), "gfx1100");  // xnack either way
  EXPECT_EQ(code_object_target(code_object({"k"}, 0x0ff)), "");
  EXPECT_EQ(code_object_target("not a code object"), "");
}

// ------------------------------------------------------------ memory

TEST_F(RocmRuntime, BuffersRoundTrip) {
  {
    Gpu gpu(*hip_, 0);
    std::vector<float> in(1000);
    for (size_t i = 0; i < in.size(); ++i) in[i] = 0.5f * static_cast<float>(i);
    DeviceBuffer a(gpu, in.size() * sizeof(float));
    EXPECT_EQ(a.size(), 4000u);
    EXPECT_EQ(fake_.allocation_device(a.address()), 0);
    a.upload(in.data(), 4000);
    std::vector<float> out(1000, -1.0f);
    a.download(out.data(), 4000);
    EXPECT_EQ(out, in);

    // Part of one buffer into another, on the device.
    DeviceBuffer b(gpu, 400);
    b.copy_from(a, 40, 400);
    std::vector<float> part(100);
    b.download(part.data(), 400);
    EXPECT_EQ(part, std::vector<float>(in.begin() + 10, in.begin() + 110));
    EXPECT_NE(message_of<std::logic_error>([&] { b.copy_from(a, 3800, 400); }).find("do not fit"), std::string::npos);

    b.zero();
    gpu.synchronize();
    b.download(part.data(), 400);
    EXPECT_EQ(part, std::vector<float>(100, 0.0f));

    // On a stream of its own, the host waiting for the stream.
    Stream s(gpu);
    std::vector<float> seven(100, 7.0f);
    b.upload_on(s.get(), seven.data(), 400);
    b.download_on(s.get(), part.data(), 400);
    s.synchronize();
    EXPECT_EQ(part, seven);

    // A buffer moved keeps its memory; given back, the pool keeps the block.
    DeviceBuffer c = std::move(a);
    EXPECT_EQ(a.address(), 0u);
    c = DeviceBuffer();
    EXPECT_EQ(gpu.memory().stats().in_use, 512u);  // b's block: 400 bytes in the 512-byte class
    EXPECT_EQ(fake_.device_allocations(), 2u);      // a's block cached, b's live
  }
  // The GPU gave everything back: memory and stream.
  EXPECT_EQ(fake_.device_allocations(), 0u);
  EXPECT_EQ(fake_.streams(), 0);
}

TEST_F(RocmRuntime, RunningOutOfMemoryNamesTheGpuAndTheSizes) {
  Gpu gpu(*hip_, 0);
  fake_.set_memory_limit(size_t{3} << 20);
  DeviceBuffer fits(gpu, size_t{2} << 20);
  std::string m = message_of<DataError>([&] { DeviceBuffer b(gpu, size_t{2} << 20); });
  EXPECT_EQ(m, "rocm:0: out of memory: asked for 2.0 MiB with 2.0 MiB in use") << m;

  fake_.set_host_memory_limit(1024);
  m = message_of<DataError>([&] { gpu.allocate_pinned(4096); });
  EXPECT_EQ(m, "out of pinned host memory: asked for 4.0 KiB (rocm:0)");
  m = message_of<DataError>([&] { PinnedBuffer p(gpu, 4096); });
  EXPECT_EQ(m, "out of pinned host memory: asked for 4.0 KiB (rocm:0)");
}

TEST_F(RocmRuntime, HostMemoryIsMappedForKernelsWhileAViewHoldsIt) {
  Gpu gpu(*hip_, 0);
  std::vector<unsigned char> host(4096, 1);
  {
    std::shared_ptr<void> view = gpu.host_mappings().share(host.data(), host.size());
    EXPECT_EQ(fake_.registered_ranges(), 1u);
    std::optional<HostMappings::Found> found = gpu.host_mappings().find(host.data() + 100, 16);
    ASSERT_TRUE(found);
    // One address space: the GPU finds the bytes where the host has them.
    EXPECT_EQ(found->address, reinterpret_cast<uint64_t>(host.data() + 100));
  }
  EXPECT_EQ(fake_.registered_ranges(), 0u);

  std::shared_ptr<unsigned char> pinned = gpu.allocate_pinned(1000);
  EXPECT_EQ(fake_.pinned_allocations(), 1u);
  EXPECT_EQ(std::vector<unsigned char>(pinned.get(), pinned.get() + 1000), std::vector<unsigned char>(1000, 0));
  {
    std::shared_ptr<void> view = gpu.host_mappings().share(pinned.get() + 8, 100);
    EXPECT_EQ(fake_.registered_ranges(), 0u);  // adopted, not registered again
    ASSERT_TRUE(gpu.host_mappings().find(pinned.get() + 8, 100));
  }
  pinned.reset();
  EXPECT_EQ(fake_.pinned_allocations(), 0u);
  EXPECT_EQ(gpu.host_mappings().size(), 0u);

  {
    PinnedBuffer p(gpu, 256);
    EXPECT_NE(p.data(), nullptr);
    EXPECT_EQ(fake_.pinned_allocations(), 1u);
  }
  EXPECT_EQ(fake_.pinned_allocations(), 0u);
}

// ------------------------------------------------------------ modules and launches

TEST_F(RocmRuntime, LoadsCodeObjectsAndLaunchesKernels) {
  Gpu gpu(*hip_, 0);
  std::string image = code_object({"scale_rows", "scale_rows.kd", "add"});
  hipModule_t m = gpu.load_module(image);
  ASSERT_EQ(fake_.modules(), 1);
  EXPECT_EQ(fake_.module_image(0), image);

  hipFunction_t f = gpu.function(m, "scale_rows");
  EXPECT_EQ(fake_.functions(), std::vector<std::string>{"scale_rows"});
  std::string missing = message_of<HipError>([&] { gpu.function(m, "scale"); });
  EXPECT_EQ(missing, "finding kernel scale in its module on rocm:0 failed: hipErrorNotFound (named symbol not found)");

  // Arguments as cuLaunchKernel takes them: a pointer to each value.
  DeviceBuffer data(gpu, 1024);
  uint64_t address = data.address();
  int n = 256;
  float scale = 2.5f;
  void* params[] = {&address, &n, &scale};
  fake_.set_arg_sizes({sizeof address, sizeof n, sizeof scale});
  gpu.allow_dynamic_shared(f, 4096);
  gpu.launch(f, 40, 256, 4096, gpu.stream(), params);

  ASSERT_EQ(fake_.launches(), 1);
  ZyntaxFakeHipLaunch l = fake_.launch(0);
  EXPECT_STREQ(l.kernel, "scale_rows");
  EXPECT_EQ(l.module, 0);
  EXPECT_EQ(l.device, 0);
  EXPECT_EQ(std::vector<unsigned>(l.grid, l.grid + 3), (std::vector<unsigned>{40, 1, 1}));
  EXPECT_EQ(std::vector<unsigned>(l.block, l.block + 3), (std::vector<unsigned>{256, 1, 1}));
  EXPECT_EQ(l.shared_bytes, 4096u);
  EXPECT_EQ(l.stream, gpu.stream());
  ASSERT_EQ(l.arg_count, 3);
  auto bytes_of = [](const auto& v) {
    auto* p = reinterpret_cast<const unsigned char*>(&v);
    return std::vector<unsigned char>(p, p + sizeof v);
  };
  EXPECT_EQ(fake_.launch_arg(0, 0), bytes_of(address));
  EXPECT_EQ(fake_.launch_arg(0, 1), bytes_of(n));
  EXPECT_EQ(fake_.launch_arg(0, 2), bytes_of(scale));

  gpu.unload_module(m);
  EXPECT_EQ(fake_.modules_unloaded(), 1);
}

TEST_F(RocmRuntime, LaunchErrorsNameTheGpuAndTheShape) {
  Gpu gpu(*hip_, 0);
  hipModule_t m = gpu.load_module(code_object({"k"}));
  hipFunction_t f = gpu.function(m, "k");
  std::string e = message_of<HipError>([&] { gpu.launch(f, 8, 2048, 0, gpu.stream(), nullptr); });
  EXPECT_EQ(e, "launching a kernel of 8x2048 threads (0 bytes of shared memory) on rocm:0 failed: "
               "hipErrorInvalidValue (invalid argument)");
  e = message_of<HipError>([&] { gpu.allow_dynamic_shared(f, 65537); });
  EXPECT_EQ(e, "a kernel cannot have 65537 bytes of shared memory on rocm:0 (gfx90a has 65536 per block)");
}

TEST_F(RocmRuntime, ACodeObjectTheRuntimeRefusesNamesTheGpuAndItsArchitecture) {
  Gpu gpu(*hip_, 0);
  HipError e("", 0);
  try {
    gpu.load_module("// PTX, not a code object");
    FAIL() << "loaded";
  } catch (const HipError& x) {
    e = x;
  }
  EXPECT_EQ(e.code(), hipErrorInvalidImage);
  EXPECT_STREQ(e.what(), "loading a code object (25 B) on rocm:0 (AMD Instinct MI210, gfx90a:sramecc+:xnack-) failed: "
                         "hipErrorInvalidImage (device kernel image is invalid); the code object is not an ELF file");
  EXPECT_EQ(fake_.modules(), 0);
}

// ------------------------------------------------------------ streams, events, devices

TEST_F(RocmRuntime, StreamsAndEvents) {
  Gpu gpu(*hip_, 0);
  int streams = fake_.streams(), events = fake_.events();
  {
    Stream s(gpu);
    Event start(gpu), end(gpu), untimed(gpu, /*timing=*/false);
    EXPECT_EQ(fake_.streams(), streams + 1);
    EXPECT_EQ(fake_.events(), events + 3);
    start.record(s.get());
    end.record(s.get());
    untimed.record(s.get());
    end.synchronize();
    EXPECT_TRUE(end.done());
    EXPECT_GE(Event::elapsed_ms(start, end), 0.0f);
    std::string m = message_of<HipError>([&] { Event::elapsed_ms(start, untimed); });
    EXPECT_EQ(m, "timing events on rocm:0 failed: hipErrorInvalidHandle (invalid resource handle)");
    s.synchronize();
    gpu.synchronize_all();
  }
  EXPECT_EQ(fake_.streams(), streams);
  EXPECT_EQ(fake_.events(), events);
}

TEST_F(RocmRuntime, EachGpuAllocatesOnItsOwnDevice) {
  ScopedEnv devices("ZYNTAX_FAKE_HIP_DEVICES", "2");
  std::vector<std::unique_ptr<Gpu>> gpus = Gpu::open_all(*hip_);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1]->id(), "rocm:1");
  DeviceBuffer on1(*gpus[1], 100);
  DeviceBuffer on0(*gpus[0], 100);
  EXPECT_EQ(fake_.allocation_device(on1.address()), 1);
  EXPECT_EQ(fake_.allocation_device(on0.address()), 0);
  gpus[1]->bind();
  EXPECT_EQ(fake_.current_device(), 1);

  // Loading and finding bind the GPU; the launch follows on it.
  hipModule_t m = gpus[1]->load_module(code_object({"k"}));
  gpus[1]->launch(gpus[1]->function(m, "k"), 1, 64, 0, gpus[1]->stream(), nullptr);
  EXPECT_EQ(fake_.launch(0).device, 1);
}

// ------------------------------------------------------------ the device

std::vector<float> floats_at(uint64_t address, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), reinterpret_cast<const void*>(address), n * sizeof(float));  // the fake's memory is the host's
  return v;
}

// A kernel's run on rocm:0: its code object compiled for the GPU's
// architecture and loaded once, its input uploaded, the launch's arguments
// in the kernel's order (x, the scalar a as a double, out, status), the output
// left on the GPU until the host reads it, and read in place by the next
// kernel.
TEST_F(RocmRuntime, TheDeviceRunsKernelsThroughTheModuleApi) {
  std::vector<std::unique_ptr<Gpu>> gpus = Gpu::open_all(*hip_);
  ASSERT_EQ(gpus.size(), 1u);
  std::string why;
  std::unique_ptr<Device> d = make_rocm_device(std::move(gpus[0]), &why);
  ASSERT_NE(d, nullptr) << why;
  device_registry().lend_fallbacks(*d);
  EXPECT_EQ(d->info().id, "rocm:0");
  EXPECT_EQ(d->info().compute_capability, "gfx90a:sramecc+:xnack-");
  EXPECT_NE(d->info().backend.find("AMDGPU (gfx90a, code object v5), HIP 6.2"), std::string::npos) << d->info().backend;
  ASSERT_NE(d->gpu_target(), nullptr);
  EXPECT_EQ(d->gpu_target()->subgroup_size, 64);
  EXPECT_EQ(d->gpu_target()->multiprocessors, 104);

  const char* src = "def f(x: tensor[n, f32], a: f32) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * a\n }\n}";
  CompiledCompute compiled(testing::kernel_of(src));
  Tensor x = Tensor::zeros(DType::F32, {5});
  for (int i = 0; i < 5; ++i) x.data_as<float>()[i] = static_cast<float>(i + 1);
  double a = 2.5;
  fake_.set_arg_sizes({8, sizeof a, 8, 8});
  Tensor got = compiled.launch(*d, {x}, {}, {{"a", Scalar::of_float(a, DType::F32)}});
  ASSERT_EQ(fake_.modules(), 1);
  EXPECT_EQ(code_object_target(fake_.module_image(0)), "gfx90a");
  ASSERT_EQ(fake_.functions().size(), 1u);
  EXPECT_EQ(fake_.functions()[0].rfind("zyntax_kernel_", 0), 0u);
  ASSERT_EQ(fake_.launches(), 1);
  ZyntaxFakeHipLaunch l = fake_.launch(0);
  EXPECT_GE(l.grid[0], 1u);
  EXPECT_GE(l.block[0], 64u);
  EXPECT_EQ(l.block[0] % 64, 0u);
  uint64_t in = 0, out = 0, status = 0;
  ASSERT_EQ(l.arg_count, 4);
  std::memcpy(&in, fake_.launch_arg(0, 0).data(), 8);
  std::memcpy(&out, fake_.launch_arg(0, 2).data(), 8);
  std::memcpy(&status, fake_.launch_arg(0, 3).data(), 8);
  EXPECT_EQ(floats_at(in, 5), (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_EQ(floats_at(status, 1)[0], 0.0f);  // the status word starts clear
  EXPECT_EQ(fake_.launch_arg(0, 1), std::vector<unsigned char>(reinterpret_cast<unsigned char*>(&a), reinterpret_cast<unsigned char*>(&a) + 8));
  EXPECT_EQ(d->last_run_bytes_copied_in(), 5 * sizeof(float));

  // The output is the GPU's until the host reads it: what the kernel would
  // have written there is what the host sees.
  EXPECT_EQ(got.device(), "rocm:0");
  ASSERT_TRUE(d->held_memory(got).has_value());
  EXPECT_EQ(d->held_memory(got)->address, out);
  for (int i = 0; i < 5; ++i) reinterpret_cast<float*>(out)[i] = 2.5f * static_cast<float>(i + 1);
  const Tensor& read = got;  // read only: the GPU's copy stays current
  std::vector<float> host(read.data_as<float>(), read.data_as<float>() + 5);
  EXPECT_EQ(host, (std::vector<float>{2.5f, 5, 7.5f, 10, 12.5f}));

  // The next kernel reads it where it is, and loads nothing new.
  Tensor again = compiled.launch(*d, {got}, {}, {{"a", Scalar::of_float(a, DType::F32)}});
  EXPECT_EQ(fake_.modules(), 1);
  ASSERT_EQ(fake_.launches(), 2);
  uint64_t in2 = 0;
  std::memcpy(&in2, fake_.launch_arg(1, 0).data(), 8);
  EXPECT_EQ(in2, out);
  EXPECT_EQ(d->last_run_bytes_copied_in(), 0u);
}

// A GPU of an architecture the code generator does not target is no device, and says why.
TEST_F(RocmRuntime, AnArchitectureWithoutACodeGeneratorIsNoDevice) {
  ScopedEnv arch("ZYNTAX_FAKE_HIP_ARCH", "gfx1030");
  std::vector<std::unique_ptr<Gpu>> gpus = Gpu::open_all(*hip_);
  ASSERT_EQ(gpus.size(), 1u);
  std::string why;
  EXPECT_EQ(make_rocm_device(std::move(gpus[0]), &why), nullptr);
  EXPECT_NE(why.find("rocm:0 (AMD Instinct MI210) is gfx1030, an architecture the code generator does not target"), std::string::npos) << why;
}

// Without ROCm (this machine) the registry has no rocm device and says why.
TEST(RocmRegistry, WithoutAHipRuntimeThereIsNoDeviceAndTheReasonSaysWhy) {
  if (Hip::get()) GTEST_SKIP() << "this machine has a HIP runtime";
  EXPECT_EQ(device_registry().find("rocm:0"), nullptr);
  std::string why = device_registry().unavailable_reason("rocm:0");
  EXPECT_NE(why.find("no HIP runtime"), std::string::npos) << why;
}

}  // namespace
}  // namespace zyntax::rocm
