// Marks the outer loops of a kernel whose iterations are independent as
// Parallel, so backends may spread them over cores or GPU blocks: each
// iteration writes its own elements of `out` (or yields to its own output
// element) and carries no local state into the next.
#pragma once

#include "cir/ir.hpp"

namespace zyntax {

void mark_parallel_loops(cir::Kernel& k);

}  // namespace zyntax
