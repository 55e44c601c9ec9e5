// The op library's kernels (stdlib/*.zynml) compile natively on every
// backend: the CPU plan keeps each one (none falls back to the reference
// executor), the GPU plan too, and their PTX assembles with ptxas (skipped
// where there is none). Sizes: every dimension at 6.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "cir/passes/specialize.hpp"
#include "codegen/llvm/cpu/cpu_plan.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "codegen/llvm/nvptx/nvptx_plan.hpp"
#include "op_library_kernels.hpp"
#include "ptxas.hpp"

namespace zyntax {
namespace {

// Every dimension at 6.
std::vector<std::pair<std::string, cir::Kernel>> op_library_kernels(Session& session) {
  std::vector<std::pair<std::string, cir::Kernel>> out;
  for (auto& [name, k] : testing::op_library_kernels(session)) {
    std::map<std::string, int64_t> dims;
    for (const cir::DimParam& d : k.dims) dims[d.name] = 6;
    out.emplace_back(name, cir::specialize(k, dims));
  }
  return out;
}

TEST(OpLibrary, EveryKernelCompilesForTheCpuAndTheGpu) {
  Session session;
  auto kernels = op_library_kernels(session);
  ASSERT_GE(kernels.size(), 25u);
  std::vector<cir::Kernel> planned;
  std::vector<std::string> names;
  for (const auto& [name, k] : kernels) {
    codegen::CpuPlan cpu = codegen::plan_cpu_kernel(k, 2);
    EXPECT_TRUE(cpu.kernel.has_value()) << name << " runs on the reference executor: " << cpu.why_not;
    codegen::GpuPlan gpu = codegen::plan_gpu_kernel(k);
    EXPECT_TRUE(gpu.kernel.has_value()) << name << " does not compile for the GPU: " << gpu.why_not;
    if (gpu.kernel) {
      planned.push_back(*gpu.kernel);
      names.push_back(name);
    }
  }
  std::vector<const cir::Kernel*> ptrs;
  for (const cir::Kernel& k : planned) ptrs.push_back(&k);
  codegen::PtxModule m = codegen::NvptxCompiler::instance().compile(ptrs, names, *codegen::parse_nvptx_arch("sm_80"));
  for (const std::string& n : names) EXPECT_NE(m.ptx.find(".entry " + n + "("), std::string::npos) << n;
  std::string ptxas = testing::find_ptxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (set PTXAS or put the CUDA toolkit on PATH)";
  std::string file = ::testing::TempDir() + "/zyntax_op_library.ptx", log;
  std::ofstream(file) << m.ptx;
  EXPECT_EQ(testing::run_ptxas(ptxas, file, "sm_80", &log), 0) << file << ":\n" << log;
}

}  // namespace
}  // namespace zyntax
