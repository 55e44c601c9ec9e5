// Work a nest over a tile repeats for every column, computed once per row,
// for schedule_gpu_tiles. In a nest over rows and columns (flash attention's
// rescaled output, `o = exp(m - m_new) * o + P V`), a costly subexpression
// that reads the row variable but nothing that changes along the row (the
// column variable, what the row's body declares, what the nest stores) is
// the same for every column; shared out over the threads, a warp would
// compute it 32 times over. It is computed once per row into a shared
// column instead, which the nest reads:
//
//   for i in 0..rows:                          shared r: [R]
//     for j in 0..cols:                  →     for i in 0..rows: r[i] = exp(m[i, 0] - m_new[i, 0])
//       o[i, j] = exp(m[i, 0] - m_new[i, 0])   (barrier)
//                 * o[i, j] + ...              for i in 0..rows: for j in 0..cols: o[i, j] = r[i] * o[i, j] + ...
//
// Costly: a math function other than the cheap ones (abs, min, max, fma,
// rounding). Each distinct such subexpression gets its column. The values
// are the same as computed in place: nothing reorders.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "cir/ir.hpp"
#include "cir/passes/gpu_loops.hpp"

namespace zyntax::cir {

struct RowInvariants {
  Block columns;  // the shared columns' allocations
  Block fills;    // a nest per column that fills it (to be shared out, then a barrier)
  Stmt nest;      // the nest, reading the columns
};

// `nest`: a serial loop from 0 with step 1 around one serial loop (whose
// bounds do not read the row); `changing`: the arrays it stores to and the
// vars it assigns; `most_rows`: its most rows. Nothing where no
// subexpression qualifies.
std::optional<RowInvariants> hoist_row_invariants(const For& nest, const std::set<std::string>& changing, int64_t most_rows, FreshNames& fresh);

}  // namespace zyntax::cir
