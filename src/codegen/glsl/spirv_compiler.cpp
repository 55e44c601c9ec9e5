#include "codegen/glsl/spirv_compiler.hpp"

#include <shaderc/shaderc.hpp>
#include <spirv-tools/libspirv.hpp>

#include <cstring>
#include <optional>
#include <stdexcept>

#include "codegen/glsl/spirv_float_controls.hpp"
#include "runtime/disk_cache.hpp"

namespace zyntax::codegen {

namespace {

// SPIRV-Tools' optimiser (Debian 12's, 2022.4) does not keep the
// exactness `precise` asks for: compensated sums and exact products of
// glsl_f64_math come out folded (measured: f64 fmod off by ulps, pow by
// hundreds). Shaders with precise values go unoptimised; the driver's own
// compiler still optimises them, keeping NoContraction.
//
// Its time and memory also grow with the square of the branches (each
// bounds check is one, and loops it unrolls multiply them): a 100-term sum
// (100 checked loads) takes 0.5 s and 120 MB, 300 terms 3.4 s and 750 MB,
// 1000 terms 48 s and 7.8 GB. Shaders with many branches go to the driver's
// compiler unoptimised too; the largest of the shipped examples have 140.
constexpr size_t kMaxOptimizedBranches = 192;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

bool optimizable(const std::string& glsl) {
  return glsl.find("precise ") == std::string::npos && count(glsl, "if (") <= kMaxOptimizedBranches;
}

shaderc::CompileOptions options(bool optimize) {
  shaderc::CompileOptions o;
  o.SetTargetEnvironment(shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
  o.SetTargetSpirv(shaderc_spirv_version_1_3);
  o.SetOptimizationLevel(optimize ? shaderc_optimization_level_performance : shaderc_optimization_level_zero);
  return o;
}

}  // namespace

SpirvModule compile_glsl(const std::string& glsl, const std::string& name, bool optimize) {
  shaderc::Compiler compiler;
  shaderc::SpvCompilationResult r = compiler.CompileGlslToSpv(glsl, shaderc_compute_shader, name.c_str(), options(optimize && optimizable(glsl)));
  SpirvModule m;
  if (r.GetCompilationStatus() != shaderc_compilation_status_success) {
    m.error = r.GetErrorMessage();
    return m;
  }
  m.words.assign(r.cbegin(), r.cend());
  try {
    declare_signed_zero_inf_nan_preserve(m.words, preserved_float_widths(glsl));
  } catch (const std::exception& e) {
    m.words.clear();
    m.error = e.what();
  }
  return m;
}

SpirvModule cached_spirv(const std::string& glsl, const std::string& name, const DiskCache& cache, bool* from_disk) {
  std::string key = std::string("spirv\nzyntax ") + ZYNTAX_VERSION + "\n" + glsl;
  std::optional<std::string> cached = cache.load(key);
  if (from_disk) *from_disk = cached && cached->size() % 4 == 0 && !cached->empty();
  if (from_disk && *from_disk) {
    SpirvModule m;
    m.words.resize(cached->size() / 4);
    std::memcpy(m.words.data(), cached->data(), cached->size());
    return m;
  }
  SpirvModule m = compile_glsl(glsl, name);
  if (m.error.empty()) cache.store(key, std::string_view(reinterpret_cast<const char*>(m.words.data()), m.words.size() * 4));
  return m;
}

std::string compile_glsl_to_assembly(const std::string& glsl, const std::string& name, bool optimize) {
  SpirvModule m = compile_glsl(glsl, name, optimize);
  if (!m.error.empty()) throw std::runtime_error(m.error);
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string text;
  if (!tools.Disassemble(m.words, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT))
    throw std::runtime_error("cannot disassemble the SPIR-V of " + name);
  return text;
}

}  // namespace zyntax::codegen
