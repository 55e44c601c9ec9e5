// The NVIDIA backend. Without a GPU: every parity case, specialised at
// several shapes, compiles to PTX that NVIDIA's ptxas accepts for sm_80 and
// sm_90 (skipped where no ptxas is installed), and the devices registry
// says why there is no GPU. With a GPU: every parity case on cuda:0 against
// the reference executor, the schedules at sizes the parity cases do not
// reach (128x128 product tiles, rows of a vocabulary), views of mapped host
// memory read in place and outputs kept on the GPU (skipped without one). Float results compare
// within the parity bound: libdevice's f64 functions are not glibc's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../../bench/bench_kernels.hpp"
#include "backends/registry.hpp"
#include "cir/passes/specialize.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "codegen/llvm/nvptx/nvptx_compiler.hpp"
#include "gpu_targets.hpp"
#include "backends/cuda/cuda_driver.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/launch.hpp"
#include "backends/reference/reference_executor.hpp"
#include "parity_cases.hpp"
#include "plan_parity.hpp"
#include "ptxas.hpp"

namespace zyntax {
namespace {

using testing::Case;
using testing::kParityCases;

class GpuParity : public ::testing::TestWithParam<Case> {};

TEST_P(GpuParity, MatchesTheReference) {
  Device* gpu = device_registry().find("cuda:0");
  if (!gpu) GTEST_SKIP() << device_registry().unavailable_reason("cuda:0");
  const Case& c = GetParam();
  testing::expect_matches_reference(*gpu, c, c.approximate || is_float(c.dtype));
}

INSTANTIATE_TEST_SUITE_P(Kernels, GpuParity, ::testing::ValuesIn(kParityCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

class PtxParity : public ::testing::TestWithParam<Case> {};

// The specialised kernels of the parity variants (the sizes the GPU runs),
// all in one PTX module per architecture, accepted by ptxas.
TEST_P(PtxParity, PtxasAcceptsEveryShape) {
  std::string ptxas = testing::find_ptxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (set PTXAS or put the CUDA toolkit on PATH)";
  const Case& c = GetParam();
  cir::Kernel generic = testing::kernel_of(testing::parity_source(c));
  ASSERT_FALSE(generic.name.empty());
  CompiledCompute compiled(generic);
  std::vector<cir::Kernel> planned;
  std::vector<std::string> entries;
  Random rng(42);
  for (int variant = 0; variant < 6; ++variant) {
    std::vector<Tensor> inputs = testing::parity_inputs(c, variant, rng);
    std::optional<std::map<std::string, int64_t>> dims = testing::variant_dims(generic, inputs);
    if (!dims) continue;  // a variant whose shapes disagree: an error on every device
    auto s = compiled.specialize(*dims);
    GpuPlan plan = gpu_plan(s->kernel, testing::test_gpu_target());
    ASSERT_TRUE(plan.kernel.has_value()) << c.name << " variant " << variant << ": " << plan.why_not;
    planned.push_back(*plan.kernel);
    entries.push_back("k" + std::to_string(variant));
  }
  planned.push_back(generic);  // and the generic kernel, when it compiles without sizes
  entries.push_back("generic");
  if (!gpu_plan(generic, testing::test_gpu_target()).kernel) {
    planned.pop_back();
    entries.pop_back();
  } else {
    planned.back() = *gpu_plan(generic, testing::test_gpu_target()).kernel;
  }
  std::vector<const cir::Kernel*> ptrs;
  for (const cir::Kernel& k : planned) ptrs.push_back(&k);
  std::string dir = ::testing::TempDir();
  for (const char* arch : {"sm_80", "sm_90"}) {
    codegen::PtxModule m = codegen::NvptxCompiler::instance().compile(ptrs, entries, *codegen::parse_nvptx_arch(arch));
    for (const std::string& e : entries) EXPECT_NE(m.ptx.find(".entry " + e + "("), std::string::npos) << e;
    std::string file = dir + "/zyntax_parity_" + c.name + "_" + arch + ".ptx";
    std::ofstream(file) << m.ptx;
    std::string log;
    int rc = testing::run_ptxas(ptxas, file, arch, &log);
    EXPECT_EQ(rc, 0) << c.name << " " << arch << ": ptxas rejects " << file << ":\n" << log;
    if (rc == 0) std::remove(file.c_str());
  }
}

class PlanParity : public ::testing::TestWithParam<Case> {};

// The GPU plan of each parity variant (sm_90's shared memory) on the
// reference executor, whose race checker stands in for the threads running
// at once: the kernel's result, without a race, on every machine.
TEST_P(PlanParity, GpuPlansMatchTheKernelOnTheReference) { testing::expect_plans_match(GetParam(), testing::nvidia_target("sm_90")); }

INSTANTIATE_TEST_SUITE_P(Kernels, PlanParity, ::testing::ValuesIn(kParityCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

INSTANTIATE_TEST_SUITE_P(Kernels, PtxParity, ::testing::ValuesIn(kParityCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(NvptxArch, ParsesArchitecturesAndPicksOneForACapability) {
  EXPECT_EQ(codegen::parse_nvptx_arch("sm_80")->capability, 80);
  EXPECT_EQ(codegen::parse_nvptx_arch("90")->name, "sm_90");
  EXPECT_EQ(codegen::parse_nvptx_arch("9.0")->name, "sm_90");
  EXPECT_EQ(codegen::parse_nvptx_arch("sm_90a")->ptx_feature, "+ptx80");
  EXPECT_FALSE(codegen::parse_nvptx_arch("sm_13").has_value());
  EXPECT_FALSE(codegen::parse_nvptx_arch("sm_80a").has_value());
  EXPECT_FALSE(codegen::parse_nvptx_arch("banana").has_value());
  // An H100/H200 (exactly 9.0) gets the accelerated features; nothing else does.
  EXPECT_EQ(codegen::nvptx_arch_for(9, 0).name, "sm_90a");
  EXPECT_EQ(codegen::nvptx_arch_for(9, 0).capability, 90);
  EXPECT_EQ(codegen::nvptx_arch_for(9, 0).ptx_feature, "+ptx80");
  EXPECT_EQ(codegen::nvptx_arch_for(8, 6).name, "sm_86");
  EXPECT_EQ(codegen::nvptx_arch_for(8, 8).name, "sm_87");   // newest not above it
  EXPECT_EQ(codegen::nvptx_arch_for(8, 0).name, "sm_80");
  EXPECT_EQ(codegen::nvptx_arch_for(10, 0).name, "sm_90");  // newer GPUs run PTX for older ones
  EXPECT_EQ(codegen::nvptx_arch_for(12, 0).name, "sm_90");
  GpuTarget h100 = codegen::nvptx_gpu_target(codegen::nvptx_arch_for(9, 0), {132, 227 << 10, 1024, 32});
  EXPECT_TRUE(h100.tensor_copies && h100.warpgroup_mma);
  EXPECT_EQ(h100.verify(), "");
  GpuTarget blackwell = codegen::nvptx_gpu_target(codegen::nvptx_arch_for(10, 0));
  EXPECT_FALSE(blackwell.tensor_copies || blackwell.warpgroup_mma);
}

// Math in f64 links libdevice; the result has no unresolved calls.
TEST(NvptxCompiler, LinksLibdeviceForF64Math) {
  if (!codegen::have_libdevice()) GTEST_SKIP() << "built without libdevice";
  cir::Kernel k = testing::kernel_of(
      "def f(x: tensor[n, f64]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = sin(x[i]) + pow(x[i], 2.5) + x[i] % 0.3\n }\n}");
  GpuPlan plan = gpu_plan(k, testing::test_gpu_target());
  ASSERT_TRUE(plan.kernel.has_value()) << plan.why_not;
  codegen::PtxModule m = codegen::NvptxCompiler::instance().compile({&*plan.kernel}, {"f"}, *codegen::parse_nvptx_arch("sm_80"));
  EXPECT_NE(m.ptx.find(".visible .entry f("), std::string::npos);
  EXPECT_EQ(m.ptx.find(".extern"), std::string::npos) << "unresolved functions remain";
  EXPECT_EQ(m.ptx.find("__nv_sin"), std::string::npos) << "libdevice calls are inlined or internal";
}

// A kernel's PTX is compiled once per machine: the next run (here, a second
// call) loads it from the disk cache; another architecture or entry name,
// or a disabled cache, compiles again.
TEST(NvptxCompiler, PtxComesFromTheDiskCacheOnTheNextRun) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("zyntax-ptx-cache-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  DiskCache cache(dir.string());
  cir::Kernel k = testing::kernel_of(
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 3.0\n }\n}");
  GpuPlan plan = gpu_plan(k, testing::test_gpu_target());
  ASSERT_TRUE(plan.kernel.has_value()) << plan.why_not;
  codegen::NvptxCompiler& c = codegen::NvptxCompiler::instance();
  codegen::NvptxArch sm80 = *codegen::parse_nvptx_arch("sm_80"), sm90 = *codegen::parse_nvptx_arch("sm_90");
  bool from_disk = true;
  std::string first = c.cached_ptx(*plan.kernel, "f", sm80, cache, &from_disk);
  EXPECT_FALSE(from_disk);
  EXPECT_NE(first.find(".visible .entry f("), std::string::npos);
  EXPECT_EQ(c.cached_ptx(*plan.kernel, "f", sm80, cache, &from_disk), first);
  EXPECT_TRUE(from_disk);
  std::string other = c.cached_ptx(*plan.kernel, "f", sm90, cache, &from_disk);
  EXPECT_FALSE(from_disk);
  EXPECT_NE(other.find(".target sm_90"), std::string::npos);
  c.cached_ptx(*plan.kernel, "g", sm80, cache, &from_disk);
  EXPECT_FALSE(from_disk);
  DiskCache off("");
  c.cached_ptx(*plan.kernel, "f", sm80, off, &from_disk);
  EXPECT_FALSE(from_disk);
  EXPECT_EQ(c.cached_ptx(*plan.kernel, "f", sm80, off, &from_disk), first);
  EXPECT_FALSE(from_disk);
  std::filesystem::remove_all(dir);
}

// Without a GPU the registry has none and says why; with one, it lists it.
TEST(CudaRuntime, RegistryReportsTheGpuOrWhyNot) {
  DeviceRegistry& r = device_registry();
  if (cuda::gpu_available()) {
    ASSERT_NE(r.find("cuda:0"), nullptr);
    EXPECT_EQ(r.find("cuda:0")->info().type, "gpu");
    EXPECT_EQ(r.find("auto"), r.find("cuda:0"));
    EXPECT_GT(r.find("cuda:0")->info().cores, 0);
  } else {
    EXPECT_EQ(r.find("cuda:0"), nullptr);
    EXPECT_EQ(r.find("auto"), r.find("cpu"));
    std::string why = r.unavailable_reason("cuda:0");
    EXPECT_NE(why.find("no CUDA GPU"), std::string::npos) << why;
    EXPECT_NE(r.not_available_message("cuda:0").find(why), std::string::npos);
    EXPECT_EQ(r.unavailable_reason("cpu:9"), "");
  }
}

// A view of host memory (to_device(copy=false)) is read in place by the
// GPU's kernels: nothing is copied in, and what the host writes into the
// memory is what the next run reads. Views of pinned memory too.
TEST(CudaRuntime, MappedViewsAreReadInPlace) {
  Device* gpu = device_registry().find("cuda:0");
  if (!gpu) GTEST_SKIP() << device_registry().unavailable_reason("cuda:0");
  CompiledCompute compiled(testing::kernel_of(
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 2.0 + 1.0\n }\n}\n"));
  auto expect_doubled_plus_one = [](const Tensor& x, const Tensor& y) {
    ASSERT_EQ(y.shape(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y.get_f64(i), x.get_f64(i) * 2 + 1) << i;
  };
  for (int64_t n : {1, 1000, (1 << 20) + 3}) {
    Tensor x = Tensor::empty(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i) x.set(i, Scalar::of_float(0.25 * static_cast<double>(i % 4099), DType::F32));
    Tensor copied = compiled.launch(*gpu, {x}, {}, {});
    EXPECT_EQ(gpu->last_run_bytes_copied_in(), x.nbytes());
    expect_doubled_plus_one(x, copied);

    Tensor view = gpu->share_host(x);
    EXPECT_TRUE(view.same_storage(x));
    expect_doubled_plus_one(x, compiled.launch(*gpu, {view}, {}, {}));
    EXPECT_EQ(gpu->last_run_bytes_copied_in(), 0u) << "n=" << n;
    x.set(n - 1, Scalar::of_float(7.0, DType::F32));  // through the original: the view sees it
    EXPECT_EQ(compiled.launch(*gpu, {view}, {}, {}).get_f64(n - 1), 15.0);
  }
  Tensor pinned = gpu->host_tensor(DType::F32, {777}, /*pinned=*/true);
  for (int64_t i = 0; i < 777; ++i) pinned.set(i, Scalar::of_float(static_cast<double>(i) - 300, DType::F32));
  compiled.launch(*gpu, {pinned}, {}, {});
  EXPECT_EQ(gpu->last_run_bytes_copied_in(), pinned.nbytes()) << "pinned memory is for copies";
  Tensor pinned_view = gpu->share_host(pinned);
  expect_doubled_plus_one(pinned, compiled.launch(*gpu, {pinned_view}, {}, {}));
  EXPECT_EQ(gpu->last_run_bytes_copied_in(), 0u);
}

// A kernel's output stays in the GPU's memory: the next kernel reads it
// without a copy in, and the host gets it back when it first reads it. A
// tensor placed on the GPU (copy_in, to_device) is copied in once; a host
// write drops the GPU's copy, and the next run copies the new bytes in and
// keeps them. A reduction's result comes back at once.
TEST(CudaRuntime, TensorsStayOnTheGpuBetweenKernels) {
  DeviceRegistry& registry = device_registry();
  Device* gpu = registry.find("cuda:0");
  if (!gpu) GTEST_SKIP() << registry.unavailable_reason("cuda:0");
  CompiledCompute affine(testing::kernel_of(
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 2.0 + 1.0\n }\n}\n"));
  CompiledCompute sum(testing::kernel_of("def s(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(+)\n for i in 0..n:\n  yield x[i]\n }\n}"));
  for (int64_t n : {1, 1000, (1 << 20) + 3}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    Tensor x = Tensor::empty(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i) x.set(i, Scalar::of_float(0.25 * static_cast<double>(i % 4099), DType::F32));
    Tensor y = affine.launch(*gpu, {x}, {}, {});
    EXPECT_EQ(gpu->last_run_bytes_copied_in(), x.nbytes());
    EXPECT_NE(y.mirror(), nullptr);
    EXPECT_EQ(y.device(), "cuda:0");
    Tensor z = affine.launch(*gpu, {y}, {}, {});
    EXPECT_EQ(gpu->last_run_bytes_copied_in(), 0u) << "the output was read where it was";
    Tensor s = sum.launch(*gpu, {z}, {}, {});
    EXPECT_EQ(gpu->last_run_bytes_copied_in(), 0u);
    EXPECT_EQ(s.mirror(), nullptr) << "a reduction's result is finished on the host";
    double expect_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = x.get_f64(i);
      ASSERT_EQ(y.get_f64(i), v * 2 + 1) << i;
      ASSERT_EQ(z.get_f64(i), (v * 2 + 1) * 2 + 1) << i;
      expect_sum += (v * 2 + 1) * 2 + 1;
    }
    EXPECT_NEAR(s.get_f64(0), expect_sum, 1e-6 * std::abs(expect_sum) + 1e-3);
    EXPECT_NE(z.mirror(), nullptr) << "reading keeps the GPU's copy";
    // Another device reads the GPU's output through the host.
    Tensor on_cpu = affine.launch(*registry.find("cpu"), {y}, {}, {});
    EXPECT_EQ(on_cpu.get_f64(n - 1), z.get_f64(n - 1));

    Tensor g = gpu->copy_in(x);
    EXPECT_EQ(g.device(), "cuda:0");
    EXPECT_NE(g.mirror(), nullptr);
    EXPECT_EQ(affine.launch(*gpu, {g}, {}, {}).get_f64(n - 1), y.get_f64(n - 1));
    EXPECT_EQ(gpu->last_run_bytes_copied_in(), 0u);
    g.set(n - 1, Scalar::of_float(7.0, DType::F32));
    EXPECT_EQ(g.mirror(), nullptr) << "a host write drops the GPU's copy";
    if (n > 1) {
      EXPECT_EQ(g.get_f64(0), x.get_f64(0)) << "the rest came back before the write";
    }
    EXPECT_EQ(affine.launch(*gpu, {g}, {}, {}).get_f64(n - 1), 15.0);
    EXPECT_EQ(gpu->last_run_bytes_copied_in(), g.nbytes());
    EXPECT_NE(g.mirror(), nullptr) << "the copy in is kept for a tensor placed on the GPU";
    EXPECT_EQ(affine.launch(*gpu, {g}, {}, {}).get_f64(0), n > 1 ? y.get_f64(0) : 15.0);
    EXPECT_EQ(gpu->last_run_bytes_copied_in(), 0u);
  }
}

// The GPU schedules at the sizes where they differ from the parity cases'
// (which stay under 128): products in 128x128 tiles, with their copies
// asynchronous (row-major factors) or not (a transposed B, a ragged depth),
// on tensor cores (bf16) and on CUDA cores; argmax and argmin over rows of a
// vocabulary and over a whole tensor, with ties and NaNs.
std::vector<Tensor> random_inputs(const std::vector<std::pair<Shape, DType>>& shapes, uint64_t seed, bool ties) {
  Random rng(seed);
  std::vector<Tensor> out;
  for (const auto& [shape, dtype] : shapes)
    out.push_back(ties ? rand_uniform(rng, DType::F64, shape, 0, 3).astype(DType::I64).astype(dtype) : rand_normal(rng, dtype, shape));
  return out;
}

std::vector<Tensor> magnitudes(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    Tensor a = t.astype(DType::F32);
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, Scalar::of_float(std::fabs(a.get(i).f), DType::F32));
    out.push_back(a.astype(t.dtype()));
  }
  return out;
}

TEST(GpuSchedules, LargeProductsMatchTheReference) {
  Device* gpu = device_registry().find("cuda:0");
  if (!gpu) GTEST_SKIP() << device_registry().unavailable_reason("cuda:0");
  Device* ref = device_registry().find("cpu:reference");
  const char* plain = "def f(a: tensor[m, k, DT], b: tensor[k, n, DT]) {\n return compute(a, b) {\n @kernel matmul\n"
                      " for i in 0..m, j in 0..n:\n  var s: f32 = 0.0\n  for p in 0..k:\n   s += f32(a[i, p]) * f32(b[p, j])\n  out[i, j] = s\n }\n}";
  const char* transposed = "def f(a: tensor[m, k, DT], b: tensor[n, k, DT]) {\n return compute(a, b) {\n @kernel matmul\n"
                           " for i in 0..m, j in 0..n:\n  var s: f32 = 0.0\n  for p in 0..k:\n   s += f32(a[i, p]) * f32(b[j, p])\n  out[i, j] = s\n }\n}";
  struct Run {
    const char* source;
    DType dtype;
    int64_t m, k, n;
    bool b_transposed;
  };
  // 1408 x 1536 is 132 tiles of 128 x 128, enough to take them (with
  // asynchronous copies); the others run in 64 x 64 tiles. That product is
  // checked against the cpu device (itself checked against the reference),
  // which the reference executor would take minutes over.
  Device* cpu = device_registry().find("cpu");
  for (const Run& r : {Run{plain, DType::F32, 300, 260, 200, false}, Run{transposed, DType::F32, 300, 258, 200, true},
                       Run{plain, DType::F32, 100, 64, 96, false}, Run{plain, DType::BF16, 300, 264, 200, false},
                       Run{plain, DType::F32, 1408, 72, 1536, false}, Run{transposed, DType::F32, 1408, 66, 1536, true}}) {
    std::string src = r.source;
    for (size_t at; (at = src.find("DT")) != std::string::npos;) src.replace(at, 2, dtype_name(r.dtype));
    CompiledCompute c(testing::kernel_of(src));
    Shape b_shape = r.b_transposed ? Shape{r.n, r.k} : Shape{r.k, r.n};
    std::vector<Tensor> in = random_inputs({{{r.m, r.k}, r.dtype}, {b_shape, r.dtype}}, 5, false);
    Device* oracle = r.m * r.n > 1000000 ? cpu : ref;
    Tensor want = c.launch(*oracle, in, {}, {}), got = c.launch(*gpu, in, {}, {});
    Tensor bound = c.launch(*oracle, magnitudes(in), {}, {});
    ASSERT_EQ(want.shape(), got.shape());
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.get_f64(i), want.get_f64(i), 1e-4 * bound.get_f64(i) + 1e-6) << src << "\nelement " << i;
  }
}

// Flash attention over bf16 blocks as the benchmark writes it, its tile
// products on tensor cores (Q K^T from exact factors; P V too under
// @precision(tf32)), causal and not, at head sizes 64 and 128 and at odd
// sizes (a last key block of a few rows, a head size no multiple of 8),
// against the reference executor: within f32 rounding of reordered sums,
// or of P rounded to TF32.
TEST(GpuSchedules, FlashAttentionOnTensorCoresMatchesTheReference) {
  Device* gpu = device_registry().find("cuda:0");
  if (!gpu) GTEST_SKIP() << device_registry().unavailable_reason("cuda:0");
  Device* ref = device_registry().find("cpu:reference");
  struct Run {
    int64_t bh, s, d;
  };
  for (bool tf32 : {false, true})
    for (bool causal : {false, true})
      for (Run r : {Run{2, 200, 64}, Run{1, 131, 128}, Run{3, 70, 40}, Run{1, 64, 12}}) {
        std::string src = bench::flash_attention_bf16_source(64, causal, tf32);
        CompiledCompute c(testing::kernel_of(src));
        std::vector<Tensor> in = random_inputs({{{r.bh, r.s, r.d}, DType::BF16}, {{r.bh, r.s, r.d}, DType::BF16}, {{r.bh, r.s, r.d}, DType::BF16}}, 9, false);
        Tensor want = c.launch(*ref, in, {}, {}), got = c.launch(*gpu, in, {}, {});
        ASSERT_EQ(want.shape(), got.shape());
        double scale = 0;
        for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.get_f64(i)));
        for (int64_t i = 0; i < want.numel(); ++i)
          ASSERT_NEAR(got.get_f64(i), want.get_f64(i), (tf32 ? 3e-3 : 1e-4) * scale)
              << (tf32 ? "tf32 " : "") << (causal ? "causal " : "") << r.bh << "x" << r.s << "x" << r.d << " element " << i;
      }
}

TEST(GpuSchedules, ArgReductionsOfLongRowsAndWholeTensorsMatchTheReference) {
  Device* gpu = device_registry().find("cuda:0");
  if (!gpu) GTEST_SKIP() << device_registry().unavailable_reason("cuda:0");
  Device* ref = device_registry().find("cpu:reference");
  for (const char* op : {"argmax", "argmin"}) {
    CompiledCompute rows(testing::kernel_of(std::string("def f(m: tensor[r, c, f32]) {\n return compute(m) {\n @kernel reduce(") + op +
                                            ", axis=1)\n for i in 0..r, j in 0..c:\n  yield (m[i, j], j)\n }\n}"));
    CompiledCompute whole(testing::kernel_of(std::string("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(") + op +
                                             ")\n for i in 0..n:\n  yield (x[i], i)\n }\n}"));
    for (bool nans : {false, true}) {
      std::vector<Tensor> m = random_inputs({{{8, 50257}, DType::F32}}, 3, true);
      std::vector<Tensor> x = random_inputs({{{1000003}, DType::F32}}, 4, true);
      if (nans) {
        m[0].set(3 * 50257 + 40000, Scalar::of_float(NAN, DType::F32));
        m[0].set(3 * 50257 + 30000, Scalar::of_float(-NAN, DType::F32));
        x[0].set(700001, Scalar::of_float(NAN, DType::F32));
      }
      Tensor want = rows.launch(*ref, m, {}, {}), got = rows.launch(*gpu, m, {}, {});
      for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(got.get(i).as_int64(), want.get(i).as_int64()) << op << " row " << i;
      EXPECT_EQ(whole.launch(*gpu, x, {}, {}).get(0).as_int64(), whole.launch(*ref, x, {}, {}).get(0).as_int64()) << op;
    }
  }
}

}  // namespace
}  // namespace zyntax
