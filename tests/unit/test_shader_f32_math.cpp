// The f32 math shared by the shader backends (codegen/shader/f32_math),
// written once in a WGSL subset and printed as GLSL: the translation, and
// the functions run on vulkan:0 against the reference executor within their
// bounds (tests/unit/f32_math_accuracy.hpp). Without shaderFloat64 (ctest's
// vulkan_minimal_device sets ZYNTAX_VULKAN_NO_F64=1) the device computes
// them with these helpers; with it, with the f64 helpers rounded once, and
// the same bounds hold. The WebGPU adapter runs them in tests/webgpu.
#include <gtest/gtest.h>

#include "backends/registry.hpp"
#include "codegen/shader/f32_math.hpp"
#include "codegen/shader/wgsl_to_c_like.hpp"
#include "f32_math_accuracy.hpp"
#include "kernel_source.hpp"
#include "runtime/launch.hpp"

namespace zyntax {
namespace {

TEST(WgslToGlsl, WritesTheSubsetAsGlsl) {
  std::string wgsl =
      "fn f(a: f32, b: vec2<u32>) -> u32 {\n"
      "  let u: u32 = bitcast<u32>(a) | b.x;\n"
      "  var t: array<u32, 2> = array<u32, 2>(1u, 2u);\n"
      "  var s: vec2<i32> = vec2<i32>(i32(u), 0);\n"
      "  let r: f32 = round(bitcast<f32>(select(u, t[1], a < 0.0)));\n"
      "  return firstLeadingBit(u) + countLeadingZeros(u32(s.x)) + u32(r);\n"
      "}\n"
      "fn g() { }\n";
  EXPECT_EQ(codegen::wgsl_to_glsl(wgsl),
            "uint f(float a, uvec2 b) {\n"
            "  uint u = floatBitsToUint(a) | b.x;\n"
            "  uint t[2] = uint[2](1u, 2u);\n"
            "  ivec2 s = ivec2(int(u), 0);\n"
            "  float r = roundEven(uintBitsToFloat(((a < 0.0) ? (t[1]) : (u))));\n"
            "  return uint(findMSB(u)) + (31u - uint(findMSB(uint(s.x)))) + uint(r);\n"
            "}\n"
            "void g() { }\n");
}

TEST(WgslToGlsl, RefusesWhatItDoesNotKnow) {
  EXPECT_THROW(codegen::wgsl_to_glsl("fn f(a: f16) -> f16 { return a; }\n"), std::logic_error);
  EXPECT_THROW(codegen::wgsl_to_glsl("let x: u32 = bitcast<u64>(y);\n"), std::logic_error);
}

TEST(ShaderF32Math, EveryHelperIsWrittenInBothLanguages) {
  std::set<std::string> all;
  for (MathFn fn : {MathFn::Sin, MathFn::Cos, MathFn::Tan, MathFn::Asin, MathFn::Acos, MathFn::Atan, MathFn::Sinh, MathFn::Cosh,
                    MathFn::Tanh, MathFn::Exp, MathFn::Exp2, MathFn::Log, MathFn::Log2, MathFn::Log10, MathFn::Erf, MathFn::Pow,
                    MathFn::Atan2, MathFn::Fma, MathFn::Sigmoid, MathFn::Silu, MathFn::Gelu, MathFn::GeluTanh})
    all.insert(codegen::shader_f32_function(fn));
  all.insert(codegen::kShaderF32Fmod);
  std::string wgsl = codegen::shader_f32_library(all, codegen::ShaderLanguage::Wgsl);
  std::string glsl = codegen::shader_f32_library(all, codegen::ShaderLanguage::Glsl);
  for (const std::string& name : all) {
    EXPECT_NE(wgsl.find("fn " + name + "("), std::string::npos) << name;
    EXPECT_NE(glsl.find(" " + name + "("), std::string::npos) << name;
  }
  EXPECT_EQ(glsl.find("fn "), std::string::npos);
  EXPECT_EQ(glsl.find("let "), std::string::npos);
  // Each helper once, however many ask for it.
  EXPECT_EQ(wgsl.find("fn zy_f_exp_scaled("), wgsl.rfind("fn zy_f_exp_scaled("));
}

TEST(ShaderF32Math, MatchesTheReferenceOnVulkanWithinItsBounds) {
  Device* device = device_registry().find("vulkan:0");
  if (!device) GTEST_SKIP() << device_registry().unavailable_reason("vulkan:0");
  std::vector<std::vector<float>> args = testing::f32_math_arguments();
  const int64_t n = static_cast<int64_t>(args[0].size());
  std::vector<Tensor> inputs;
  for (const std::vector<float>& a : args) {
    Tensor t = Tensor::empty(DType::F32, {n});
    std::memcpy(t.data(), a.data(), a.size() * sizeof(float));
    inputs.push_back(t);
  }
  for (const testing::F32MathCase& c : testing::f32_math_cases()) {
    CompiledCompute kernel(testing::kernel_of(
        std::string("def f(x: tensor[n, f32], y: tensor[n, f32], z: tensor[n, f32]) {\n return compute(x, y, z) {\n @kernel elementwise\n"
                    " for i in 0..n:\n  out[i] = ") +
        c.expr + "\n }\n}"));
    Tensor got = kernel.launch(*device, inputs, {}, {});
    Tensor want = kernel.launch(*device_registry().find("cpu:reference"), inputs, {}, {});
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 5; ++i) {
      float g = got.data_as<float>()[i], w = want.data_as<float>()[i];
      std::string why = testing::f32_math_disagreement(c, g, w);
      if (why.empty()) continue;
      ++failures;
      ADD_FAILURE() << c.expr << " at x = " << args[0][i] << ", y = " << args[1][i] << ", z = " << args[2][i] << " on "
                    << (device->gpu_target()->f64 ? "vulkan:0" : "vulkan:0 without f64") << ": " << g << ", reference " << w << ": "
                    << why;
    }
  }
}

}  // namespace
}  // namespace zyntax
