// The output's shape, worked out from the stores to `out`: each axis is one
// past the largest index written (interval arithmetic over the loop ranges),
// a slice `q:q + 64` over `q in 0..n step 64` covers n, and axes of a stored
// tile beyond the indexed ones are appended.
#pragma once

#include <optional>
#include <vector>

#include "cir/ir.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

std::optional<std::vector<cir::Expr>> infer_output_shape(const cir::Block& body, DiagnosticEngine& diags);

// Reports each read of `out` whole (`out + 1.0`, no indices) as a number
// where out has axes: the reference executor refuses it, and compiled code
// would read out[0, ..., 0]. False if there was one.
bool check_whole_out_reads(const cir::Block& body, size_t out_rank, DiagnosticEngine& diags);

}  // namespace zyntax
