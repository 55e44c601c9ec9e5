// The MSL we write, run without a Mac: every parity case, planned for an
// Apple GPU with SIMD groups of 32 and of 64, written as MSL, built as C++
// with clang++ under tests/msl/msl_on_cpu.hpp (one host thread per
// invocation of a threadgroup), launched through the same marshalling the
// Metal device uses (backends/shader_launch), and compared with the
// reference executor. A kernel's failed check falls back to the reference,
// which reports the error, as on a Mac. The kernels of each case are built
// together, in one shared library per case and width.
//
// This proves the MSL's meaning, not that Apple's compiler accepts it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "backends/shader_launch.hpp"
#include "codegen/msl/msl_emitter.hpp"
#include "../msl/msl_launch.hpp"
#include "parity_cases.hpp"
#include "plan/gpu_plan.hpp"
#include "plan_parity.hpp"

namespace zyntax {
namespace {

using testing::Case;
using RunKernel = void (*)(const zy_harness::Launch*);

std::string compiler() {
  for (const char* c : {"/usr/bin/clang++-19", "/usr/bin/clang++"})
    if (std::filesystem::exists(c)) return c;
  return "";
}

// MSL as C++: the attributes go (arguments are bound by position) and the
// kernel gets a namespace of its own.
std::string as_cpp(const std::string& msl, int n) {
  static const std::regex attribute("\\s*\\[\\[[^\\]]*\\]\\]");
  return "namespace zy_k" + std::to_string(n) + " {\n" + std::regex_replace(msl, attribute, "") + "\n}  // namespace\n";
}

// Shared libraries of MSL kernels built as C++, each kernel's entry found by its source.
class Builds {
 public:
  // Builds every source not built yet into one library; false with the log where clang++ fails.
  bool build(const std::vector<std::string>& sources, std::string* log) {
    std::vector<std::string> missing;
    for (const std::string& s : sources)
      if (!entries_.count(s) && std::find(missing.begin(), missing.end(), s) == missing.end()) missing.push_back(s);
    if (missing.empty()) return true;
    std::string dir = ::testing::TempDir() + "/zyntax_msl_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    std::string stem = dir + "/lib" + std::to_string(libraries_++);
    std::ofstream cpp(stem + ".cpp");
    cpp << "#include <metal_stdlib>\n";
    for (size_t i = 0; i < missing.size(); ++i) cpp << as_cpp(missing[i], static_cast<int>(i));
    for (size_t i = 0; i < missing.size(); ++i)
      cpp << "extern \"C\" void zy_run_" << i << "(const zy_harness::Launch* l) { zy_harness::launch(zy_k" << i << "::zy_main, *l); }\n";
    cpp.close();
    // -O0: clang 19's optimiser folds fabs(x) > 0 ? fabs(x) : 0 into x > 0 ? ... (a wrong
    // result for negative x), and the kernels here are small.
    std::string cmd = compiler() + " -std=c++20 -O0 -fPIC -shared -fsigned-char -w -I " ZYNTAX_SOURCE_DIR "/tests/msl -o " + stem + ".so " + stem +
                      ".cpp 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[512];
      while (fgets(buf, sizeof buf, p)) out += buf;
      if (pclose(p) != 0) {
        *log = out.substr(0, 4000);
        return false;
      }
    }
    void* lib = dlopen((stem + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      *log = dlerror();
      return false;
    }
    for (size_t i = 0; i < missing.size(); ++i)
      entries_[missing[i]] = reinterpret_cast<RunKernel>(dlsym(lib, ("zy_run_" + std::to_string(i)).c_str()));
    return true;
  }
  RunKernel find(const std::string& source) const {
    auto it = entries_.find(source);
    return it == entries_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::string, RunKernel> entries_;
  int libraries_ = 0;
};

Builds& builds() {
  static Builds b;
  return b;
}

// A device that runs kernels as Metal would, through the harness: planned
// for an Apple GPU whose SIMD groups are `width` wide.
class MslOnCpu : public Device {
 public:
  explicit MslOnCpu(uint32_t width) : width_(width) {
    target_ = codegen::apple_gpu_target();
    target_.subgroup_size = static_cast<int>(width);
    info_.id = "msl-cpu:" + std::to_string(width);
    info_.type = "cpu";
    info_.name = "MSL built as C++";
    DeviceRegistry& r = device_registry();
    set_fallbacks({r.find("cpu"), r.find("cpu:reference")});
  }
  const DeviceInfo& info() const override { return info_; }
  const GpuTarget* gpu_target() const override { return &target_; }

  // The kernel's MSL here, or why there is none.
  std::optional<codegen::MslKernel> msl(const cir::Kernel& kernel, GpuPlan* plan_out, std::string* why) {
    GpuPlan plan = gpu_plan(kernel, target_);
    if (!plan.kernel) {
      *why = plan.why_not;
      return std::nullopt;
    }
    if (std::optional<std::string> no = codegen::msl_unsupported_reason(*plan.kernel, target_, plan.block_threads)) {
      *why = *no;
      return std::nullopt;
    }
    codegen::MslKernel k = codegen::emit_msl(*plan.kernel, target_, plan.block_threads);
    if (plan_out) *plan_out = std::move(plan);
    return k;
  }

  int runs_here = 0;
  std::string last_why;  // of the last kernel not run here

 protected:
  Attempt execute(const cir::Kernel& kernel, uint64_t, const std::vector<Tensor>& inputs, const std::map<std::string, Scalar>& scalars) override {
    GpuPlan plan;
    std::string why;
    std::optional<codegen::MslKernel> k = msl(kernel, &plan, &why);
    if (!k) {
      last_why = why;
      return Attempt::unsupported();
    }
    std::string log;
    if (!builds().build({k->source}, &log)) throw std::logic_error("the MSL of " + kernel.name + " does not build as C++:\n" + log + "\n" + k->source);
    ShaderLaunch launch(kernel, inputs, scalars, plan.writes_whole_output, k->reduce_buffer_dtypes);
    // Buffers of whole words and a word more (word-wide atomics on narrow elements stay inside).
    std::vector<std::vector<uint32_t>> memory;
    std::vector<void*> pointers;
    for (const ShaderLaunch::Buffer& b : launch.buffers()) {
      memory.emplace_back(b.bytes / 4 + 2, 0xDEADBEEFu);
      if (b.fill) std::memcpy(memory.back().data(), b.fill, b.bytes);
      pointers.push_back(memory.back().data());
    }
    std::vector<uint8_t> args = launch.argument_bytes(shader_arguments(k->arguments), k->argument_bytes, "MSL");
    zy_harness::Launch l;
    l.buffers = pointers.data();
    l.buffer_count = static_cast<uint32_t>(pointers.size());
    l.arguments = args.empty() ? nullptr : args.data();
    l.threadgroup_bytes = k->threadgroup_memory_bytes;
    // Fewer threadgroups than blocks: the kernels' loops stride over the rest.
    l.groups_x = static_cast<uint32_t>(std::min<int64_t>(gpu_launch_blocks(plan, 1 << 30), 3));
    l.groups_y = 1;
    l.threads = static_cast<uint32_t>(k->threads_per_group);
    l.simd_width = width_;
    builds().find(k->source)(&l);
    ++runs_here;
    if (ShaderLaunch::check_failed(memory[launch.status_buffer()].data())) return Attempt::check_failed();
    for (size_t i = 0; i < launch.buffers().size(); ++i) {
      const ShaderLaunch::Buffer& b = launch.buffers()[i];
      if (b.read_back && b.result && b.bytes) std::memcpy(b.result, memory[i].data(), b.bytes);
    }
    return Attempt::done(launch.finish());
  }

 private:
  uint32_t width_;
  GpuTarget target_;
  DeviceInfo info_;
};

// Parity cases that run on the host instead, and why.
const std::map<std::string, std::string> kNotInMsl = {
    {"math_f64", "f64 tensors (Metal has no f64)"},
    {"scatter_max_int", "atomic updates of 64-bit elements (Metal's atomics hold 32 bits)"},
};

struct Param {
  Case c;
  uint32_t width;
};

class MslHarness : public ::testing::TestWithParam<Param> {};

TEST_P(MslHarness, MatchesTheReference) {
  if (compiler().empty()) {
    GTEST_SKIP() << "no clang++ to build MSL as C++";
  }
  const Case& c = GetParam().c;
  MslOnCpu device(GetParam().width);
  // Every variant's kernel first, built together; each must be written.
  cir::Kernel generic = testing::kernel_of(testing::parity_source(c));
  CompiledCompute compiled(generic);
  Random rng(42);
  std::vector<std::string> sources;
  for (int variant = 0; variant < 6; ++variant) {
    std::vector<Tensor> inputs = testing::parity_inputs(c, variant, rng);
    std::optional<std::map<std::string, int64_t>> dims = testing::variant_dims(generic, inputs);
    if (!dims) continue;
    std::string why;
    std::optional<codegen::MslKernel> k = device.msl(compiled.specialize(*dims)->kernel, nullptr, &why);
    auto expected = kNotInMsl.find(c.name);
    if (expected != kNotInMsl.end()) {
      EXPECT_EQ(k ? "(written)" : why, expected->second) << c.name << " variant " << variant;
      continue;
    }
    ASSERT_TRUE(k) << c.name << " variant " << variant << ": not written as MSL: " << why;
    sources.push_back(k->source);
  }
  std::string log;
  ASSERT_TRUE(builds().build(sources, &log)) << c.name << ":\n" << log;
  testing::expect_matches_reference(device, c, c.approximate || is_float(c.dtype));
  if (kNotInMsl.count(c.name) == 0 && !sources.empty()) {  // (every variant of some cases is a shape error)
    EXPECT_GT(device.runs_here, 0) << c.name << " never ran as MSL: " << device.last_why;
  }
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (uint32_t width : {32u, 64u})
    for (const Case& c : testing::kParityCases) out.push_back({c, width});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Kernels, MslHarness, ::testing::ValuesIn(params()), [](const ::testing::TestParamInfo<Param>& i) {
  return std::string(i.param.c.name) + "_simd" + std::to_string(i.param.width);
});

}  // namespace
}  // namespace zyntax
