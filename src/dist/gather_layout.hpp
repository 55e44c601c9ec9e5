// all_gather along an axis other than the first: MPI gathers the ranks'
// tensors one after another, and the host interleaves them into the
// concatenation along the axis.
#pragma once

#include <cstdint>
#include <vector>

namespace zyntax::dist {

// `blocks` holds each rank's C-order tensor in turn, rank r's with
// axis_sizes[r] along the axis; `outer` is the product of the dims before
// the axis, `inner_bytes` the bytes of one step along it.
void interleave_blocks(const unsigned char* blocks, const std::vector<int64_t>& axis_sizes, int64_t outer,
                       int64_t inner_bytes, unsigned char* out);

}  // namespace zyntax::dist
