// A WGSL kernel as the JavaScript runtime (js/src/runtime.mjs) takes it: one
// JSON object with the shader, its workgroup size, the kernel's params (name,
// role, dtype), the bindings of the status word and the uniforms, each
// uniform's source and place, and the failure sites' messages.
#pragma once

#include <string>

#include "cir/ir.hpp"
#include "codegen/wgsl/wgsl_emitter.hpp"

namespace zyntax::codegen {

std::string wgsl_kernel_json(const cir::Kernel& k, const WgslKernel& w);

// `s` as a JSON string literal, quotes included.
std::string json_string(const std::string& s);

}  // namespace zyntax::codegen
