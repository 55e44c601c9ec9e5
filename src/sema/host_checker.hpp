// Checks a program without running it (`zyntax check`, and before every
// run): every name resolves, calls to user functions match their parameters,
// host statements are where they belong, and every compute block lowers to
// CIR with what the host types say about its inputs (rank, dtype, static
// sizes). Errors go to the session's diagnostics.
#pragma once

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
