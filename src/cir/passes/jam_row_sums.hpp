// A parallel loop whose iterations each sum one long row (a matrix times a
// vector, `out[i] = sum over k of A[i, k] * x[k]`; a row sum) runs R of
// its iterations at once: one k loop updates R running sums, so each core
// streams R rows from memory side by side. One row at a time is a single
// stream per core, and a core's bandwidth from DRAM grows with the streams
// in flight (4096x4096 f32 times a vector on 2 Intel Xeon cores: 3.4 ms
// for one row at a time, 2.2 ms for 4 or 8 rows, oneDNN's sgemv 2.0 ms).
// Matched: `parallel for i { [parallel for j in a..a+1 {] var s = init;
// for k in lo..hi { s = s op term }; store } }` with constant bounds, at
// least kMinRowLength k steps and 2R rows; the rows that do not fill R
// stay in a second loop as they were. Each row's running sum is the one it
// was (its terms in k order, reassociated by LLVM as any running sum).
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel jam_row_sums(const Kernel& k, int rows);

}  // namespace zyntax::cir
