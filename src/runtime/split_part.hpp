// One part of a launch shared out over processes that each compute a part
// (the ranks of `@parallel(data, ranks)`, interp/ranks_launch): part `part`
// of `parts` of the split loop (split_launch.hpp), run on one device over
// only the slabs it touches (split_scatter.hpp). The parts' slabs tile the
// output's split axis in order from the first part's start, so the ranks
// gather them into the whole. A launch that does not split (a reduction;
// an output not indexed by the split loop, or read elsewhere) is computed
// whole by every part, alike.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/launch.hpp"
#include "runtime/split_launch.hpp"
#include "runtime/split_scatter.hpp"

namespace zyntax {

struct LaunchPart {
  Tensor out;         // this part's slab of the output; the whole output where slab.whole()
  Slab slab;          // where it lies in the output
  int64_t first = 0;  // where the first part's slab starts along slab.axis
  Shape whole_shape;  // the output's
};

LaunchPart launch_part(CompiledCompute& compiled, Device& device, SplitMode mode, const std::vector<Tensor>& inputs,
                       const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars, int part,
                       int parts);

}  // namespace zyntax
