// The GLSL emitter without a device: every parity case, planned for a
// lavapipe-like Vulkan target at each shape variant, becomes GLSL that
// glslang compiles to SPIR-V which spirv-val accepts for Vulkan 1.1 (the
// validator is skipped where spirv-tools is not installed).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "codegen/glsl/glsl_emitter.hpp"
#include "codegen/glsl/spirv_compiler.hpp"
#include "codegen/glsl/spirv_float_controls.hpp"
#include "plan/gpu_plan.hpp"
#include "runtime/disk_cache.hpp"
#include "plan_parity.hpp"
#include "vulkan_targets.hpp"

namespace zyntax {
namespace {

using testing::Case;

std::string spirv_val() {
  for (const char* p : {"/usr/bin/spirv-val", "/usr/local/bin/spirv-val"})
    if (std::FILE* f = std::fopen(p, "r")) {
      std::fclose(f);
      return p;
    }
  return "";
}

// spirv-val's verdict on a module: "" when it accepts it.
std::string validate(const std::vector<uint32_t>& words, const std::string& tag) {
  std::string val = spirv_val();
  if (val.empty()) return "";
  std::string file = ::testing::TempDir() + "/" + tag + ".spv";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
  std::string cmd = val + " --target-env vulkan1.1 " + file + " 2>&1";
  std::string log;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) log += buf;
    if (pclose(p) == 0) {
      std::remove(file.c_str());
      return "";
    }
  }
  return log.empty() ? "spirv-val failed" : log;
}

// Parity cases whose kernels the GLSL backend does not write (they run on
// the host through the fallback policy), and why: none at present.
const std::map<std::string, std::string> kNotInGlsl = {};

class GlslParity : public ::testing::TestWithParam<Case> {};

TEST_P(GlslParity, EveryVariantCompilesToValidSpirv) {
  const Case& c = GetParam();
  GpuTarget target = testing::lavapipe_like_target();
  cir::Kernel generic = testing::kernel_of(testing::parity_source(c));
  ASSERT_FALSE(generic.name.empty());
  CompiledCompute compiled(generic);
  Random rng(42);
  for (int variant = 0; variant < 6; ++variant) {
    std::vector<Tensor> inputs = testing::parity_inputs(c, variant, rng);
    std::optional<std::map<std::string, int64_t>> dims = testing::variant_dims(generic, inputs);
    if (!dims) continue;
    GpuPlan plan = gpu_plan(compiled.specialize(*dims)->kernel, target);
    ASSERT_TRUE(plan.kernel) << c.name << " variant " << variant << ": " << plan.why_not;
    std::string what = std::string(c.name) + " variant " + std::to_string(variant) + " (" + gpu_schedule_name(plan.schedule) + ")";
    std::optional<std::string> why = codegen::glsl_unsupported_reason(*plan.kernel, target, plan.block_threads);
    auto expected = kNotInGlsl.find(c.name);
    if (expected != kNotInGlsl.end()) {
      EXPECT_EQ(why.value_or("(written)"), expected->second) << what << " (drop it from kNotInGlsl once it is written)";
      continue;
    }
    if (why) {
      ADD_FAILURE() << what << ": not written as GLSL: " << *why;
      continue;
    }
    codegen::GlslKernel g = codegen::emit_glsl(*plan.kernel, target, plan.block_threads);
    codegen::SpirvModule m = codegen::compile_glsl(g.source, c.name);
    ASSERT_TRUE(m.error.empty()) << what << ":\n" << m.error << "\n" << g.source;
    std::string verdict = validate(m.words, std::string("glsl_") + c.name + "_" + std::to_string(variant));
    EXPECT_EQ(verdict, "") << what << ":\n" << g.source;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, GlslParity, ::testing::ValuesIn(testing::kParityCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace zyntax

namespace zyntax {
namespace {

// The second compilation of a shader comes from the disk cache, word for word.
TEST(SpirvCompiler, SpirvComesFromTheDiskCacheOnTheNextRun) {
  std::string dir = ::testing::TempDir() + "/zyntax_spirv_cache_" + std::to_string(::getpid());
  DiskCache cache(dir);
  std::string glsl = "#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { float d[]; } b;\n"
                     "void main() { b.d[0] = 1.0; }\n";
  bool from_disk = true;
  codegen::SpirvModule first = codegen::cached_spirv(glsl, "k", cache, &from_disk);
  ASSERT_TRUE(first.error.empty()) << first.error;
  EXPECT_FALSE(from_disk);
  codegen::SpirvModule second = codegen::cached_spirv(glsl, "k", cache, &from_disk);
  EXPECT_TRUE(from_disk);
  EXPECT_EQ(first.words, second.words);
  codegen::SpirvModule bad = codegen::cached_spirv("#version 450\nvoid main() { nonsense; }\n", "bad", cache, &from_disk);
  EXPECT_FALSE(bad.error.empty());
  EXPECT_NE(bad.error.find("bad:"), std::string::npos) << bad.error;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zyntax

namespace zyntax {
namespace {

// The pragma's widths become SignedZeroInfNanPreserve modes of the module,
// with the capability and the extension once each; a module that declares
// some already gets only the others; spirv-val accepts the result.
TEST(SpirvFloatControls, ThePragmaDeclaresEachWidthOnce) {
  std::string body = "layout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { double d[]; } b;\n"
                     "void main() { b.d[0] = b.d[1] * 0.0; }\n";
  std::string glsl = std::string("#version 450\n") + codegen::kPreservePragma + " 32 64\n" + body;
  EXPECT_EQ(codegen::preserved_float_widths(glsl), (std::vector<uint32_t>{32, 64}));
  EXPECT_TRUE(codegen::preserved_float_widths("#version 450\n" + body).empty());
  codegen::SpirvModule m = codegen::compile_glsl(glsl, "k");
  ASSERT_TRUE(m.error.empty()) << m.error;
  EXPECT_EQ(validate(m.words, "float_controls"), "");
  std::string text = codegen::compile_glsl_to_assembly(glsl, "k");
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("OpCapability SignedZeroInfNanPreserve"), 1u) << text;
  EXPECT_EQ(count("OpExtension \"SPV_KHR_float_controls\""), 1u) << text;
  EXPECT_EQ(count("SignedZeroInfNanPreserve 32"), 1u) << text;
  EXPECT_EQ(count("SignedZeroInfNanPreserve 64"), 1u) << text;
  // Declaring again adds nothing.
  std::vector<uint32_t> again = m.words;
  codegen::declare_signed_zero_inf_nan_preserve(again, {32, 64});
  EXPECT_EQ(again, m.words);
  // Not a module: an error, not a crash.
  std::vector<uint32_t> junk{0x07230203u, 0, 0, 0, 0, 0x00ff0001u};
  EXPECT_THROW(codegen::declare_signed_zero_inf_nan_preserve(junk, {32}), std::runtime_error);
}

}  // namespace
}  // namespace zyntax
