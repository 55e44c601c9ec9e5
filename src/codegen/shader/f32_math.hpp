// Math functions on f32 for shaders, written once (in the WGSL subset of
// codegen/shader/wgsl_to_c_like) and printed for WGSL, GLSL or MSL. The shading
// languages' own functions promise little (WGSL: sin and cos to 2^-11
// absolute inside [-pi, pi] and nothing outside; fma may be a rounded product
// and a sum), so the backends that have no doubles to compute in (WebGPU,
// Metal, Vulkan devices without shaderFloat64) call these instead.
//
// They use f32 arithmetic where rounding errors stay small and integer
// arithmetic where an exact result is needed (reducing sin/cos/tan
// arguments by pi/2 over the whole f32 range, fma, fmod), so that a compiler
// that folds or contracts float expressions (WGSL has no `precise`) cannot
// break them. Accuracy against the C library, measured over random
// arguments across each function's range and the special values
// (tests/webgpu/make_cases.cpp on WebGPU, tests/unit/test_shader_f32_math.cpp
// on Vulkan): fma and fmod exact; the others within kF32MathUlp ulp, except
// pow, whose error grows with |y log2 x| (as exp2 of a rounded product).
// Subnormal results are as the device's arithmetic gives them; special
// values follow C99 Annex F.
#pragma once

#include <set>
#include <string>

#include "support/scalar.hpp"

namespace zyntax::codegen {

enum class ShaderLanguage { Glsl, Wgsl, Msl };

// The bound the tests hold the helpers to (pow excepted, above).
inline constexpr int kF32MathUlp = 4;

// The helper computing `fn` on f32 ("zy_f_sin"), or nullptr where the
// shading language's own function is exact (sqrt, floor, abs, ...) or the
// emitter writes it out from others (sigmoid, gelu, ...).
const char* shader_f32_function(MathFn fn);

// The helpers of C's `%` (exact) and `pow` on f32, and exp (for the
// activations the emitters write out).
inline constexpr const char* kShaderF32Fmod = "zy_f_fmod";
inline constexpr const char* kShaderF32Pow = "zy_f_pow";
inline constexpr const char* kShaderF32Exp = "zy_f_exp";
inline constexpr const char* kShaderF32Erf = "zy_f_erf";

// The definitions of the named helpers and of every helper they call, in an
// order both languages accept (a helper before its callers).
std::string shader_f32_library(const std::set<std::string>& names, ShaderLanguage language);

}  // namespace zyntax::codegen
