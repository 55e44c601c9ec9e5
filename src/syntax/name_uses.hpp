// How often a block's code reads or writes a name: every Name expression,
// anywhere inside (nested blocks, function bodies, compute blocks, types,
// annotations). Conservative by design: shadowing is not resolved, so a
// count of 1 means there is at most that one use.
#pragma once

#include <cstddef>
#include <string>

#include "syntax/ast.hpp"

namespace zyntax::ast {

size_t count_name_uses(const Block& b, const std::string& name);
size_t count_name_uses(const Stmt& s, const std::string& name);

}  // namespace zyntax::ast
