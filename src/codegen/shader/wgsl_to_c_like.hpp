// The shader helpers shared by the GLSL, MSL and WGSL backends are written
// once, in a small subset of WGSL, and printed as GLSL or MSL by this
// translator. The subset: `fn` with typed parameters; `let`/`var` with
// explicit types (f32, i32, u32, bool, vec2<...>, and `var t: array<u32, N>`
// tables); if/else, for, return; WGSL's operators; calls, of which these
// are rewritten: select, bitcast<f32> (of a u32), bitcast<u32> and
// bitcast<i32> (of an f32), firstLeadingBit, countLeadingZeros, round (to
// even), array constructors and the type constructors. Everything else is
// spelled the same in all three languages.
#pragma once

#include <string>

namespace zyntax::codegen {

std::string wgsl_to_glsl(const std::string& wgsl);
std::string wgsl_to_msl(const std::string& wgsl);

}  // namespace zyntax::codegen
