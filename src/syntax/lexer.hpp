#pragma once

#include <vector>

#include "support/diagnostics.hpp"
#include "syntax/token.hpp"

namespace zyntax {

// Turns one file into tokens. Errors (bad characters, unterminated strings
// or comments, malformed numbers) are reported and lexing goes on, so one run
// shows every problem. The result always ends with Tok::End.
std::vector<Token> lex(const SourceFile& file, FileId id, DiagnosticEngine& diags);

}  // namespace zyntax
