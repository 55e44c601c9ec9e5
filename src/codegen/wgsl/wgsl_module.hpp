// A program's WebGPU kernels as one ES module (`zyntax compile --backend
// webgpu --emit js`): each kernel an exported async function
//   export async function NAME(device, { param: tensor | number, ... })
// taking its tensors as typed arrays ({ data, shape } for more than one
// axis) and returning { data, shape }, with its launch plan inside: the
// WGSL, bindings and uniforms (wgsl_description), where each size comes from
// (an input's axis, or an argument of its own), the shape each tensor must
// have and the output's, as JavaScript functions of the sizes. The module
// imports the runtime (js/src/runtime.mjs, written beside it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/wgsl/wgsl_emitter.hpp"

namespace zyntax::codegen {

struct WgslModuleKernel {
  std::string name;    // the exported function's
  cir::Kernel kernel;  // as planned (its params, dims and shapes)
  WgslKernel wgsl;
};

// Why a kernel's sizes cannot be written for JavaScript (a shape the
// module's expressions do not cover), or nothing.
std::optional<std::string> js_shape_problem(const cir::Kernel& k);

std::string wgsl_js_module(const std::vector<WgslModuleKernel>& kernels, const std::string& program, const std::string& runtime_file);

// The runtime's source (js/src/runtime.mjs), embedded at build time.
const char* webgpu_runtime_source();

}  // namespace zyntax::codegen
