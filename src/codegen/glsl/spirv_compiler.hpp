// GLSL compute shaders to SPIR-V, in process (shaderc, with glslang and
// SPIRV-Tools linked in): the binary a Vulkan device loads, or its
// disassembly (`zyntax compile --backend vulkan --emit spirv-asm`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zyntax {
class DiskCache;
}

namespace zyntax::codegen {

struct SpirvModule {
  std::vector<uint32_t> words;  // empty on failure
  std::string error;            // the compiler's message, with the shader's line numbers
};

// SPIR-V 1.3 for Vulkan 1.1; optimised for performance (`optimize`) unless
// the shader has `precise` values (see spirv_compiler.cpp).
SpirvModule compile_glsl(const std::string& glsl, const std::string& name, bool optimize = true);
// The same from `cache` where a run before compiled this shader (the key is
// the shader's text and this compiler's version), else compiled and stored.
// `from_disk`, when given, says which.
SpirvModule cached_spirv(const std::string& glsl, const std::string& name, const DiskCache& cache, bool* from_disk = nullptr);
// The same module as SPIR-V assembly text.
std::string compile_glsl_to_assembly(const std::string& glsl, const std::string& name, bool optimize = true);

}  // namespace zyntax::codegen
