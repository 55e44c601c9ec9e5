// Rewrites the tile values of a specialised kernel into loops over scalars
// and local arrays, for backends that compile scalar code:
//
//   let S = Q_block @ transpose(K_block) / d      // a tile
//
// becomes the extents of S as lets, a local array of S's largest size, and a
// loop nest that computes each element (a matmul with an accumulator,
// element-wise operations and broadcasting by index arithmetic). Results are
// the reference executor's: the same order of accumulation, f64 sums for
// float reductions, NaN-first arg reductions (products as dot products
// round each term once instead of twice: see ProductOrder).
//
// Where the rewrite could not keep the reference's behaviour (a shape
// mismatch or an empty reduction that would be an error there, a tile whose
// size has no bound, a tile operation whose evaluation depends on `and`/`or`
// short-circuiting) it gives up and says why; the kernel then runs as it is.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

// How a matrix product's elements are computed. RowsOfProducts: row by row
// in i-k-j order, the j loop over contiguous memory (a CPU vectorizes it;
// a transposed right factor, attention's K^T, is copied the right way
// round first).
// DotProducts: each element its own dot product, i-j-k with a scalar
// accumulator, so the (i, j) iterations are independent (the threads of a
// GPU block share them out), f32 and f64 terms added as fused
// multiply-adds. Both sum in k order from zero.
enum class ProductOrder { RowsOfProducts, DotProducts };

// The rewritten kernel, or nothing with the reason in `why`.
std::optional<Kernel> scalarize_tiles(const Kernel& k, std::string* why, ProductOrder order = ProductOrder::RowsOfProducts);

// True if the kernel has tile values (so scalarize_tiles has work to do).
bool has_tiles(const Kernel& k);

}  // namespace zyntax::cir
