// A tile product's element-wise epilogue computed in the product's own
// store. scalarize_tiles writes `S = Q @ transpose(K) / c` as a nest of dot
// products into a temporary and a second nest that maps it:
//
//   local mm: [n0, n1]                     local S: [n0, n1]
//   for i in 0..n0, j in 0..n1:            for i in 0..n0, j in 0..n1:
//     var acc = 0; for k: acc += ...   →     var acc = 0; for k: acc += ...
//     mm[i, j] = acc                         S[i, j] = acc / c
//   let S%n0 = n0 ...; local S: [..]
//   for i2 in 0..S%n0, j2 in 0..S%n1:
//     S[i2, j2] = mm[i2, j2] / c
//
// when the map runs over the product's rows and columns (extents equal by
// the block's lets, or at every iteration of the loops around:
// equal_everywhere), reads the product only at its own element (a
// broadcast index `select(n == 1, 0, i)` of a loop over 0..n is that
// element too, as are broadcasts of it), and nothing after it reads the
// temporary. A map may store into an array the product reads (`o = a * o
// + P V`, then its copy back into o) where the product reads only the
// element it writes: each element is then read before it is written, by
// the thread that writes it. The statements between (the map's lets, allocation and
// checks) read nothing of the temporary and move before the product. On
// the GPU that is a loop nest, a barrier and a tile of shared memory fewer
// per product; each element gets the same value as before.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel fuse_product_epilogues(const Kernel& k);

}  // namespace zyntax::cir
