// Math functions on doubles for GLSL shaders. GLSL gives doubles only
// arithmetic, sqrt, fma and rounding; this writes the rest (exp, log, the
// trigonometric and hyperbolic functions, erf, C's pow and an exact fmod) in
// double arithmetic, for the GLSL emitter to call.
//
// Accuracy, measured against the C library on every kind of argument
// (tests/unit/test_glsl_f64_math.cpp): within 2 ulp for exp, exp2, log,
// log2, log10, sin, cos, tan, atan, asin, acos, atan2, sinh, cosh, tanh and
// pow; within 8 ulp for erf; fmod exact. Special values follow C99 Annex F.
// Subnormal results are as the device's double arithmetic gives them (some
// devices flush them to zero).
//
// Two kinds of argument send the run to the reference executor (the helper
// records a failure in the status word, as a failed check does, and the
// device reruns the kernel there): sin, cos and tan of |x| >= 2^50, where
// reducing by pi/2 would need more bits of pi than the three doubles kept
// here, and x % y with |x / y| >= 2^53, where the quotient is no longer an
// exact double.
#pragma once

#include <set>
#include <string>

#include "support/scalar.hpp"

namespace zyntax::codegen {

// The GLSL function the emitter calls for `fn` on doubles ("zy_d_exp"), or
// nullptr where GLSL's own function takes doubles (sqrt, floor, fma, ...)
// or the emitter writes the function out from others (gelu, sigmoid, ...).
const char* glsl_f64_function(MathFn fn);

// The f64 helpers for C's `%` and `pow` on doubles.
inline constexpr const char* kGlslF64Fmod = "zy_d_fmod";
inline constexpr const char* kGlslF64Pow = "zy_d_pow";

// The GLSL definitions of the named helpers and of every helper they call,
// in an order GLSL accepts (a helper before its callers). The shader must
// define `void zy_fail(uint id)` before them.
std::string glsl_f64_library(const std::set<std::string>& names);

}  // namespace zyntax::codegen
