// The data movement of each collective as non-blocking MPI calls carrying
// at most CommState::max_chunk elements each (MPI counts are int). Every
// rank must post the same calls in the same order, so the chunks depend only
// on what all ranks agreed on (the counts of every rank), never on local
// state. All under CommState::mu; the caller keeps the buffers alive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dist/comm_state.hpp"
#include "dist/reduce_op.hpp"
#include "support/dtype.hpp"

namespace zyntax::dist {

Pending post_broadcast(CommState& s, void* data, int64_t count, DType t, int root, const std::string& op);

// In place. For Mean this is the sum: the caller divides once it is done.
Pending post_all_reduce(CommState& s, void* data, int64_t count, DType t, ReduceOp reduce, const std::string& op);

// Rank r's block of counts[r] elements lands in `out` after the blocks of
// ranks before it; `mine` is this rank's block.
Pending post_all_gather(CommState& s, const void* mine, const std::vector<int64_t>& counts, DType t, void* out,
                        const std::string& op);

// `in` holds every rank's segment in rank order (counts[r] elements for
// rank r); this rank's segment of the reduction lands in `out`.
Pending post_reduce_scatter(CommState& s, const void* in, const std::vector<int64_t>& counts, DType t,
                            ReduceOp reduce, void* out, const std::string& op);

}  // namespace zyntax::dist
