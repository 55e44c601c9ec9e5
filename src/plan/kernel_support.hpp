// What the compiled backends can run. A CPU backend and a GPU backend each
// compile scalar CIR (tile values are rewritten to loops first: plan's
// scalarize_tiles) with the statements of their kind of target; a GPU target
// also runs only what its description (target/gpu_target) offers: tensor-core
// products where it has matrix units, asynchronous copies where it has them,
// shared arrays within what a block may hold, private arrays within what a
// thread may hold. Every backend's emitter implements exactly this much,
// so a plan that passes here compiles.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax {

// Why a CPU backend cannot compile this kernel (tile values, GPU-only
// statements, arrays too large), or nothing if it can.
std::optional<std::string> cpu_unsupported_reason(const cir::Kernel& k);

// Whether a GPU target can run a kernel, and the bytes of shared memory its
// blocks hold (gpu_shared_bytes).
struct GpuSupport {
  std::optional<std::string> why_not;
  int64_t shared_bytes = 0;
  bool ok() const { return !why_not; }
};
GpuSupport gpu_support(const cir::Kernel& k, const GpuTarget& target);

// The bytes of shared arrays a GPU kernel's blocks hold (each from a
// kSharedArrayAlignment boundary, placed ones at their offsets). Up to the
// target's shared_memory_static they can be static shared memory; beyond,
// the kernel is launched with this many bytes of dynamic shared memory.
int64_t gpu_shared_bytes(const cir::Kernel& k);

}  // namespace zyntax
