// The data movement of each collective as non-blocking MPI calls carrying
// at most CommState::max_chunk elements each (MPI counts are int). Every
// rank must post the same calls in the same order, so the chunks depend only
// on what all ranks agreed on (the counts of every rank), never on local
// state. Each adds its requests to `p`, which the caller fills first with
// what keeps the buffers alive. All under CommState::mu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dist/comm_state.hpp"
#include "dist/reduce_op.hpp"
#include "support/dtype.hpp"

namespace zyntax::dist {

void post_broadcast(CommState& s, Pending& p, void* data, int64_t count, DType t, int root, const std::string& op);

// In place. For Mean this is the sum: the caller divides once it is done.
void post_all_reduce(CommState& s, Pending& p, void* data, int64_t count, DType t, ReduceOp reduce,
                     const std::string& op);

// Rank r's block of counts[r] elements lands in `out` after the blocks of
// ranks before it; `mine` is this rank's block.
void post_all_gather(CommState& s, Pending& p, const void* mine, const std::vector<int64_t>& counts, DType t, void* out,
                     const std::string& op);

// `in` holds every rank's segment in rank order (counts[r] elements for
// rank r); this rank's segment of the reduction lands in `out`.
void post_reduce_scatter(CommState& s, Pending& p, const void* in, const std::vector<int64_t>& counts, DType t,
                         ReduceOp reduce, void* out, const std::string& op);

}  // namespace zyntax::dist
