// The host language's built-in functions, by name: what the checker
// resolves a call to (and offers in "did you mean" hints). The interpreter
// implements each of them (interp/builtins), and checks when it builds its
// table that it implements exactly these.
#pragma once

#include <string>
#include <vector>

namespace zyntax {

bool is_builtin(const std::string& name);
// Every builtin name, sorted.
const std::vector<std::string>& builtin_names();

}  // namespace zyntax
