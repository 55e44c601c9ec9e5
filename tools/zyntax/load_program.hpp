// What the commands share: a program loaded and checked, its diagnostics printed.
#pragma once

#include <string>
#include <vector>

#include "driver/session.hpp"
#include "lower/check_program.hpp"

namespace zyntax::cli {

// Parses and checks; prints the diagnostics (warnings too). Null on errors.
LoadedModule* load_and_check(Session& session, const std::string& path, std::vector<CheckedKernel>* kernels);

}  // namespace zyntax::cli
