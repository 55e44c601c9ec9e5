// An estimate of the 32-bit registers one thread of a planned GPU kernel
// holds at its busiest point: the locals live there (from their definition
// to their last use), the loop variables around it, the registers its
// expression needs to be evaluated (Sethi-Ullman numbering: the larger
// operand first) and its thread-private arrays. 64-bit values take two.
// Fusion compares a fused kernel with its consumer alone against the
// target's register budget, so that a fusion that would make the kernel
// spill to local memory is not made; the estimate errs low (a compiler may
// keep fewer values live by recomputing, or more by scheduling loads early),
// and what a schedule's matrix units hold is left out on both sides.
#pragma once

#include <cstdint>

#include "cir/ir.hpp"

namespace zyntax::cir {

int64_t estimated_registers(const Kernel& k);

// The registers evaluating `e` takes, its result included.
int64_t expression_registers(const Expr& e);

}  // namespace zyntax::cir
