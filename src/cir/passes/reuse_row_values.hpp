// Computes a row value once instead of twice, keeping it in the output.
//
// Row kernels often compute the same value in two loops over a row: once to
// reduce it, once to write it (softmax's exp(x - m)). When the output row has
// the value's dtype, the first loop can store it there and the second read
// it back:
//
//   for j in 0..c:                         for j in 0..c:
//     s = s + E(j)                   →       let t = E(j)
//   ...                                      out[i, j] = t
//   for j2 in 0..c:                          s = s + t
//     out[i, j2] = f(E(j2), ...)           ...
//                                          for j2 in 0..c:
//                                            out[i, j2] = f(out[i, j2], ...)
//
// The values are the same bits, so the result is identical; what changes is
// that exp is evaluated once per element instead of twice. It applies when
// nothing between the loops touches the output or changes what E reads.
// A sum that widens each value (`s = s + f64(E(j))`, an f32 row summed in
// f64) keeps E(j) before it is widened.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel reuse_row_values(const Kernel& k);

}  // namespace zyntax::cir
