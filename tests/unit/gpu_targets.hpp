// GPU targets for tests: NVIDIA architectures as `--arch` names them, and
// the target most schedule tests are written against.
#pragma once

#include <optional>
#include <string>

#include "codegen/llvm/nvptx/nvptx_target.hpp"
#include "plan/gpu_plan.hpp"

namespace zyntax::testing {

// What `zyntax compile --arch NAME` plans for.
inline GpuTarget nvidia_target(const std::string& arch) { return codegen::nvptx_gpu_target(*codegen::parse_nvptx_arch(arch)); }

// sm_80's features with 48 KiB of shared memory per block (so that no
// schedule needs dynamic shared memory) and 132 multiprocessors (an H100's:
// products of fewer 128x128 tiles take 64x64 ones).
inline GpuTarget test_gpu_target() {
  GpuTarget t = nvidia_target("sm_80");
  t.shared_memory_max = t.shared_memory_static;
  t.multiprocessors = 132;
  return t;
}

// The same with `multiprocessors` (a product takes 128x128 tiles from that many on).
inline GpuTarget test_gpu_target(int multiprocessors) {
  GpuTarget t = test_gpu_target();
  t.multiprocessors = multiprocessors;
  return t;
}

struct PlannedForArch {
  std::optional<cir::Kernel> kernel;
  std::string why_not, schedule;
  int block_threads = 0;
  int64_t shared_bytes = 0;
  bool writes_whole_output = false;
};

// A kernel's GPU plan for an NVIDIA architecture named as `--arch` takes it.
inline PlannedForArch plan_for_arch(const cir::Kernel& k, const std::string& arch) {
  GpuPlan p = gpu_plan(k, nvidia_target(arch));
  return {p.kernel, p.why_not, gpu_schedule_name(p.schedule), p.block_threads, p.shared_bytes, p.writes_whole_output};
}

}  // namespace zyntax::testing
