// Marks the outer loops of a kernel whose iterations are independent as
// Parallel, so backends may spread them over cores or GPU blocks: each
// iteration writes its own elements of `out` and reads no others (or yields
// to its own output element), and carries no local state into the next.
//
// A top-level loop whose iterations only update `out` at indices that
// depend on the iteration (`out[ids[i], j] += x[i, j]`, `out[b] =
// max(out[b], v)`) is parallel too: its updates become atomic (+, min,
// max), so iterations meeting at one element add in some order (float
// sums differ from the serial order by rounding only).
#pragma once

#include "cir/ir.hpp"

namespace zyntax {

void mark_parallel_loops(cir::Kernel& k);

}  // namespace zyntax
