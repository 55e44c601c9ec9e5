// A WGSL kernel as the JavaScript runtime (js/src/runtime.mjs) takes it: one
// JSON object with the shader, its workgroup size, the kernel's params (name,
// role, dtype), the bindings of the status word and the uniforms, each
// uniform's source and place, the failure sites' messages, and for reduce
// kernels the identity the output starts from (argmin/argmax: the bindings
// of the best values and of the flags that say there was one).
#pragma once

#include <string>

#include "cir/ir.hpp"
#include "codegen/wgsl/wgsl_emitter.hpp"
#include "support/json_string.hpp"

namespace zyntax::codegen {

std::string wgsl_kernel_json(const cir::Kernel& k, const WgslKernel& w);

// Bytes in base64 (RFC 4648, padded).
std::string base64(const void* data, size_t n);

}  // namespace zyntax::codegen
