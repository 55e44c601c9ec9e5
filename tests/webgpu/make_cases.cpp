// The parity suite for WebGPU, as data for tests/webgpu/run_cases.mjs: every
// parity case at each shape variant, its kernel planned for webgpu_target()
// and written as WGSL (generic: the dimensions travel in the uniforms, as
// the JavaScript runtime passes them), its inputs, and the reference
// executor's output or the fact that it reports an error. One JSON object
// per line; a kernel the WGSL emitter does not write yet is a line with the
// reason, so the runner can count them.
//
//   zyntax_webgpu_cases > cases.jsonl
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>

#include "backends/registry.hpp"
#include "codegen/wgsl/wgsl_description.hpp"
#include "codegen/wgsl/wgsl_emitter.hpp"
#include "f32_math_accuracy.hpp"
#include "parity_cases.hpp"
#include "plan/gpu_plan.hpp"
#include "plan_parity.hpp"

namespace {

using namespace zyntax;

// One case: the kernel planned and written for WebGPU (or why not), its
// inputs, and the reference's output or error.
void write_case(const std::string& name, int variant, const cir::Kernel& generic, CompiledCompute& compiled, const std::vector<Tensor>& inputs,
                bool approximate, const zyntax::testing::F32MathCase* bound = nullptr) {
  Device* ref = device_registry().find("cpu:reference");
  GpuTarget target = codegen::webgpu_target();
  std::optional<std::map<std::string, int64_t>> dims = zyntax::testing::variant_dims(generic, inputs);
  if (!dims) return;  // shapes that disagree: an error on every device
  std::ostringstream line;
  line << "{\"case\": " << json_string(name) << ", \"variant\": " << variant;
  // Generic where it can be planned so (sizes in the uniforms), else at
  // these sizes (tile programs are written out once every size is known).
  GpuPlan plan = gpu_plan(generic, target);
  bool specialised = !plan.kernel && plan.why_not.find("once every size") != std::string::npos;
  if (specialised) plan = gpu_plan(compiled.specialize(*dims)->kernel, target);
  std::string why = plan.kernel ? codegen::wgsl_unsupported_reason(*plan.kernel, target, plan.block_threads).value_or("") : plan.why_not;
  if (!why.empty()) {
    std::cout << line.str() << ", \"unsupported\": " << json_string(why) << "}\n";
    return;
  }
  codegen::WgslKernel w = codegen::emit_wgsl(*plan.kernel, target, plan.block_threads);
  line << ", \"approximate\": " << (approximate ? "true" : "false");
  if (bound) line << ", \"ulp\": " << bound->ulp << ", \"growth\": " << bound->growth;
  line << ", \"kernel\": " << codegen::wgsl_kernel_json(*plan.kernel, w)
       << ", \"tensors\": [";
  for (size_t i = 0; i < inputs.size(); ++i) line << (i ? ", " : "") << "\"" << codegen::base64(inputs[i].data(), inputs[i].nbytes()) << "\"";
  // The output: its size from the specialised kernel's shape.
  const cir::Param& out = compiled.specialize(*dims)->kernel.output();
  int64_t numel = 1;
  for (const cir::Expr& e : out.type.shape) numel *= e.as<cir::IntImm>()->value;
  line << ", " << numel * static_cast<int64_t>(dtype_size(out.type.dtype)) << "], \"dims\": [";
  if (!specialised)
    for (size_t i = 0; i < generic.dims.size(); ++i) line << (i ? ", " : "") << dims->at(generic.dims[i].name);
  line << "]";
  try {
    Tensor want = compiled.launch(*ref, inputs, {}, {});
    line << ", \"expected\": {\"dtype\": \"" << dtype_name(want.dtype()) << "\", \"bytes\": \"" << codegen::base64(want.data(), want.nbytes()) << "\"}";
  } catch (const std::exception& e) {
    line << ", \"error\": " << json_string(e.what());
  }
  std::cout << line.str() << "}\n";
}

// Conversions at the edges of the narrow types, compared bit for bit:
// f16's and bf16's rounding (ties, overflow to infinity, subnormals, NaN)
// and the integers' saturation.
void write_edge_cases() {
  std::vector<float> edges = {0.0f, -0.0f, 1.0f, -1.5f, 65504.0f, 65519.9f, 65520.0f, -65520.0f, 1e5f, 6.1035156e-5f, 6.097555e-5f,
                              5.9604645e-8f, 2.9802322e-8f, 2.98024e-8f, 8.940697e-8f, 1e-10f, 3.3895314e38f, 3.4e38f, 1.0009766f,
                              1.0004883f, 1.0014648f, 0.33333334f, 300.0f, -129.0f, 127.5f, 2147483520.0f, 3e9f, -3e9f,
                              std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), std::nanf("")};
  Tensor x = Tensor::zeros(DType::F32, {static_cast<int64_t>(edges.size())});
  for (size_t i = 0; i < edges.size(); ++i) x.data_as<float>()[i] = edges[i];
  int variant = 0;
  for (const char* to : {"f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "bool"}) {
    std::string src = std::string("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = ") + to +
                      "(x[i])\n }\n}";
    cir::Kernel generic = zyntax::testing::kernel_of(src);
    CompiledCompute compiled(generic);
    write_case("edge_conversions", variant++, generic, compiled, {x}, false);
  }
}

// The f32 math functions over the whole range, each within its bound in
// ulp (tests/unit/f32_math_accuracy.hpp).
void write_math_cases() {
  std::vector<std::vector<float>> args = zyntax::testing::f32_math_arguments();
  std::vector<Tensor> inputs;
  for (const std::vector<float>& a : args) {
    Tensor t = Tensor::empty(DType::F32, {static_cast<int64_t>(a.size())});
    std::memcpy(t.data(), a.data(), a.size() * sizeof(float));
    inputs.push_back(t);
  }
  for (const zyntax::testing::F32MathCase& c : zyntax::testing::f32_math_cases()) {
    std::string src = std::string("def f(x: tensor[n, f32], y: tensor[n, f32], z: tensor[n, f32]) {\n return compute(x, y, z) {\n"
                                  " @kernel elementwise\n for i in 0..n:\n  out[i] = ") +
                      c.expr + "\n }\n}";
    cir::Kernel generic = zyntax::testing::kernel_of(src);
    CompiledCompute compiled(generic);
    write_case(std::string("f32_math_") + c.name, 0, generic, compiled, inputs, true, &c);
  }
}

}  // namespace

int main() {
  for (const zyntax::testing::Case& c : zyntax::testing::kParityCases) {
    cir::Kernel generic = zyntax::testing::kernel_of(zyntax::testing::parity_source(c));
    CompiledCompute compiled(generic);
    Random rng(42);
    for (int variant = 0; variant < 6; ++variant)
      write_case(c.name, variant, generic, compiled, zyntax::testing::parity_inputs(c, variant, rng), c.approximate || is_float(c.dtype));
  }
  write_edge_cases();
  write_math_cases();
  return 0;
}
