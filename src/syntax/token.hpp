// Tokens of ZynML. The lexer marks the first token of every line and its
// indentation; the parser uses that for colon-and-indent blocks and ignores it
// inside brackets, so both block styles share one token stream.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/source.hpp"

namespace zyntax {

enum class Tok : uint8_t {
  End,
  Ident,
  Int,
  Float,
  String,
  // Keywords. `var`, `mut`, `shared`, `step` are contextual and arrive as Ident.
  KwLet, KwDef, KwFn, KwPipeline, KwReturn, KwIf, KwElif, KwElse, KwFor, KwIn, KwWhile,
  KwBreak, KwContinue, KwAnd, KwOr, KwNot, KwTrue, KwFalse, KwImport, KwAs, KwConfig,
  KwCompute, KwYield, KwAwait, KwNone,
  // Punctuation.
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Comma, Colon, Semi, Dot, DotDot, Arrow, Pipe, At,
  Assign, PlusAssign, MinusAssign, StarAssign, SlashAssign,
  Plus, Minus, Star, Slash, Percent, StarStar,
  EqEq, NotEq, Lt, Le, Gt, Ge, AmpAmp, BarBar, Bang,
  Error,  // a byte sequence that is no token; the lexer has reported it
};

const char* tok_name(Tok t);  // for messages: "identifier", "'('", "keyword 'let'"

struct Token {
  Tok kind = Tok::End;
  Span span;
  std::string_view text;  // points into the SourceFile's text
  bool line_start = false;  // first token on its line
  uint32_t indent = 0;      // width of the line's leading whitespace (tab = to next multiple of 8)
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;  // unescaped, for String
};

}  // namespace zyntax
