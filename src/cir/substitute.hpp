// Replaces names by expressions. Every Var whose name is in the map is
// replaced, also inside the shapes of node, Decl and Allocate types, so the
// result stays consistently typed. Binding names (loop variables, locals)
// are not renamed.
#pragma once

#include <map>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

using Substitution = std::map<std::string, Expr>;

Expr substitute(const Expr& e, const Substitution& s);
Type substitute(const Type& t, const Substitution& s);
Block substitute(const Block& b, const Substitution& s);
// The param types, the body and the shared-memory hint.
Kernel substitute(const Kernel& k, const Substitution& s);

}  // namespace zyntax::cir
