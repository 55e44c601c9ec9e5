#include "plan/gpu_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cir/flop_count.hpp"
#include "plan/gpu_plan.hpp"

namespace zyntax {

namespace {

// Threads a multiprocessor keeps at once (the blocks' threads of one wave).
constexpr double kThreadsPerMultiprocessor = 2048;

double waves_cost(double work, double threads_launched, int block_threads, const GpuTarget& target) {
  double blocks = std::ceil(threads_launched / block_threads);
  double resident = std::max(1.0, std::floor(kThreadsPerMultiprocessor / block_threads)) * std::max(target.multiprocessors, 1);
  double waves = std::ceil(blocks / resident);
  double per_thread = work / std::max(threads_launched, 1.0);
  return waves * per_thread * std::max(1.0, threads_launched / (blocks * block_threads) * 1.0) + blocks * 0.5;
}

}  // namespace

std::vector<TuningCandidate> gpu_tuning_space(const cir::Kernel& kernel, const GpuTarget& target) {
  std::vector<TuningCandidate> out;
  GpuPlan base;
  try {
    base = gpu_plan(kernel, target);
  } catch (const std::exception&) {
    return out;
  }
  if (!base.kernel) return out;
  double work = cir::count_operations(*base.kernel).value_or(1e6);
  const int most = std::min(kGpuBlockThreads, target.max_threads_per_block);
  std::vector<int> block_threads;
  for (int t = target.subgroup_size; t <= most; t *= 2) block_threads.push_back(t);
  // Threads launched: the element count for thread schedules; blocks x threads for the rest.
  auto launched = [&](const GpuPlan& p, int64_t most_blocks) {
    return static_cast<double>(gpu_launch_blocks(p, most_blocks)) * p.block_threads;
  };
  auto add = [&](const TuningChoice& c) {
    GpuPlan p;
    try {
      p = gpu_plan(kernel, target, c);
    } catch (const std::invalid_argument&) {
      return;
    }
    if (!p.kernel) return;
    out.push_back({c, waves_cost(work, launched(p, target.max_blocks), p.block_threads, target)});
  };
  out.push_back({{}, waves_cost(work, launched(base, target.max_blocks), base.block_threads, target)});
  switch (base.schedule) {
    case GpuSchedule::Threads:
      for (int t : block_threads)
        for (int w : {1, 2, 4}) add({{{"threads", t}, {"width", w}}});
      break;
    case GpuSchedule::Rows:
    case GpuSchedule::TileBlocks:
      for (int t : block_threads) add({{{"threads", t}}});
      break;
    case GpuSchedule::GridReduction:
      for (int t : block_threads)
        for (int64_t per : {2, 4, 8, 16, 32}) add({{{"threads", t}, {"per_thread", per}}});
      break;
    case GpuSchedule::TiledMatmul:
      for (int tiles : {1, 2}) add({{{"tiles", tiles}}});
      break;
    case GpuSchedule::WarpgroupMatmul:
      if (target.block_clusters)
        for (int cluster : {1, 2})
          if (cluster != base.cluster) add({{{"cluster", cluster}}});  // the default is the rules' own
      break;
    default:
      break;  // the matrix-unit product schedules: their tiles are their code's
  }
  rank_candidates(out);
  return out;
}

}  // namespace zyntax
