// Lowers one compute block to a CIR kernel: resolves every name (locals,
// inputs, `out`, host variables, dimensions), infers types (literals adopt
// the type of what they meet, as in `sum += A[i, k] * B[k, j]` with
// `var sum = 0.0`), binds dimensions, and works out the output's shape and
// dtype. Errors go to `diags` with the source span and, where two places are
// involved, both.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "sema/host_env.hpp"
#include "sema/kernel_annotations.hpp"
#include "support/diagnostics.hpp"
#include "syntax/ast.hpp"

namespace zyntax {

struct LoweredCompute {
  cir::Kernel kernel;
  KernelAnnotations annotations;
};

// `inputs` has one signature per compute input, in order. Returns nothing if
// an error was reported.
std::optional<LoweredCompute> lower_compute(const ast::Compute& c, const std::string& name,
                                            const std::vector<InputSignature>& inputs, const HostEnv& host,
                                            DiagnosticEngine& diags);

}  // namespace zyntax
