#pragma once

#include <string>

#include "syntax/ast.hpp"

namespace zyntax {

// A stable, indented s-expression text of the tree (`zyntax compile --emit ast`).
std::string print_ast(const ast::Module& m);
std::string print_expr(const ast::Expr& e);

}  // namespace zyntax
