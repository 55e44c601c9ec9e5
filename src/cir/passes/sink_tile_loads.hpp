// A tile is allocated and filled where it is first read, not where the
// program names it. Flash attention as written loads the key and the value
// block together at the top of the loop over key blocks; the value block is
// read only by the last product, so until then it holds 16 KiB of shared
// memory the scores and their exponentials could use. Moved down, its life
// no longer meets theirs, and place_shared_arrays gives them the same bytes.
//
//   local V_block: [..]                      ...S, m_new, l_new, p...
//   for i, j: V_block[i, j] = V[..]     →   local V_block: [..]
//   ...S, m_new, l_new, p...                 for i, j: V_block[i, j] = V[..]
//   o = a * o + p @ V_block                  o = a * o + p @ V_block
//
// When: the fill writes only the tile, and reads nothing the statements it
// moves past write (kernel inputs, loop variables and lets; they stay in
// scope, since lets are visible to the end of their block); the statements
// it moves past do not touch the tile. Nothing else changes order.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel sink_tile_loads(const Kernel& k);

}  // namespace zyntax::cir
