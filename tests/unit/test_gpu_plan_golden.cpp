// The GPU plans of every parity case (each shape variant, the generic
// kernel, and sizes large enough for the large-tile schedules) and of the op
// library's kernels, for sm_75, sm_80 and sm_90, against a golden record of what
// they were: a refactoring of the planner, the targets or the passes must
// leave every schedule byte for byte as it was. A schedule changed on
// purpose is recorded anew with ZYNTAX_UPDATE_GOLDEN=1 (review the diff of
// tests/unit/data/gpu_plans.golden: it names every kernel that changed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "cir/hash.hpp"
#include "../../bench/bench_kernels.hpp"
#include "cir/passes/specialize.hpp"
#include "op_library_kernels.hpp"
#include "golden_record.hpp"
#include "parity_cases.hpp"
#include "gpu_targets.hpp"
#include "runtime/launch.hpp"

namespace zyntax {
namespace {

using testing::Case;
using testing::kParityCases;

// sm_75 has no tensor-core products of ours and 64 KiB of shared memory per block.
const char* const kArchs[] = {"sm_75", "sm_80", "sm_90"};
const char* const kGolden = ZYNTAX_SOURCE_DIR "/tests/unit/data/gpu_plans.golden";

// One line per plan: what was planned, for which architecture, the schedule
// and its launch shape, and the hash of the planned kernel's text (or why
// there is no plan).
std::string describe(const std::string& what, const std::string& arch, const cir::Kernel& k) {
  testing::PlannedForArch p = testing::plan_for_arch(k, arch);
  std::ostringstream line;
  line << what << " " << arch << " ";
  if (!p.kernel) {
    line << "none: " << p.why_not;
  } else {
    line << "'" << p.schedule << "' threads=" << p.block_threads << " shared=" << p.shared_bytes
         << " whole=" << p.writes_whole_output << " cir=" << cir::hash_hex(cir::hash_kernel(*p.kernel));
  }
  return line.str();
}

std::map<std::string, int64_t> every_dim(const cir::Kernel& k, int64_t size) {
  std::map<std::string, int64_t> dims;
  for (const cir::DimParam& d : k.dims) dims[d.name] = size;
  return dims;
}

std::vector<std::string> current_plans() {
  std::vector<std::string> lines;
  for (const Case& c : kParityCases) {
    cir::Kernel generic = testing::kernel_of(testing::parity_source(c));
    if (generic.name.empty()) continue;
    CompiledCompute compiled(generic);
    std::vector<std::pair<std::string, cir::Kernel>> kernels = {{"generic", generic}};
    Random rng(42);
    for (int variant = 0; variant < 6; ++variant) {
      std::vector<Tensor> inputs = testing::parity_inputs(c, variant, rng);
      std::map<std::string, int64_t> dims;
      try {
        dims = bind_dimensions(generic, inputs, {});
      } catch (const DataError&) {
        continue;
      }
      kernels.emplace_back("v" + std::to_string(variant), compiled.specialize(dims)->kernel);
    }
    // Sizes the variants do not reach: large product tiles, long rows.
    bool wide = std::all_of(c.ranks.begin(), c.ranks.end(), [](int r) { return r <= 2; });
    int64_t size = wide ? 1000 : 40;
    kernels.emplace_back("all" + std::to_string(size), cir::specialize(generic, every_dim(generic, size)));
    if (wide) kernels.emplace_back("all2048", cir::specialize(generic, every_dim(generic, 2048)));
    for (const auto& [variant, k] : kernels)
      for (const char* arch : kArchs) lines.push_back(describe(std::string(c.name) + "/" + variant, arch, k));
  }
  // The benchmarks' kernels at benchmark sizes (flash attention's 64-row
  // blocks take more shared memory than sm_80 gives a block).
  const std::pair<const char*, const char*> bench[] = {
      {"matmul", bench::kMatmul}, {"matmul_tf32", bench::kMatmulTf32}, {"matmul_bf16", bench::kMatmulBf16},
      {"gelu_erf", bench::kGeluErf}, {"sum_of_squares", bench::kSumOfSquares}, {"gelu", bench::kGelu},
      {"copy", bench::kCopy}, {"softmax", bench::kSoftmax}, {"layer_norm", bench::kLayerNorm},
      {"attention32", bench::kAttention}, {"attention64", bench::kAttention64}, {"conv2d", bench::kConv2d},
      {"depthwise", bench::kDepthwise}, {"embedding_grad", bench::kEmbeddingGrad}, {"fused_chain", bench::kFusedChain}};
  const std::map<std::string, int64_t> bench_sizes = {{"bh", 24}, {"s", 512}, {"d", 64}, {"b", 2}, {"ic", 64}, {"oc", 64},
                                                      {"c", 64}, {"h", 28}, {"w", 28}, {"kh", 3}, {"kw", 3}, {"dim", 768}};
  for (const auto& [name, source] : bench) {
    const cir::Kernel& k = bench::kernel(source).generic();
    std::map<std::string, int64_t> dims = every_dim(k, 1024);
    for (auto& [d, v] : dims)
      if (bench_sizes.count(d)) v = bench_sizes.at(d);
    for (const char* arch : kArchs)
      lines.push_back(describe(std::string("bench.") + name, arch, cir::specialize(k, dims)));
  }
  Session session;
  for (const auto& [name, k] : testing::op_library_kernels(session)) {
    std::vector<std::pair<std::string, cir::Kernel>> kernels = {{"generic", k}, {"all96", cir::specialize(k, every_dim(k, 96))}};
    for (const auto& [variant, kk] : kernels)
      for (const char* arch : kArchs) lines.push_back(describe("stdlib." + name + "/" + variant, arch, kk));
  }
  return lines;
}

TEST(GpuPlanGolden, PlansAreTheRecordedOnes) {
  testing::expect_golden(current_plans(), kGolden, "plan");
}

}  // namespace
}  // namespace zyntax
