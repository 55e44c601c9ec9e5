// One kernel on several devices at once: `@device([...]) @parallel(data)`
// shares out the iterations of the outermost parallel loop; `@parallel(model)`
// those of the parallel loop over the output's last axis (the weights'
// output dimension: the columns of a matrix product). The result is always
// exactly the single-device result:
// - devices that write into host memory (the CPU devices) each run a share
//   of the outer parallel loop of the kernel as they compile it, into one
//   output, as their own threads do: every element is computed as one device
//   alone computes it, whatever the schedule's blocking;
// - other devices (the reference executor; GPUs) run the CIR kernel
//   restricted to their range of the split loop, given only the slabs of
//   the inputs that range reads at the loop's index and writing only its
//   slab of the output (split_scatter.hpp); the slabs are gathered.
// A kernel that neither way can share (a reduction; atomic updates, on
// devices with outputs of their own; an output not indexed by the split
// loop directly, or read elsewhere) runs whole on the first device.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"

namespace zyntax {

enum class SplitMode { Data, Model };

struct SplitPlan {
  std::string var;   // the loop shared out
  int axis = 0;      // the output axis it indexes
  int64_t lo = 0, step = 1, trips = 0;
};

// A specialised kernel's output shape (its sizes are constants).
Shape specialized_output_shape(const cir::Kernel& k);

// How a specialised kernel splits, or nothing when it cannot.
std::optional<SplitPlan> plan_split(const cir::Kernel& k, SplitMode mode);

// Runs the launch split over `devices` (concurrently); `how`, if given, says
// how it ran ("split 2 ways along i" or why it did not).
Tensor launch_split(CompiledCompute& compiled, const std::vector<Device*>& devices, SplitMode mode,
                    const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& host_dims,
                    const std::map<std::string, Scalar>& scalars, std::string* how = nullptr);

}  // namespace zyntax
