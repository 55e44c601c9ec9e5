// The float controls a shader asks of the driver's compiler. Vulkan drivers
// may assume that no NaN, infinity or negative zero occurs unless the module
// declares SignedZeroInfNanPreserve for the width (SPV_KHR_float_controls):
// Mesa's lavapipe then folds f64(f32(x)) into x, dropping the rounding.
//
// GLSL can declare the mode for one width only (glslang keeps one
// GL_EXT_spirv_intrinsics execution mode per mode), so the shader names the
// widths in a line of its own,
//
//   #pragma zyntax_signed_zero_inf_nan_preserve 32 64
//
// (other compilers ignore an unknown pragma), and the compiled module gets
// the capability, the extension and one execution mode per width here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zyntax::codegen {

inline constexpr const char* kPreservePragma = "#pragma zyntax_signed_zero_inf_nan_preserve";

// The widths the shader's pragma names (none without one).
std::vector<uint32_t> preserved_float_widths(const std::string& glsl);

// Adds the declarations to a SPIR-V module of one entry point; what it has
// already is not repeated. Throws std::runtime_error on a malformed module.
void declare_signed_zero_inf_nan_preserve(std::vector<uint32_t>& words, const std::vector<uint32_t>& widths);

}  // namespace zyntax::codegen
