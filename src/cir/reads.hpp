// The names a piece of CIR reads (variables, and the buffers it accesses)
// and the names a statement writes (locals it binds or assigns, loop
// variables, buffers it stores to).
#pragma once

#include <set>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

std::set<std::string> reads(const Expr& e);
bool reads_any(const Expr& e, const std::set<std::string>& names);
std::set<std::string> reads(const Stmt& s);
std::set<std::string> writes(const Stmt& s);

}  // namespace zyntax::cir
