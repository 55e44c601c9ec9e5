// Whether a kernel certainly writes every element of its output, so the
// output needs no zero-filling (and may reuse a block holding old data).
//
// Proven syntactically, conservatively: the body holds, at its top level, a
// loop over the output's first axis from 0 to its extent in steps of 1,
// whose body holds at its top level such a loop over the second axis, and so
// on; the innermost holds, at its top level (not under an `if`), a store to
// the output at exactly those loop variables. Element-wise kernels, matrix
// products and row kernels (softmax, layer norm) are of this form. A kernel
// that reads its output anywhere (`out[i] += x[i]`, atomic updates) needs
// it zeroed whatever it writes.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

bool writes_whole_output(const Kernel& k);

}  // namespace zyntax::cir
