// Runs CIR passes in order, verifying the kernel after each one, and, when a
// log is set (`zyntax compile --print-passes`), printing it after each one,
// as a lowering log.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "cir/ir.hpp"

namespace zyntax::cir {

struct Pass {
  std::string name;
  std::function<Kernel(const Kernel&)> run;
};

// `first` names what produced `k` (verified and logged before the passes run).
Kernel run_passes(Kernel k, const std::string& first, const std::vector<Pass>& passes);

// Where the CIR is printed after every pass; null (the default) prints nothing.
void set_pass_log(std::ostream* log);

}  // namespace zyntax::cir
