// A GPU's tuning space: the choices gpu_plan takes as knobs of a
// TuningChoice (support/tuning_choice), and a cost model that ranks them.
//
//   threads     threads per block of the thread, row, tile-block and grid
//               reduction schedules (whole subgroups, at most kGpuBlockThreads)
//   width       elements per thread of element-wise code (at most a vector's)
//   per_thread  a grid reduction's iterations per thread
//   tiles       the tiled f32 product's tiles: 1 small (64x64), 2 large (128x128)
//   cluster     a warpgroup product's blocks per cluster: 1, or 2 (pairs of
//               blocks side by side in a column, each column tile of B
//               copied once for both; where the target has block clusters)
//
// The matrix-unit product schedules (tensor-core, warpgroup) keep their
// tiles: their shapes are fixed by what their code is written for.
// The cost model counts waves: the blocks a kernel launches over the blocks
// the GPU holds at once (multiprocessors x threads per multiprocessor /
// threads per block), each wave as long as a thread's share of work, plus
// a block's start. It only orders candidates; timing decides.
#pragma once

#include <vector>

#include "cir/ir.hpp"
#include "support/tuning_choice.hpp"
#include "target/gpu_target.hpp"

namespace zyntax {

// The candidates for `kernel` (specialised) on `target`: the default first,
// the rest by cost. Just the default where the schedule has nothing to choose.
std::vector<TuningCandidate> gpu_tuning_space(const cir::Kernel& kernel, const GpuTarget& target);

}  // namespace zyntax
