// Which kernels a run of blocks launches, in order: each block whose
// result is wanted (the roots) with what it reads of earlier blocks inlined
// (block_fusion's inline_producers); an earlier block it cannot take in is
// planned first, on its own or with what it reads, and read as a tensor.
// Used by the interpreter, with the blocks it deferred (each lowered for
// the inputs at hand), and by `zyntax compile --emit cir`, with runs of
// blocks as the checker lowered them (interp/fusion_chains).
#pragma once

#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::fusion {

struct RunBlock {
  const cir::Kernel* kernel = nullptr;  // inputs naming earlier blocks of the run read their results
  std::string name;                     // the name the block's result is bound to
  int line = 0;                         // where it is, for explanations
  bool standalone = false;              // names its device: launched as written
  std::string label;                    // what explanations and fused kernels call it; empty: its name
  const std::string& shown() const { return label.empty() ? name : label; }
};

struct PlannedKernel {
  cir::Kernel kernel;           // fused (named by its blocks, `a+b+c`), or the block's own
  std::vector<size_t> blocks;   // the blocks it computes, in order
  size_t result = 0;            // the block whose result it gives
  bool fused() const { return blocks.size() > 1; }
};

struct RunPlan {
  std::vector<PlannedKernel> launches;  // in order: each reads the results of those before it
  std::vector<std::string> explanations;  // "the blocks at lines 2, 7 run as one kernel, a+b", "not fused: ..."
};

// `target`: the GPU the kernels run on, whose limits fused kernels keep
// (none on CPUs, the reference executor, and for listings). `roots`: the
// blocks whose results are wanted, in increasing order; by default the last.
RunPlan plan_run(const std::vector<RunBlock>& blocks, const GpuTarget* target = nullptr);
RunPlan plan_run(const std::vector<RunBlock>& blocks, const std::vector<size_t>& roots, const GpuTarget* target = nullptr);

}  // namespace zyntax::fusion
