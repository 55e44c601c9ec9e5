#pragma once

#include <vector>

#include "support/diagnostics.hpp"
#include "syntax/ast.hpp"
#include "syntax/token.hpp"

namespace zyntax {

// Parses one file. Blocks are either `:` followed by an indented body (or a
// statement on the same line) or `{ ... }`; the two styles mix freely.
// Syntax errors are reported and the parser resynchronises at the next
// statement, so one run shows every error. Nesting deeper than
// kMaxParseDepth, or than the stack allows, is an error, never a stack
// overflow. Parsing runs on a deep stack (support/stack.hpp).
ast::Module parse(const std::vector<Token>& tokens, FileId file, DiagnosticEngine& diags);

// Lexes and parses.
ast::Module parse_file(const SourceManager& sources, FileId file, DiagnosticEngine& diags);

// Deep enough for long generated expressions (a sum of thousands of terms);
// every later phase is tested at this depth on a deep stack.
constexpr int kMaxParseDepth = 10000;

}  // namespace zyntax
