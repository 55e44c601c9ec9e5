// The op library's kernels (stdlib/*.zynml) compile natively on every
// backend: the CPU plan keeps each one (none falls back to the reference
// executor), the GPU plan too, and their PTX assembles with ptxas (skipped
// where there is none). Sizes: every dimension at 6.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "cir/passes/specialize.hpp"
#include "host_plan.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "gpu_targets.hpp"
#include "op_library_kernels.hpp"
#include "ptxas.hpp"
#include "schedule_parity.hpp"

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
    CpuPlan cpu = testing::host_cpu_plan(k, 2);
    EXPECT_TRUE(cpu.kernel.has_value()) << name << " runs on the reference executor: " << cpu.why_not;
    GpuPlan gpu = gpu_plan(k, testing::test_gpu_target());
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

// The training kernels (convolution and its gradients, the norms'
// gradients) as the GPU plan schedules them (tiled products, a block per
// row, a thread per column sum), run on the reference executor against the
// kernels as written: odd sizes, a stride and padding, more rows than blocks.
TEST(OpLibrary, GpuPlansOfTheTrainingKernelsMatchTheKernelsAsWritten) {
  Session session;
  // A 2 x 3 x 9 x 7 input, 5 output channels, a 3 x 3 window at stride 2 and
  // padding 1 (5 x 4 outputs); 37 rows of 19 in blocks of 4.
  const std::map<std::string, int64_t> sizes = {
      {"b", 2},   {"ic", 3},  {"h", 9},  {"w", 7},  {"oc", 5},     {"kh", 3},     {"kw", 3},      {"sh", 2},
      {"sw", 2},  {"ph", 1},  {"pw", 1}, {"oh", 5}, {"ow", 4},     {"pix", 20},   {"rows", 37},   {"groups", 37},
      {"dim", 19}, {"stats.d1", 2}, {"chunk", 4}, {"chunks", 10}};
  std::set<std::string> checked;
  for (const auto& [name, generic] : testing::op_library_kernels(session)) {
    if (name.rfind("conv2d", 0) != 0 && name.rfind("layer_norm_", 0) != 0 && name.rfind("rms_norm_", 0) != 0) continue;
    std::map<std::string, int64_t> dims;
    for (const cir::DimParam& d : generic.dims) {
      ASSERT_TRUE(sizes.count(d.name)) << name << " has a size " << d.name << " this test does not give";
      dims[d.name] = sizes.at(d.name);
    }
    cir::Kernel k = cir::specialize(generic, dims);
    GpuPlan plan = gpu_plan(k, testing::test_gpu_target());
    ASSERT_TRUE(plan.kernel.has_value()) << name << ": " << plan.why_not;
    testing::expect_same_result(k, *plan.kernel, name + " (" + gpu_schedule_name(plan.schedule) + ")");
    checked.insert(name);
  }
  EXPECT_EQ(checked.size(), 10u);
}

}  // namespace
}  // namespace zyntax
