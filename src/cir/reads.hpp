// The names an expression reads: variables, and the buffers it accesses.
#pragma once

#include <set>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

std::set<std::string> reads(const Expr& e);
bool reads_any(const Expr& e, const std::set<std::string>& names);

}  // namespace zyntax::cir
