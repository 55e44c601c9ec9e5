// Checks the invariants every pass may rely on and must preserve: names
// resolve under lexical scoping, buffers are read and written as their role
// allows, and every node is typed consistently with its operands.
#pragma once

#include <string>
#include <vector>

#include "cir/ir.hpp"

namespace zyntax::cir {

// The problems found, each naming the offending node and the statement it
// is in; empty when the kernel is well formed.
std::vector<std::string> verify(const Kernel& k);

// Throws std::logic_error listing every problem and the pass that left them.
void verify_or_throw(const Kernel& k, const std::string& after_pass);

}  // namespace zyntax::cir
