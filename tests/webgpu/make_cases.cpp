// The parity suite for WebGPU, as data for tests/webgpu/run_cases.mjs: every
// parity case at each shape variant, its kernel planned for webgpu_target()
// and written as WGSL (generic: the dimensions travel in the uniforms, as
// the JavaScript runtime passes them), its inputs, and the reference
// executor's output or the fact that it reports an error. One JSON object
// per line; a kernel the WGSL emitter does not write yet is a line with the
// reason, so the runner can count them.
//
//   zyntax_webgpu_cases > cases.jsonl
#include <iostream>
#include <sstream>

#include "backends/registry.hpp"
#include "codegen/wgsl/wgsl_description.hpp"
#include "codegen/wgsl/wgsl_emitter.hpp"
#include "parity_cases.hpp"
#include "plan/gpu_plan.hpp"
#include "plan_parity.hpp"

namespace {

using namespace zyntax;

}  // namespace

int main() {
  Device* ref = device_registry().find("cpu:reference");
  GpuTarget target = codegen::webgpu_target();
  for (const zyntax::testing::Case& c : zyntax::testing::kParityCases) {
    cir::Kernel generic = zyntax::testing::kernel_of(zyntax::testing::parity_source(c));
    CompiledCompute compiled(generic);
    Random rng(42);
    for (int variant = 0; variant < 6; ++variant) {
      std::vector<Tensor> inputs = zyntax::testing::parity_inputs(c, variant, rng);
      std::optional<std::map<std::string, int64_t>> dims = zyntax::testing::variant_dims(generic, inputs);
      if (!dims) continue;  // shapes that disagree: an error on every device
      std::ostringstream line;
      line << "{\"case\": " << codegen::json_string(c.name) << ", \"variant\": " << variant;
      GpuPlan plan = gpu_plan(generic, target);
      std::string why = plan.kernel ? codegen::wgsl_unsupported_reason(*plan.kernel, target, plan.block_threads).value_or("") : plan.why_not;
      if (!why.empty()) {
        std::cout << line.str() << ", \"unsupported\": " << codegen::json_string(why) << "}\n";
        continue;
      }
      codegen::WgslKernel w = codegen::emit_wgsl(*plan.kernel, target, plan.block_threads);
      line << ", \"approximate\": " << (c.approximate || is_float(c.dtype) ? "true" : "false")
           << ", \"kernel\": " << codegen::wgsl_kernel_json(*plan.kernel, w) << ", \"tensors\": [";
      for (size_t i = 0; i < inputs.size(); ++i) line << (i ? ", " : "") << "\"" << codegen::base64(inputs[i].data(), inputs[i].nbytes()) << "\"";
      // The output: its size from the specialised kernel's shape.
      const cir::Param& out = compiled.specialize(*dims)->kernel.output();
      int64_t numel = 1;
      for (const cir::Expr& e : out.type.shape) numel *= e.as<cir::IntImm>()->value;
      line << ", " << numel * static_cast<int64_t>(dtype_size(out.type.dtype)) << "], \"dims\": [";
      for (size_t i = 0; i < generic.dims.size(); ++i) line << (i ? ", " : "") << dims->at(generic.dims[i].name);
      line << "]";
      try {
        Tensor want = compiled.launch(*ref, inputs, {}, {});
        line << ", \"expected\": {\"dtype\": \"" << dtype_name(want.dtype()) << "\", \"bytes\": \"" << codegen::base64(want.data(), want.nbytes()) << "\"}";
      } catch (const std::exception& e) {
        line << ", \"error\": " << codegen::json_string(e.what());
      }
      std::cout << line.str() << "}\n";
    }
  }
  return 0;
}
