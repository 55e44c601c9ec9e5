#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/launch.hpp"
#include "runtime/split_launch.hpp"
#include "runtime/split_part.hpp"

namespace zyntax {

// The launch of `@parallel(data|model, ranks)`: this rank's part on
// `device`, gathered with every other rank's into the whole result
// (interp/ranks_launch.cpp). Errors of the collective are DataErrors.
Tensor launch_over_ranks(CompiledCompute& compiled, Device& device, SplitMode mode, const std::vector<Tensor>& inputs,
                         const std::map<std::string, int64_t>& host_dims, const std::map<std::string, Scalar>& scalars);

}  // namespace zyntax
