// The last step of a Mean reduction: MPI sums, and each rank divides its
// result by the number of ranks.
#pragma once

#include <cstdint>

#include "support/dtype.hpp"

namespace zyntax::dist {

// Divides each of `count` elements by `ranks`: floats in double, rounded
// once to their type; integers as C++ divides (toward zero), their sum
// having wrapped in the dtype as ZynML's integer sums do. Not for bool.
void divide_by_ranks(void* data, int64_t count, DType t, int ranks);

}  // namespace zyntax::dist
