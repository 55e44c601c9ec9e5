// Checks a program's host code without running it (`zyntax check`, and
// before every run): every name resolves, calls to user functions match
// their parameters, host statements are where they belong, and every
// compute block is handed, with what the host types say about its inputs
// (rank, dtype, static sizes), to a ComputeBlockChecker, which lowers it
// (lower/check_program). Errors go to the session's diagnostics.
#pragma once

#include <optional>
#include <vector>

#include "driver/session.hpp"
#include "sema/host_env.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

// What the host code sees of a compute block's result.
struct CheckedBlock {
  int rank = 0;
  DType dtype = DType::F32;
  bool is_async = false;  // @async: the block's value is a future
};

class ComputeBlockChecker {
 public:
  virtual ~ComputeBlockChecker() = default;
  // Checks one block with its inputs' signatures and the host names around
  // it; nothing where it reported an error or where its result is known
  // only when it runs.
  virtual std::optional<CheckedBlock> check(const ast::Compute& c, std::vector<InputSignature> inputs, const HostEnv& host,
                                            DiagnosticEngine& diags) = 0;
};

// Returns false if an error was reported.
bool check_host_program(Session& session, LoadedModule& main, ComputeBlockChecker& blocks);

}  // namespace zyntax
