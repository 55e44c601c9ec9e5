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
// The names a statement binds inside itself: loop variables, lets, vars,
// allocations (a subset of writes()).
std::set<std::string> binds(const Stmt& s);
// The names whose values may change while a kernel runs: its vars, its
// arrays and its output. (Loop variables, lets and inputs do not.)
std::set<std::string> mutable_names(const Kernel& k);

}  // namespace zyntax::cir
