// A whole program checked without running it: its host code (sema's
// checker) and each compute block lowered to CIR with what the host types
// say about its inputs, so `zyntax check` reports kernel errors (unbound
// dimensions, bad indices, missing inputs) without data, and
// `zyntax compile --emit cir` prints the kernels.
#pragma once

#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "driver/session.hpp"

namespace zyntax {

struct CheckedKernel {
  const ast::Compute* node = nullptr;
  cir::Kernel kernel;
  // Set instead of `kernel` when the block can only be lowered at run time: why.
  std::string deferred;
};

// Returns false if an error was reported. `kernels`, if given, receives the
// CIR of every compute block that lowered (for `zyntax compile --emit cir`).
bool check_program(Session& session, LoadedModule& main, std::vector<CheckedKernel>* kernels = nullptr);

}  // namespace zyntax
