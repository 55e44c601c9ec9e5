// The textual form of CIR. It is stable: tests compare it and the kernel
// cache hashes it, so any change to it invalidates cached kernels.
//
// Expressions print infix with the fewest parentheses that keep the tree
// unambiguous; statements print one per line with two spaces of indentation
// per level, each line ending in a newline.
#pragma once

#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

std::string print(const Expr& e);
std::string print(const Type& t);
std::string print(const Stmt& s, int indent = 0);
std::string print(const Block& b, int indent = 0);
std::string print(const Kernel& k);

}  // namespace zyntax::cir
