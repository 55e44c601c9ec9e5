// The shaders of every parity case (each shape variant and the generic
// kernel), of the benchmarks' and of the op library's kernels, as the GLSL
// and WGSL dialects of the shader printer write them, against a golden
// record: a refactoring of the printer or of a dialect must leave every
// shader byte for byte as it was. A shader changed on purpose is recorded
// anew with ZYNTAX_UPDATE_GOLDEN=1 (review the diff of
// tests/unit/data/shaders.golden: it names every kernel that changed);
// ZYNTAX_SHADER_DUMP=DIR writes each shader into DIR to diff them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../../bench/bench_kernels.hpp"
#include "cir/hash.hpp"
#include "cir/passes/specialize.hpp"
#include "codegen/glsl/glsl_emitter.hpp"
#include "codegen/wgsl/wgsl_emitter.hpp"
#include "op_library_kernels.hpp"
#include "golden_record.hpp"
#include "parity_cases.hpp"
#include "plan/gpu_plan.hpp"
#include "runtime/launch.hpp"
#include "vulkan_targets.hpp"

namespace zyntax {
namespace {

using testing::Case;
using testing::kParityCases;

const char* const kGolden = ZYNTAX_SOURCE_DIR "/tests/unit/data/shaders.golden";

struct Dialect {
  std::string name;
  GpuTarget target;
  bool wgsl;
};

// The targets whose differences reach the printer: subgroup shuffles or
// not, f64 or not, a loop budget or not, 64-bit or 32-bit indices.
std::vector<Dialect> dialects() {
  GpuTarget plain = testing::lavapipe_like_target();
  plain.subgroup_shuffles = false;
  plain.f64 = false;
  plain.preserves_ieee_specials_f32 = plain.preserves_ieee_specials_f64 = false;
  return {{"glsl", testing::lavapipe_like_target(), false},
          {"glsl-any", codegen::generic_vulkan_target(), false},
          {"glsl-plain", plain, false},
          {"wgsl", codegen::webgpu_target(), true}};
}

// One line per shader: what was written, for which dialect, and the hash
// of its text and its interface (or why it was not written).
std::string describe(const std::string& what, const Dialect& d, const cir::Kernel& k) {
  std::ostringstream line;
  line << what << " " << d.name << " ";
  GpuPlan plan = gpu_plan(k, d.target);
  if (!plan.kernel) {
    line << "no plan";
    return line.str();
  }
  std::optional<std::string> why = d.wgsl ? codegen::wgsl_unsupported_reason(*plan.kernel, d.target, plan.block_threads)
                                           : codegen::glsl_unsupported_reason(*plan.kernel, d.target, plan.block_threads);
  if (why) {
    line << "not written: " << *why;
    return line.str();
  }
  std::ostringstream text;
  if (d.wgsl) {
    codegen::WgslKernel w = codegen::emit_wgsl(*plan.kernel, d.target, plan.block_threads);
    text << w.source << "|" << w.workgroup_size << " " << w.tensor_bindings << " " << w.status_binding << " " << w.uniform_binding << " "
         << w.uniform_bytes << " " << w.reduce << w.arg << " " << w.best_binding << " " << w.has_binding;
    for (const codegen::CheckSite& c : w.sites) text << " s" << c.span.begin << "," << c.span.end << "," << c.what;
    for (const codegen::WgslUniform& u : w.uniforms) text << " u" << int(u.source) << "," << u.index << "," << int(u.as) << "," << u.offset;
    for (const std::string& h : w.host_expressions) text << " h" << h;
  } else {
    codegen::GlslKernel g = codegen::emit_glsl(*plan.kernel, d.target, plan.block_threads);
    text << g.source << "|" << g.local_size << " " << g.tensor_bindings << " " << g.reduce_bindings << " " << g.status_binding << " "
         << g.push_constant_bytes << " " << g.helper_calls;
    for (const codegen::CheckSite& c : g.sites) text << " s" << c.span.begin << "," << c.span.end << "," << c.what;
    for (const codegen::GlslPushConstant& p : g.push_constants) text << " p" << int(p.source) << "," << p.index << "," << int(p.as) << "," << p.offset;
  }
  std::string all = text.str();
  if (const char* dump = std::getenv("ZYNTAX_SHADER_DUMP")) {
    std::string file = what + "." + d.name;
    for (char& c : file)
      if (c == '/') c = '_';
    std::filesystem::create_directories(dump);
    std::ofstream(std::string(dump) + "/" + file) << all;
  }
  line << cir::hash_hex(cir::hash_text(all));
  return line.str();
}

std::map<std::string, int64_t> every_dim(const cir::Kernel& k, int64_t size) {
  std::map<std::string, int64_t> dims;
  for (const cir::DimParam& d : k.dims) dims[d.name] = size;
  return dims;
}

std::vector<std::string> current_shaders() {
  std::vector<Dialect> ds = dialects();
  std::vector<std::string> lines;
  auto all = [&](const std::string& what, const cir::Kernel& k) {
    for (const Dialect& d : ds) lines.push_back(describe(what, d, k));
  };
  for (const Case& c : kParityCases) {
    cir::Kernel generic = testing::kernel_of(testing::parity_source(c));
    if (generic.name.empty()) continue;
    CompiledCompute compiled(generic);
    all(std::string(c.name) + "/generic", generic);
    Random rng(42);
    for (int variant = 0; variant < 6; ++variant) {
      std::vector<Tensor> inputs = testing::parity_inputs(c, variant, rng);
      std::map<std::string, int64_t> dims;
      try {
        dims = bind_dimensions(generic, inputs, {});
      } catch (const DataError&) {
        continue;
      }
      all(std::string(c.name) + "/v" + std::to_string(variant), compiled.specialize(dims)->kernel);
    }
  }
  const std::pair<const char*, const char*> bench[] = {
      {"matmul", bench::kMatmul}, {"gelu_erf", bench::kGeluErf}, {"sum_of_squares", bench::kSumOfSquares}, {"gelu", bench::kGelu},
      {"softmax", bench::kSoftmax}, {"layer_norm", bench::kLayerNorm}, {"attention32", bench::kAttention}, {"conv2d", bench::kConv2d},
      {"depthwise", bench::kDepthwise}, {"embedding_grad", bench::kEmbeddingGrad}, {"fused_chain", bench::kFusedChain}};
  const std::map<std::string, int64_t> bench_sizes = {{"bh", 4}, {"s", 64}, {"d", 32}, {"b", 2}, {"ic", 8}, {"oc", 8},
                                                      {"c", 8}, {"h", 12}, {"w", 12}, {"kh", 3}, {"kw", 3}, {"dim", 96}};
  for (const auto& [name, source] : bench) {
    const cir::Kernel& k = bench::kernel(source).generic();
    std::map<std::string, int64_t> dims = every_dim(k, 100);
    for (auto& [dn, v] : dims)
      if (bench_sizes.count(dn)) v = bench_sizes.at(dn);
    all(std::string("bench.") + name, cir::specialize(k, dims));
  }
  Session session;
  for (const auto& [name, k] : testing::op_library_kernels(session)) {
    all("stdlib." + name + "/generic", k);
    all("stdlib." + name + "/all24", cir::specialize(k, every_dim(k, 24)));
  }
  return lines;
}

TEST(ShaderGolden, ShadersAreTheRecordedOnes) {
  testing::expect_golden(current_shaders(), kGolden, "shader");
}

}  // namespace
}  // namespace zyntax
