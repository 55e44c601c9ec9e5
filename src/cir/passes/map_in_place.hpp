// An element-wise map written over the tile it maps, where nothing reads
// that tile afterwards. Flash attention's `p = exp(S - m_new)`: S is read
// for the row maxima, then only by this map, so p can take S's elements
// rather than an array of its own; on the GPU that is the 16 KiB of shared
// memory that keeps a third 64-row block off a multiprocessor.
//
//   local S: [n0, n1]                  local S: [n0, n1]
//   ... S written, read ...            ... S written, read ...
//   local p: [m0, m1]           →
//   for i, j: p[i, j] = f(S[i, j])     for i, j: S[i, j] = f(S[i, j])
//   ... reads p ...                    ... reads S ...
//
// When: S and p are local arrays of the block, of one dtype, with extents
// equal wherever they are seen (by the block's lets, or at every
// iteration of the loops around: equal_everywhere); the map runs over
// them, reads S only at its own element and reads nothing of p; nothing
// after the map reads S. Each element is read and then written by one
// iteration (on the GPU, one thread), so every element gets the value it
// had.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel map_in_place(const Kernel& k);

}  // namespace zyntax::cir
