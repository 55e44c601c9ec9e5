// The AMDGPU code generator, without a GPU: every parity case, specialised
// at several shapes and planned for gfx90a, gfx942 and gfx1100, compiles to
// one HSA code object per architecture whose metadata agrees with the plan
// (LDS, wave size, workgroup bound, the kernel arguments as the launcher
// packs them, no scratch without private arrays) and whose machine code
// has the plan's barriers, LDS accesses and wave shuffles. The planner's
// limits are errors before LLVM sees a kernel.
#include <gtest/gtest.h>

#include <filesystem>

#include "amdgpu_code_objects.hpp"
#include "backends/registry.hpp"
#include "cir/passes/specialize.hpp"
#include "codegen/llvm/amdgpu/amdgpu_compiler.hpp"
#include "codegen/llvm/amdgpu/code_object_metadata.hpp"
#include "codegen/llvm/gpu_entry.hpp"
#include "kernel_source.hpp"
#include "parity_cases.hpp"
#include "plan_parity.hpp"
#include "runtime/disk_cache.hpp"

namespace zyntax {
namespace {

using testing::Case;
using testing::kParityCases;

constexpr const char* kArchs[] = {"gfx90a", "gfx942", "gfx1100"};

codegen::AmdgpuArch arch_of(const char* name) { return *codegen::parse_amdgpu_arch(name); }

struct Planned {
  GpuPlan plan;
  std::string entry;
};

// The plans of a parity case's variants (and of its generic kernel, where
// that plans without sizes) for an architecture.
std::vector<Planned> plan_variants(const Case& c, const GpuTarget& target) {
  cir::Kernel generic = testing::kernel_of(testing::parity_source(c));
  EXPECT_FALSE(generic.name.empty());
  CompiledCompute compiled(generic);
  std::vector<Planned> out;
  Random rng(42);
  for (int variant = 0; variant < 6; ++variant) {
    std::vector<Tensor> inputs = testing::parity_inputs(c, variant, rng);
    std::optional<std::map<std::string, int64_t>> dims = testing::variant_dims(generic, inputs);
    if (!dims) continue;  // a variant whose shapes disagree: an error on every device
    GpuPlan plan = gpu_plan(compiled.specialize(*dims)->kernel, target);
    EXPECT_TRUE(plan.kernel.has_value()) << c.name << " variant " << variant << ": " << plan.why_not;
    if (plan.kernel) out.push_back({std::move(plan), "k" + std::to_string(variant)});
  }
  if (GpuPlan plan = gpu_plan(generic, target); plan.kernel) out.push_back({std::move(plan), "generic"});
  return out;
}

// The LDS a kernel's code holds: the plan's shared arrays, and for each
// block reduction a row of one value per wave of the largest workgroup,
// which LLVM places where it fits (at most each from a fresh 128 bytes).
struct Lds {
  int64_t least = 0, most = 0;
};
Lds expected_lds(const cir::Kernel& k, const GpuPlan& plan, const GpuTarget& target) {
  struct Reductions : cir::IRVisitor {
    std::map<std::string, DType> arrays;
    std::vector<std::string> reduced;
    using cir::IRVisitor::visit;
    void visit(const cir::Allocate* op) override { arrays[op->name] = op->type.dtype; }
    void visit(const cir::BlockReduce* op) override { reduced.push_back(op->array); }
  } r;
  r.include(k.body);
  Lds lds{plan.shared_bytes, plan.shared_bytes};
  for (const std::string& a : r.reduced) {
    int64_t row = target.max_threads_per_block / target.subgroup_size * static_cast<int64_t>(dtype_size(r.arrays.at(a)));
    lds.least += row;
    lds.most = (lds.most + cir::kSharedArrayAlignment - 1) / cir::kSharedArrayAlignment * cir::kSharedArrayAlignment + row;
  }
  return lds;
}

class AmdgpuParity : public ::testing::TestWithParam<Case> {};

TEST_P(AmdgpuParity, CodeObjectsAgreeWithThePlan) {
  const Case& c = GetParam();
  std::string objdump = testing::find_objdump();
  for (const char* name : kArchs) {
    SCOPED_TRACE(name);
    codegen::AmdgpuArch arch = arch_of(name);
    GpuTarget target = codegen::amdgpu_gpu_target(arch);
    std::vector<Planned> planned = plan_variants(c, target);
    ASSERT_FALSE(planned.empty());
    std::vector<codegen::AmdgpuKernelSpec> specs;
    for (const Planned& p : planned) specs.push_back({&*p.plan.kernel, p.entry, p.plan.block_threads});
    codegen::AmdgpuModule m;
    ASSERT_NO_THROW(m = codegen::AmdgpuCompiler::instance().compile(specs, arch)) << c.name;
    codegen::AmdgpuCodeObjectMetadata meta = codegen::read_code_object_metadata(m.bytes);
    EXPECT_EQ(meta.version_major, 1);
    EXPECT_EQ(meta.version_minor, 2) << "code object v5";
    std::map<std::string, std::string> code;
    std::string log;
    if (!objdump.empty()) {
      code = testing::disassemble(objdump, m.bytes, name, std::string("zyntax_amdgpu_") + c.name, &log);
      EXPECT_FALSE(code.empty()) << log;
    }
    for (const Planned& p : planned) {
      SCOPED_TRACE(p.entry + " (" + gpu_schedule_name(p.plan.schedule) + ")");
      const cir::Kernel& k = *p.plan.kernel;
      const codegen::AmdgpuKernelMetadata* md = meta.find(p.entry);
      ASSERT_NE(md, nullptr);
      testing::PlannedFeatures uses = testing::planned_features(k);
      EXPECT_EQ(md->wavefront_size, arch.wave_size);
      EXPECT_GE(md->max_flat_workgroup_size, p.plan.block_threads);
      EXPECT_LE(md->max_flat_workgroup_size, 1024);
      Lds lds = expected_lds(k, p.plan, target);
      EXPECT_GE(static_cast<int64_t>(md->group_segment_fixed_size), lds.least);
      EXPECT_LE(static_cast<int64_t>(md->group_segment_fixed_size), lds.most);
      if (!uses.block_reduce) {
        EXPECT_EQ(static_cast<int64_t>(md->group_segment_fixed_size), p.plan.shared_bytes);
      }
      if (!uses.private_arrays) {
        EXPECT_EQ(md->private_segment_fixed_size, 0u) << "scratch without private arrays";
      }
      // The arguments where the launcher packs them; the runtime's hidden ones after.
      std::vector<codegen::GpuEntryArgument> abi = codegen::gpu_entry_arguments(k);
      ASSERT_GE(md->args.size(), abi.size());
      for (size_t i = 0; i < abi.size(); ++i) {
        EXPECT_EQ(md->args[i].offset, abi[i].offset) << abi[i].name;
        EXPECT_EQ(md->args[i].size, abi[i].size) << abi[i].name;
        EXPECT_EQ(md->args[i].value_kind, abi[i].pointer ? "global_buffer" : "by_value") << abi[i].name;
      }
      for (size_t i = abi.size(); i < md->args.size(); ++i) EXPECT_EQ(md->args[i].value_kind.rfind("hidden_", 0), 0u) << md->args[i].value_kind;
      if (code.empty()) continue;
      const std::string& text = code[p.entry];
      ASSERT_FALSE(text.empty()) << "no code for " << p.entry;
      // A workgroup of one wave needs no s_barrier: LLVM leaves it out.
      if (uses.barrier && p.plan.block_threads > arch.wave_size) {
        EXPECT_NE(text.find("s_barrier"), std::string::npos);
      }
      if (uses.shared || uses.block_reduce) {
        EXPECT_NE(text.find("ds_"), std::string::npos) << "no LDS access";
      }
      if (uses.block_reduce) {
        EXPECT_NE(text.find("ds_bpermute_b32"), std::string::npos);
      }
      if (!uses.shared && !uses.block_reduce) {
        EXPECT_EQ(md->group_segment_fixed_size, 0u);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, AmdgpuParity, ::testing::ValuesIn(kParityCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

cir::Kernel planned_relu(const codegen::AmdgpuArch& arch) {
  cir::Kernel k = testing::kernel_of(
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = relu(x[i])\n }\n}");
  GpuPlan plan = gpu_plan(k, codegen::amdgpu_gpu_target(arch));
  EXPECT_TRUE(plan.kernel.has_value()) << plan.why_not;
  return *plan.kernel;
}

TEST(AmdgpuArch, ParsesArchitecturesAndDescribesThem) {
  EXPECT_EQ(codegen::parse_amdgpu_arch("gfx90a")->wave_size, 64);
  EXPECT_EQ(codegen::parse_amdgpu_arch("gfx942")->wave_size, 64);
  EXPECT_EQ(codegen::parse_amdgpu_arch("gfx1100")->wave_size, 32);
  EXPECT_FALSE(codegen::parse_amdgpu_arch("gfx90").has_value());
  EXPECT_FALSE(codegen::parse_amdgpu_arch("sm_80").has_value());
  EXPECT_EQ(codegen::amdgpu_arch_list(), "gfx90a, gfx942, gfx1100");
  for (const char* name : kArchs) {
    GpuTarget t = codegen::amdgpu_gpu_target(arch_of(name));
    EXPECT_EQ(t.verify(), "") << name;
    EXPECT_EQ(t.api, GpuApi::Rocm);
    EXPECT_EQ(t.shared_memory_max, 64 << 10);
    EXPECT_EQ(t.max_threads_per_block, 1024);
    EXPECT_FALSE(t.matrix_units.any());
    EXPECT_FALSE(t.async_copy);
  }
}

// One simple kernel through every step: its code object (v5 and v4), the
// assembly and the optimised IR.
TEST(AmdgpuCompiler, CompilesAKernelToACodeObject) {
  codegen::AmdgpuArch gfx90a = arch_of("gfx90a");
  cir::Kernel k = planned_relu(gfx90a);
  codegen::AmdgpuCodeObject o = codegen::compile_amdgpu(k, "relu", gfx90a);
  ASSERT_EQ(o.error, "");
  EXPECT_EQ(o.entry, "relu");
  ASSERT_GT(o.elf.size(), 4u);
  EXPECT_EQ(o.elf.substr(0, 4), "\x7f" "ELF");
  codegen::AmdgpuCodeObjectMetadata meta = codegen::read_code_object_metadata(o.elf);
  ASSERT_NE(meta.find("relu"), nullptr);
  EXPECT_EQ(meta.find("relu")->symbol, "relu.kd");
  EXPECT_EQ(meta.find("relu")->max_flat_workgroup_size, kGpuBlockThreads);
  EXPECT_EQ(meta.version_minor, 2);
  codegen::AmdgpuCodeObject v4 = codegen::compile_amdgpu(k, "relu", gfx90a, 4);
  ASSERT_EQ(v4.error, "");
  EXPECT_EQ(codegen::read_code_object_metadata(v4.elf).version_minor, 1) << "code object v4";
  codegen::AmdgpuCompiler& c = codegen::AmdgpuCompiler::instance();
  std::string ir = c.compile({{&k, "relu", 128}}, gfx90a, "llvm").bytes;
  EXPECT_NE(ir.find("amdgpu_kernel void @relu("), std::string::npos) << ir;
  EXPECT_NE(ir.find("\"amdgpu-flat-work-group-size\"=\"1,128\""), std::string::npos);
  EXPECT_NE(ir.find("ptr addrspace(1)"), std::string::npos);
  std::string asm_text = c.compile({{&k, "relu", 128}}, gfx90a, "asm").bytes;
  EXPECT_NE(asm_text.find(".amdhsa_kernel relu"), std::string::npos);
  EXPECT_NE(asm_text.find("gfx90a"), std::string::npos);
}

// Math in f64 links ocml: the code object has no unresolved symbol (the
// linker refuses any) and its functions are inlined or internal.
TEST(AmdgpuCompiler, LinksOcmlForF64Math) {
  if (!codegen::have_ocml()) GTEST_SKIP() << "built without ocml";
  cir::Kernel src = testing::kernel_of(
      "def f(x: tensor[n, f64]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = sin(x[i]) + pow(x[i], 2.5) + x[i] % 0.3 + erf(x[i])\n }\n}");
  for (const char* name : kArchs) {
    codegen::AmdgpuArch arch = arch_of(name);
    GpuPlan plan = gpu_plan(src, codegen::amdgpu_gpu_target(arch));
    ASSERT_TRUE(plan.kernel.has_value()) << plan.why_not;
    std::string ir = codegen::AmdgpuCompiler::instance().compile({{&*plan.kernel, "f", plan.block_threads}}, arch, "llvm").bytes;
    EXPECT_EQ(ir.find("declare double @__ocml_"), std::string::npos) << name;
    EXPECT_EQ(ir.find("external"), std::string::npos) << name << ": an __oclc_ control left unset";
    codegen::AmdgpuCodeObject o = codegen::compile_amdgpu(*plan.kernel, "f", arch, 5, plan.block_threads);
    EXPECT_EQ(o.error, "") << name;
  }
}

// Integer powers call the IR helper the GPUs share; its error flag is a
// private (address space 5) variable.
TEST(AmdgpuCompiler, IntegerPowersCompile) {
  cir::Kernel src = testing::kernel_of(
      "def f(x: tensor[n, i32], y: tensor[n, i32]) {\n return compute(x, y) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] ** y[i]\n }\n}");
  codegen::AmdgpuArch arch = arch_of("gfx1100");
  GpuPlan plan = gpu_plan(src, codegen::amdgpu_gpu_target(arch));
  ASSERT_TRUE(plan.kernel.has_value()) << plan.why_not;
  codegen::AmdgpuCodeObject o = codegen::compile_amdgpu(*plan.kernel, "f", arch, 5, plan.block_threads);
  EXPECT_EQ(o.error, "");
}

// What an architecture cannot run is refused with the reason before LLVM
// sees it: more than 1024 work-items per workgroup, an unknown code object
// version. (A workgroup's LDS past 64 KiB is the planner's refusal, which
// the compiler repeats through gpu_support.)
TEST(AmdgpuCompiler, RefusesWhatTheArchitectureCannotRun) {
  codegen::AmdgpuArch gfx942 = arch_of("gfx942");
  GpuTarget target = codegen::amdgpu_gpu_target(gfx942);
  codegen::AmdgpuCodeObject o;
  // Workgroups: the tuner may not ask for more than the target's, nor the launcher.
  cir::Kernel relu = planned_relu(gfx942);
  EXPECT_THROW(gpu_plan(testing::kernel_of("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i]\n }\n}"),
                        target, TuningChoice{{{"threads", 2048}}}),
               std::invalid_argument);
  o = codegen::compile_amdgpu(relu, "wide", gfx942, 5, 2048);
  EXPECT_NE(o.error.find("kernel wide for gfx942: 2048 work-items per workgroup (at most 1024)"), std::string::npos) << o.error;
  o = codegen::compile_amdgpu(relu, "v3", gfx942, 3);
  EXPECT_NE(o.error.find("code object version 3"), std::string::npos) << o.error;
}

// A kernel's code object is compiled once per machine: the next run loads
// it from the disk cache; another architecture or code object version
// compiles again.
TEST(AmdgpuCompiler, CodeObjectsComeFromTheDiskCacheOnTheNextRun) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("zyntax-hsaco-cache-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  DiskCache cache(dir.string());
  codegen::AmdgpuArch gfx90a = arch_of("gfx90a"), gfx1100 = arch_of("gfx1100");
  cir::Kernel k = planned_relu(gfx90a);
  bool from_disk = true;
  codegen::AmdgpuCodeObject first = codegen::cached_amdgpu(k, "f", gfx90a, cache, 5, kGpuBlockThreads, &from_disk);
  ASSERT_EQ(first.error, "");
  EXPECT_FALSE(from_disk);
  EXPECT_EQ(codegen::cached_amdgpu(k, "f", gfx90a, cache, 5, kGpuBlockThreads, &from_disk).elf, first.elf);
  EXPECT_TRUE(from_disk);
  codegen::cached_amdgpu(k, "f", gfx1100, cache, 5, kGpuBlockThreads, &from_disk);
  EXPECT_FALSE(from_disk);
  codegen::cached_amdgpu(k, "f", gfx90a, cache, 4, kGpuBlockThreads, &from_disk);
  EXPECT_FALSE(from_disk);
  std::filesystem::remove_all(dir);
}

// With an AMD GPU: every parity case on rocm:0 against the reference
// executor (one test, so that machines without one skip it once).
TEST(RocmParity, EveryCaseMatchesTheReference) {
  Device* gpu = device_registry().find("rocm:0");
  if (!gpu) GTEST_SKIP() << device_registry().unavailable_reason("rocm:0");
  for (const testing::Case& c : testing::kParityCases) {
    SCOPED_TRACE(c.name);
    testing::expect_matches_reference(*gpu, c, c.approximate || is_float(c.dtype));
  }
}

}  // namespace
}  // namespace zyntax
