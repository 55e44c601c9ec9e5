#include "codegen/glsl/spirv_compiler.hpp"

#include <shaderc/shaderc.hpp>

#include <stdexcept>

namespace zyntax::codegen {

namespace {

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
  shaderc::SpvCompilationResult r = compiler.CompileGlslToSpv(glsl, shaderc_compute_shader, name.c_str(), options(optimize));
  SpirvModule m;
  if (r.GetCompilationStatus() != shaderc_compilation_status_success) {
    m.error = r.GetErrorMessage();
    return m;
  }
  m.words.assign(r.cbegin(), r.cend());
  return m;
}

std::string compile_glsl_to_assembly(const std::string& glsl, const std::string& name, bool optimize) {
  shaderc::Compiler compiler;
  shaderc::AssemblyCompilationResult r = compiler.CompileGlslToSpvAssembly(glsl, shaderc_compute_shader, name.c_str(), options(optimize));
  if (r.GetCompilationStatus() != shaderc_compilation_status_success) throw std::runtime_error(r.GetErrorMessage());
  return std::string(r.cbegin(), r.cend());
}

}  // namespace zyntax::codegen
