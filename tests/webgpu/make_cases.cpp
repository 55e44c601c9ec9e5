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
#include <cstdio>
#include <functional>
#include <span>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>

#include "backends/registry.hpp"
#include "codegen/wgsl/wgsl_description.hpp"
#include "codegen/shader/host_scalar_expressions.hpp"
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

// f64 expressions of the scalars, which the JavaScript runtime computes
// (codegen/shader/host_scalar_expressions): each operation at special and
// random arguments against the reference's scalar arithmetic; bit for bit
// where the operation is exact, else within 2 ulp of f64.
std::string f64_text(double v) {
  if (std::isnan(v)) return "\"NaN\"";
  if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  char buf[40];
  std::snprintf(buf, sizeof buf, "\"%.17g\"", v);
  return std::signbit(v) && v == 0 ? "\"-0\"" : buf;
}

void write_host_value_cases() {
  cir::Kernel k;
  k.name = "host_values";
  std::vector<cir::Expr> x;
  for (const char* n : {"a", "b", "c"}) {
    k.params.push_back({cir::ParamRole::Scalar, n, cir::Type::scalar(DType::F64)});
    x.push_back(cir::Var::make(n, cir::Type::scalar(DType::F64)));
  }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> specials = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, 3e38, 1e300, -1e-310, 5e-324, inf, -inf, std::nan(""), 7.0, 1e16 + 2};
  Random rng(7);
  auto pick = [&](int i) {
    if (i < 64) return specials[(i * 7 + rng.next_u64() % 16) % specials.size()];
    return std::ldexp((rng.uniform() - 0.5) * 8, static_cast<int>(rng.next_u64() % 120) - 60);
  };
  struct Op {
    std::string name;
    cir::Expr e;
    bool exact;
    std::function<Scalar(const std::vector<Scalar>&)> reference;
  };
  std::vector<Op> ops;
  for (BinaryOp b : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod, BinaryOp::Min, BinaryOp::Max, BinaryOp::Pow})
    ops.push_back({binary_op_symbol(b), cir::Binary::make(b, x[0], x[1]), b != BinaryOp::Pow,
                   [b](const std::vector<Scalar>& v) { return eval_binary(b, v[0], v[1]); }});
  ops.push_back({"neg", cir::Unary::make(UnaryOp::Neg, x[0]), true, [](const std::vector<Scalar>& v) { return eval_unary(UnaryOp::Neg, v[0]); }});
  for (MathFn fn : {MathFn::Sin, MathFn::Cos, MathFn::Tan, MathFn::Asin, MathFn::Acos, MathFn::Atan, MathFn::Sinh, MathFn::Cosh,
                    MathFn::Tanh, MathFn::Exp, MathFn::Exp2, MathFn::Log, MathFn::Log2, MathFn::Log10, MathFn::Sqrt, MathFn::Rsqrt,
                    MathFn::Abs, MathFn::Floor, MathFn::Ceil, MathFn::Round, MathFn::Trunc, MathFn::Sign, MathFn::Relu, MathFn::Pow,
                    MathFn::Atan2, MathFn::Min, MathFn::Max, MathFn::Clamp, MathFn::Fma}) {
    int arity = fn == MathFn::Clamp || fn == MathFn::Fma ? 3 : fn == MathFn::Pow || fn == MathFn::Atan2 || fn == MathFn::Min || fn == MathFn::Max ? 2 : 1;
    bool exact = fn == MathFn::Sqrt || fn == MathFn::Rsqrt || fn == MathFn::Abs || fn == MathFn::Floor || fn == MathFn::Ceil ||
                 fn == MathFn::Round || fn == MathFn::Trunc || fn == MathFn::Sign || fn == MathFn::Relu || fn == MathFn::Min ||
                 fn == MathFn::Max || fn == MathFn::Clamp || fn == MathFn::Fma;
    ops.push_back({math_fn_name(fn), cir::Math::make(fn, std::vector<cir::Expr>(x.begin(), x.begin() + arity)), exact,
                   [fn, arity](const std::vector<Scalar>& v) { return eval_math(fn, std::span<const Scalar>(v.data(), arity)); }});
  }
  for (const Op& op : ops) {
    codegen::HostScalarExpressions hoisted = codegen::hoist_host_scalar_expressions([&] {
      cir::Kernel with = k;
      with.body = {cir::make_let("r", op.e)};
      return with;
    }());
    if (hoisted.expressions.size() != 1) {
      std::cout << "{\"case\": \"host_value_" << op.name << "\", \"unsupported\": \"not computed by the host\"}\n";
      continue;
    }
    std::string json = codegen::host_scalar_expression_json(hoisted.expressions[0], k);
    for (int i = 0; i < 160; ++i) {
      double a = pick(i), b = pick(i + 1), c = pick(i + 2);
      if (op.name == "fma" && i >= 100) c = -a * b;  // cancellation: the exact product shows
      auto f = [](double v) { return Scalar::of_float(v, DType::F64); };
      std::vector<Scalar> args = {f(a), f(b), f(c)};
      Scalar want = op.reference(args);
      std::cout << "{\"case\": \"host_value_" << op.name << "\", \"variant\": " << i << ", \"host\": " << json << ", \"scalars\": ["
                << f64_text(a) << ", " << f64_text(b) << ", " << f64_text(c) << "], \"want\": " << f64_text(want.f)
                << ", \"exact\": " << (op.exact ? "true" : "false") << "}\n";
    }
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
  write_host_value_cases();
  return 0;
}
