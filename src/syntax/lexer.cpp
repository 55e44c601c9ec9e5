#include "syntax/lexer.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace zyntax {

const char* tok_name(Tok t) {
  switch (t) {
    case Tok::End: return "end of file";
    case Tok::Ident: return "identifier";
    case Tok::Int: return "integer";
    case Tok::Float: return "number";
    case Tok::String: return "string";
    case Tok::KwLet: return "'let'";
    case Tok::KwDef: return "'def'";
    case Tok::KwFn: return "'fn'";
    case Tok::KwPipeline: return "'pipeline'";
    case Tok::KwReturn: return "'return'";
    case Tok::KwIf: return "'if'";
    case Tok::KwElif: return "'elif'";
    case Tok::KwElse: return "'else'";
    case Tok::KwFor: return "'for'";
    case Tok::KwIn: return "'in'";
    case Tok::KwWhile: return "'while'";
    case Tok::KwBreak: return "'break'";
    case Tok::KwContinue: return "'continue'";
    case Tok::KwAnd: return "'and'";
    case Tok::KwOr: return "'or'";
    case Tok::KwNot: return "'not'";
    case Tok::KwTrue: return "'true'";
    case Tok::KwFalse: return "'false'";
    case Tok::KwImport: return "'import'";
    case Tok::KwAs: return "'as'";
    case Tok::KwConfig: return "'config'";
    case Tok::KwCompute: return "'compute'";
    case Tok::KwYield: return "'yield'";
    case Tok::KwAwait: return "'await'";
    case Tok::KwNone: return "'none'";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::Comma: return "','";
    case Tok::Colon: return "':'";
    case Tok::Semi: return "';'";
    case Tok::Dot: return "'.'";
    case Tok::DotDot: return "'..'";
    case Tok::Arrow: return "'->'";
    case Tok::Pipe: return "'|>'";
    case Tok::At: return "'@'";
    case Tok::Assign: return "'='";
    case Tok::PlusAssign: return "'+='";
    case Tok::MinusAssign: return "'-='";
    case Tok::StarAssign: return "'*='";
    case Tok::SlashAssign: return "'/='";
    case Tok::Plus: return "'+'";
    case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'";
    case Tok::Slash: return "'/'";
    case Tok::Percent: return "'%'";
    case Tok::StarStar: return "'**'";
    case Tok::EqEq: return "'=='";
    case Tok::NotEq: return "'!='";
    case Tok::Lt: return "'<'";
    case Tok::Le: return "'<='";
    case Tok::Gt: return "'>'";
    case Tok::Ge: return "'>='";
    case Tok::AmpAmp: return "'&&'";
    case Tok::BarBar: return "'||'";
    case Tok::Bang: return "'!'";
    case Tok::Error: return "invalid token";
  }
  return "token";
}

namespace {

struct Keyword {
  const char* text;
  Tok kind;
};

const Keyword kKeywords[] = {
    {"let", Tok::KwLet},         {"def", Tok::KwDef},       {"fn", Tok::KwFn},
    {"pipeline", Tok::KwPipeline}, {"return", Tok::KwReturn}, {"if", Tok::KwIf},
    {"elif", Tok::KwElif},       {"else", Tok::KwElse},     {"for", Tok::KwFor},
    {"in", Tok::KwIn},           {"while", Tok::KwWhile},   {"break", Tok::KwBreak},
    {"continue", Tok::KwContinue}, {"and", Tok::KwAnd},     {"or", Tok::KwOr},
    {"not", Tok::KwNot},         {"true", Tok::KwTrue},     {"false", Tok::KwFalse},
    {"import", Tok::KwImport},   {"as", Tok::KwAs},         {"config", Tok::KwConfig},
    {"compute", Tok::KwCompute}, {"yield", Tok::KwYield},   {"await", Tok::KwAwait},
    {"none", Tok::KwNone},
};

bool is_ident_start(unsigned char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
bool is_ident_char(unsigned char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(const SourceFile& file, FileId id, DiagnosticEngine& diags)
      : text_(file.text()), id_(id), diags_(diags) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    bool at_line_start = true;
    uint32_t indent = 0;
    // A tab after a space in a line's indentation: its width is a matter of
    // settings, so the line's column (and the block it belongs to) would be
    // invisible. Reported when the line turns out to hold a token.
    bool indent_has_space = false;
    std::optional<uint32_t> tab_after_space;
    if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;  // a UTF-8 byte order mark
    while (true) {
      // Whitespace, newlines and comments.
      while (pos_ < text_.size()) {
        char c = text_[pos_];
        if (c == '\n') {
          ++pos_;
          at_line_start = true;
          indent = 0;
          indent_has_space = false;
          tab_after_space.reset();
        } else if (c == ' ' || c == '\r' || c == '\f' || c == '\v') {
          if (at_line_start && c == ' ') {
            ++indent;
            indent_has_space = true;
          }
          ++pos_;
        } else if (c == '\t') {
          if (at_line_start) {
            indent = (indent / 8 + 1) * 8;
            if (indent_has_space && !tab_after_space) tab_after_space = static_cast<uint32_t>(pos_);
          }
          ++pos_;
        } else if (c == '/' && peek(1) == '/') {
          while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        } else if (c == '/' && peek(1) == '*') {
          skip_block_comment();
        } else {
          break;
        }
      }
      if (pos_ >= text_.size()) {
        Token t;
        t.kind = Tok::End;
        t.span = {id_, static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(text_.size())};
        t.line_start = true;
        out.push_back(t);
        return out;
      }
      if (at_line_start && tab_after_space) {
        diags_.error({id_, *tab_after_space, *tab_after_space + 1}, "a tab after spaces in a line's indentation")
            .with_hint("indent with spaces only: a tab's width depends on the editor, so the line's block would too");
      }
      Token t = next();
      t.line_start = at_line_start;
      t.indent = indent;
      at_line_start = false;
      out.push_back(std::move(t));
      if (diags_.saturated()) {  // junk input: stop early with End
        Token e;
        e.kind = Tok::End;
        e.span = {id_, static_cast<uint32_t>(pos_), static_cast<uint32_t>(pos_)};
        e.line_start = true;
        out.push_back(e);
        return out;
      }
    }
  }

 private:
  char peek(size_t k) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  Span span_from(size_t begin) const { return {id_, static_cast<uint32_t>(begin), static_cast<uint32_t>(pos_)}; }

  void skip_block_comment() {
    size_t begin = pos_;
    pos_ += 2;
    while (pos_ < text_.size() && !(text_[pos_] == '*' && peek(1) == '/')) ++pos_;
    if (pos_ >= text_.size()) {
      diags_.error({id_, static_cast<uint32_t>(begin), static_cast<uint32_t>(begin + 2)}, "unterminated comment")
          .with_hint("close it with '*/'");
      return;
    }
    pos_ += 2;
  }

  Token make(Tok kind, size_t begin) {
    Token t;
    t.kind = kind;
    t.span = span_from(begin);
    t.text = std::string_view(text_).substr(begin, pos_ - begin);
    return t;
  }

  Token next() {
    size_t begin = pos_;
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (is_ident_start(c)) {
      if (c >= 0x80) return lex_non_ascii(begin);
      while (pos_ < text_.size() && is_ident_char(static_cast<unsigned char>(text_[pos_])) &&
             static_cast<unsigned char>(text_[pos_]) < 0x80)
        ++pos_;
      Token t = make(Tok::Ident, begin);
      for (const Keyword& k : kKeywords)
        if (t.text == k.text) t.kind = k.kind;
      return t;
    }
    if (is_digit(c) || (c == '.' && is_digit(static_cast<unsigned char>(peek(1))))) return lex_number(begin);
    if (c == '"' || c == '\'') return lex_string(begin, static_cast<char>(c));
    ++pos_;
    auto two = [&](char second, Tok yes, Tok no) {
      if (pos_ < text_.size() && text_[pos_] == second) {
        ++pos_;
        return make(yes, begin);
      }
      return make(no, begin);
    };
    switch (c) {
      case '(': return make(Tok::LParen, begin);
      case ')': return make(Tok::RParen, begin);
      case '[': return make(Tok::LBracket, begin);
      case ']': return make(Tok::RBracket, begin);
      case '{': return make(Tok::LBrace, begin);
      case '}': return make(Tok::RBrace, begin);
      case ',': return make(Tok::Comma, begin);
      case ':': return make(Tok::Colon, begin);
      case ';': return make(Tok::Semi, begin);
      case '@': return make(Tok::At, begin);
      case '.': return two('.', Tok::DotDot, Tok::Dot);
      case '+': return two('=', Tok::PlusAssign, Tok::Plus);
      case '-':
        if (peek(0) == '>') {
          ++pos_;
          return make(Tok::Arrow, begin);
        }
        return two('=', Tok::MinusAssign, Tok::Minus);
      case '*':
        if (peek(0) == '*') {
          ++pos_;
          return make(Tok::StarStar, begin);
        }
        return two('=', Tok::StarAssign, Tok::Star);
      case '/': return two('=', Tok::SlashAssign, Tok::Slash);
      case '%': return make(Tok::Percent, begin);
      case '=': return two('=', Tok::EqEq, Tok::Assign);
      case '!': return two('=', Tok::NotEq, Tok::Bang);
      case '<': return two('=', Tok::Le, Tok::Lt);
      case '>': return two('=', Tok::Ge, Tok::Gt);
      case '&':
        if (peek(0) == '&') {
          ++pos_;
          return make(Tok::AmpAmp, begin);
        }
        break;
      case '|':
        if (peek(0) == '|') {
          ++pos_;
          return make(Tok::BarBar, begin);
        }
        if (peek(0) == '>') {
          ++pos_;
          return make(Tok::Pipe, begin);
        }
        break;
      default: break;
    }
    Token t = make(Tok::Error, begin);
    std::string shown = (c >= 0x20 && c < 0x7f) ? std::string("'") + static_cast<char>(c) + "'"
                                                 : "byte 0x" + hex(c);
    diags_.error(t.span, "unexpected character " + shown);
    return t;
  }

  static std::string hex(unsigned char c) {
    const char* d = "0123456789abcdef";
    return {d[c >> 4], d[c & 15]};
  }

  // Identifiers are ASCII; a UTF-8 character is reported once as a whole,
  // a byte that starts no valid UTF-8 sequence by its value.
  Token lex_non_ascii(size_t begin) {
    size_t n = utf8_sequence_length(text_, begin);
    pos_ = begin + (n ? n : 1);
    Token t = make(Tok::Error, begin);
    if (n == 0) {
      diags_.error(t.span, "unexpected byte 0x" + hex(static_cast<unsigned char>(text_[begin])) + " (not UTF-8 text)");
    } else {
      diags_.error(t.span, "unexpected character '" + std::string(t.text) + "'")
          .with_hint("names are made of ASCII letters, digits and '_'");
    }
    return t;
  }

  Token lex_number(size_t begin) {
    bool is_float = false, is_hex = false;
    if (text_[pos_] == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
      is_hex = true;
      pos_ += 2;
      while (pos_ < text_.size() && (std::isxdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    } else {
      while (pos_ < text_.size() && (is_digit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      // A '.' makes a float unless it starts '..' (a range) or a field/method name.
      if (pos_ < text_.size() && text_[pos_] == '.' && peek(1) != '.' &&
          !is_ident_start(static_cast<unsigned char>(peek(1)))) {
        is_float = true;
        ++pos_;
        while (pos_ < text_.size() && (is_digit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      }
      if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
        size_t save = pos_;
        ++pos_;
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
        if (pos_ < text_.size() && is_digit(static_cast<unsigned char>(text_[pos_]))) {
          is_float = true;
          while (pos_ < text_.size() && is_digit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        } else {
          pos_ = save;  // `2e` is 2 followed by the name `e`
        }
      }
    }
    Token t = make(is_float ? Tok::Float : Tok::Int, begin);
    std::string digits;
    for (char ch : t.text)
      if (ch != '_') digits += ch;
    errno = 0;
    if (is_float) {
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      char* end = nullptr;
      unsigned long long v = std::strtoull(is_hex ? digits.c_str() + 2 : digits.c_str(), &end, is_hex ? 16 : 10);
      if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX) || (is_hex && digits.size() <= 2)) {
        diags_.error(t.span, is_hex && digits.size() <= 2 ? "hexadecimal literal has no digits"
                                                          : "integer literal is too large for 64 bits");
        v = 0;
      }
      t.int_value = static_cast<int64_t>(v);
    }
    return t;
  }

  Token lex_string(size_t begin, char quote) {
    ++pos_;
    std::string value;
    while (pos_ < text_.size() && text_[pos_] != quote && text_[pos_] != '\n') {
      char c = text_[pos_++];
      if (c != '\\') {
        value += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '"': value += '"'; break;
        case '\'': value += '\''; break;
        default:
          diags_.error({id_, static_cast<uint32_t>(pos_ - 2), static_cast<uint32_t>(pos_)},
                       std::string("unknown escape sequence '\\") + e + "'");
      }
    }
    if (pos_ >= text_.size() || text_[pos_] != quote) {
      Token t = make(Tok::Error, begin);
      diags_.error({id_, static_cast<uint32_t>(begin), static_cast<uint32_t>(begin + 1)}, "unterminated string")
          .with_hint(std::string("close it with ") + quote + " on the same line");
      return t;
    }
    ++pos_;
    Token t = make(Tok::String, begin);
    t.string_value = std::move(value);
    return t;
  }

  const std::string& text_;
  FileId id_;
  DiagnosticEngine& diags_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<Token> lex(const SourceFile& file, FileId id, DiagnosticEngine& diags) {
  return Lexer(file, id, diags).run();
}

}  // namespace zyntax
