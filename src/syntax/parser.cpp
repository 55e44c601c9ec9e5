#include "syntax/parser.hpp"

#include "support/dtype.hpp"
#include "support/stack.hpp"
#include "syntax/lexer.hpp"

namespace zyntax {

namespace {

using namespace ast;

// Stack kept free while parsing: on a thread whose stack is small (a caller
// that did not go through parse_file's deep stack) nesting stops here.
constexpr size_t kParserStackReserve = size_t{1} << 20;

// Thrown after a syntax error has been reported; the statement loop catches
// it and skips to the next statement.
struct ParseAbort {};

class Parser {
 public:
  Parser(const std::vector<Token>& toks, FileId file, DiagnosticEngine& diags)
      : toks_(toks), file_(file), diags_(diags) {}

  Module parse_module() {
    Module m;
    m.file = file_;
    m.body.span = toks_.front().span;
    while (!at(Tok::End) && !diags_.saturated()) {
      if (at(Tok::RBrace)) {
        diags_.error(tok().span, "unmatched '}'");
        advance();
        continue;
      }
      parse_statement_into(m.body.stmts);
    }
    m.body.span = Span::merge(m.body.span, toks_[pos_].span);
    return m;
  }

 private:
  // ------------------------------------------------------------ token helpers
  const Token& tok() const { return toks_[pos_]; }
  const Token& peek(size_t k = 1) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool at(Tok k) const { return tok().kind == k; }
  bool at_ident(const char* text) const { return at(Tok::Ident) && tok().text == text; }
  const Token& advance() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    advance();
    return true;
  }
  // At a line break that ends the current expression (outside brackets).
  bool at_boundary() const { return nest_ == 0 && tok().line_start; }
  Span prev_span() const { return pos_ > 0 ? toks_[pos_ - 1].span : tok().span; }
  Span span_from(Span begin) const { return Span::merge(begin, prev_span()); }

  [[noreturn]] void error_at(Span s, const std::string& msg, const std::string& hint = "") {
    if (tok().kind != Tok::Error) {  // the lexer already reported bad tokens
      Diagnostic& d = diags_.error(s, msg);
      if (!hint.empty()) d.with_hint(hint);
    }
    throw ParseAbort{};
  }
  // At a line break the error belongs just after the previous token.
  [[noreturn]] void error_here(const std::string& msg, const std::string& hint = "") {
    if (pos_ > 0 && (at(Tok::End) || at_boundary())) {
      Span p = prev_span();
      error_at({p.file, p.end, p.end + 1}, msg, hint);
    }
    error_at(tok().span, msg, hint);
  }
  std::string found() const {
    if (at(Tok::End)) return "end of file";
    if (tok().line_start && nest_ == 0 && pos_ > 0) return "end of line";
    return "'" + std::string(tok().text) + "'";
  }
  const Token& expect(Tok k, const char* what) {
    if (!at(k) || (k != Tok::RBrace && k != Tok::RParen && k != Tok::RBracket && at_boundary() && k != Tok::LBrace))
      error_here(std::string("expected ") + what + ", found " + found());
    return advance();
  }
  std::string expect_ident(const char* what) {
    if (!at(Tok::Ident) || at_boundary()) error_here(std::string("expected ") + what + ", found " + found());
    return std::string(advance().text);
  }

  // A chain `a + b + c + ...` builds a tree as deep as it is long, and every
  // later phase walks trees recursively: long chains count against the
  // nesting limit like brackets do.
  void count_link(int& links) {
    if (depth_ + ++links > kMaxParseDepth || stack_remaining() < kParserStackReserve)
      error_here("expression is too long or too deeply nested (more than " + std::to_string(kMaxParseDepth) + " levels)",
                 "split it into several statements");
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxParseDepth || stack_remaining() < kParserStackReserve) {
        --p.depth_;
        p.error_here("nesting is too deep (more than " + std::to_string(kMaxParseDepth) + " levels)",
                     "split the expression into several statements");
      }
    }
    ~DepthGuard() { --p.depth_; }
  };
  // Statement bodies and compute blocks see line breaks again.
  struct StatementMode {
    Parser& p;
    int saved;
    explicit StatementMode(Parser& parser) : p(parser), saved(parser.nest_) { p.nest_ = 0; }
    ~StatementMode() { p.nest_ = saved; }
  };
  struct Nested {
    Parser& p;
    explicit Nested(Parser& parser) : p(parser) { ++p.nest_; }
    ~Nested() { --p.nest_; }
  };

  // Skips to a point where a new statement can start.
  void synchronize() {
    int depth = 0;
    if (!at(Tok::End) && !at(Tok::RBrace)) advance();
    while (!at(Tok::End)) {
      if (depth == 0 && (tok().line_start || at(Tok::RBrace))) break;
      if (at(Tok::Semi) && depth == 0) {
        advance();
        break;
      }
      if (at(Tok::LParen) || at(Tok::LBracket) || at(Tok::LBrace)) ++depth;
      if ((at(Tok::RParen) || at(Tok::RBracket) || at(Tok::RBrace)) && depth > 0) --depth;
      advance();
    }
  }

  // ------------------------------------------------------------ statements

  // Parses one statement (and a trailing ';'), appending it. On a syntax
  // error, resynchronises.
  void parse_statement_into(std::vector<StmtPtr>& out) {
    size_t start = pos_;
    int saved_nest = nest_;
    int saved_depth = depth_;
    try {
      StmtPtr s = parse_statement();
      if (s && s->kind == StmtKind::FuncDef) take_annotations(as<FuncDef>(*s), out);
      if (s) out.push_back(std::move(s));
      end_of_statement();
    } catch (const ParseAbort&) {
      nest_ = saved_nest;
      depth_ = saved_depth;
      if (pos_ == start && !at(Tok::End)) advance();
      synchronize();
    }
  }

  // Annotations on the lines just before a function are the function's.
  static void take_annotations(FuncDef& f, std::vector<StmtPtr>& before) {
    size_t first = before.size();
    while (first > 0 && before[first - 1]->kind == StmtKind::Annotation) --first;
    for (size_t i = first; i < before.size(); ++i) f.annotations.push_back(std::move(as<AnnotationStmt>(*before[i]).annotation));
    before.erase(before.begin() + static_cast<std::ptrdiff_t>(first), before.end());
  }

  void end_of_statement() {
    if (accept(Tok::Semi)) return;
    if (at(Tok::End) || at(Tok::RBrace) || tok().line_start) return;
    error_here("expected end of statement, found " + found(),
               "put each statement on its own line or separate them with ';'");
  }

  StmtPtr parse_statement() {
    DepthGuard guard(*this);
    Span begin = tok().span;
    switch (tok().kind) {
      case Tok::KwLet: return parse_let();
      case Tok::KwIf: return parse_if();
      case Tok::KwFor: return parse_for();
      case Tok::KwWhile: return parse_while();
      case Tok::KwReturn: {
        advance();
        auto r = std::make_unique<Return>(begin);
        if (!at_statement_end()) r->value = parse_expr();
        r->span = span_from(begin);
        return r;
      }
      case Tok::KwBreak: advance(); return std::make_unique<Break>(begin);
      case Tok::KwContinue: advance(); return std::make_unique<Continue>(begin);
      case Tok::KwDef: return parse_funcdef(FuncKind::Def);
      case Tok::KwFn: return parse_funcdef(FuncKind::Fn);
      case Tok::KwPipeline: return parse_funcdef(FuncKind::Pipeline);
      case Tok::KwImport: return parse_import();
      case Tok::KwConfig:
        if (peek().kind == Tok::LBrace) return parse_config();
        break;
      case Tok::KwYield: {
        advance();
        auto y = std::make_unique<Yield>(begin);
        y->value = parse_expr();
        y->span = span_from(begin);
        return y;
      }
      case Tok::At: {
        auto a = std::make_unique<AnnotationStmt>(begin);
        a->annotation = parse_annotation();
        a->span = a->annotation.span;
        return a;
      }
      case Tok::LBrace: {
        auto b = std::make_unique<BlockStmt>(begin);
        b->block = parse_braced_block();
        b->span = span_from(begin);
        return b;
      }
      case Tok::Semi: return nullptr;  // empty statement
      case Tok::Ident:
        if (tok().text == "var" && is_var_declaration()) return parse_let();
        if (tok().text == "shared" && peek().kind == Tok::Ident && peek().text == "var" &&
            peek(2).kind == Tok::Ident)
          return parse_shared_var();
        break;
      default: break;
    }
    // An expression, maybe the target of an assignment.
    ExprPtr e = parse_expr();
    AssignOp op;
    switch (tok().kind) {
      case Tok::Assign: op = AssignOp::Set; break;
      case Tok::PlusAssign: op = AssignOp::Add; break;
      case Tok::MinusAssign: op = AssignOp::Sub; break;
      case Tok::StarAssign: op = AssignOp::Mul; break;
      case Tok::SlashAssign: op = AssignOp::Div; break;
      default: {
        auto s = std::make_unique<ExprStmt>(e->span, std::move(e));
        return s;
      }
    }
    if (at_boundary()) return std::make_unique<ExprStmt>(e->span, std::move(e));
    if (e->kind != ExprKind::Name && e->kind != ExprKind::Index && e->kind != ExprKind::Field)
      error_at(e->span, "cannot assign to this expression", "assign to a name, an element `t[i]` or a field `r.f`");
    advance();
    ExprPtr v = parse_expr();
    Span s = Span::merge(e->span, v->span);
    return std::make_unique<Assign>(s, op, std::move(e), std::move(v));
  }

  bool at_statement_end() const {
    return at(Tok::End) || at(Tok::Semi) || at(Tok::RBrace) || (tok().line_start && nest_ == 0);
  }

  // `var` declares when followed by a name and then '=' or ':' (the seed
  // writes `var var = 0.0`); otherwise it is an ordinary name (`var += d`).
  bool is_var_declaration() const {
    const Token& n = peek(1);
    if (n.kind != Tok::Ident || n.line_start) return false;
    Tok after = peek(2).kind;
    return after == Tok::Assign || after == Tok::Colon;
  }

  StmtPtr parse_let() {
    Span begin = tok().span;
    auto let = std::make_unique<Let>(begin);
    if (at(Tok::KwLet)) {
      advance();
      if (at_ident("mut") && peek().kind != Tok::Assign && peek().kind != Tok::Colon) {
        advance();
        let->is_mutable = true;
      }
    } else {  // var
      advance();
      let->is_mutable = true;
      let->is_var = true;
    }
    if (at(Tok::LParen)) {
      advance();
      let->destructure = true;
      Nested n(*this);
      do {
        if (at(Tok::RParen)) break;
        let->name_spans.push_back(tok().span);
        let->names.push_back(expect_ident("a name in the tuple pattern"));
      } while (accept(Tok::Comma));
      expect(Tok::RParen, "')'");
      if (let->names.empty()) error_at(begin, "empty tuple pattern");
    } else {
      let->name_spans.push_back(tok().span);
      let->names.push_back(expect_ident("a variable name"));
    }
    if (accept(Tok::Colon)) let->type = parse_type();
    if (accept(Tok::Assign)) {
      let->init = parse_expr();
    } else if (!let->type) {
      error_here("expected '=' after the variable name, found " + found());
    }
    let->span = span_from(begin);
    return let;
  }

  StmtPtr parse_shared_var() {
    Span begin = tok().span;
    advance();  // shared
    advance();  // var
    auto s = std::make_unique<SharedVar>(begin);
    s->name_span = tok().span;
    s->name = expect_ident("the shared array's name");
    expect(Tok::LBracket, "'[' with the array's size");
    {
      Nested n(*this);
      do {
        s->dims.push_back(parse_expr());
      } while (accept(Tok::Comma));
      expect(Tok::RBracket, "']'");
    }
    if (accept(Tok::Colon)) s->dtype = expect_ident("an element type");
    s->span = span_from(begin);
    return s;
  }

  StmtPtr parse_if() { return parse_if_chain(tok().indent); }

  // `if c ...`, then `elif c ...` / `else if c ...` / `else ...`. Those
  // continue the statement when they follow a '}' on the same line or sit at
  // the `if`'s own indentation.
  StmtPtr parse_if_chain(uint32_t header_indent) {
    Span begin = tok().span;
    advance();  // if / elif
    auto node = std::make_unique<If>(begin);
    node->cond = parse_expr();
    node->then_body = parse_block(header_indent, "if condition");
    bool continues = (at(Tok::KwElse) || at(Tok::KwElif)) && (!tok().line_start || tok().indent == header_indent);
    if (continues) {
      node->has_else = true;
      if (at(Tok::KwElif) || (peek().kind == Tok::KwIf && !peek().line_start)) {
        if (at(Tok::KwElse)) advance();
        Span eb = tok().span;
        StmtPtr nested = parse_if_chain(header_indent);
        node->else_body.span = Span::merge(eb, nested->span);
        node->else_body.stmts.push_back(std::move(nested));
      } else {
        advance();  // else
        node->else_body = parse_block(header_indent, "'else'");
      }
    }
    node->span = span_from(begin);
    return node;
  }

  StmtPtr parse_for() {
    Span begin = tok().span;
    uint32_t header_indent = tok().indent;
    advance();
    auto node = std::make_unique<For>(begin);
    do {
      ForRange r;
      r.span = tok().span;
      r.var_span = tok().span;
      r.var = expect_ident("a loop variable");
      expect(Tok::KwIn, "'in'");
      ExprPtr first = parse_expr();
      if (accept(Tok::DotDot)) {
        r.lo = std::move(first);
        r.hi = parse_expr();
        if (at_ident("step") && !at_boundary()) {
          advance();
          r.step = parse_expr();
        }
      } else {
        r.iterable = std::move(first);
      }
      r.span = span_from(r.span);
      node->ranges.push_back(std::move(r));
    } while (!at_boundary() && accept(Tok::Comma));
    node->body = parse_block(header_indent, "for header");
    node->span = span_from(begin);
    return node;
  }

  StmtPtr parse_while() {
    Span begin = tok().span;
    uint32_t header_indent = tok().indent;
    advance();
    auto node = std::make_unique<While>(begin);
    node->cond = parse_expr();
    node->body = parse_block(header_indent, "while condition");
    node->span = span_from(begin);
    return node;
  }

  StmtPtr parse_funcdef(FuncKind kind) {
    Span begin = tok().span;
    uint32_t header_indent = tok().indent;
    advance();
    auto f = std::make_unique<FuncDef>(begin, kind);
    f->name_span = tok().span;
    f->name = expect_ident("a function name");
    expect(Tok::LParen, "'(' after the function name");
    {
      Nested n(*this);
      while (!at(Tok::RParen)) {
        Param p;
        p.span = tok().span;
        p.name = expect_ident("a parameter name");
        if (accept(Tok::Colon)) p.type = parse_type();
        if (accept(Tok::Assign)) p.default_value = parse_expr();
        p.span = span_from(p.span);
        f->params.push_back(std::move(p));
        if (!accept(Tok::Comma)) break;
      }
      expect(Tok::RParen, "')' after the parameters");
    }
    if (accept(Tok::Arrow)) f->return_type = parse_type();
    f->body = parse_block(header_indent, "function header");
    f->span = span_from(begin);
    return f;
  }

  StmtPtr parse_import() {
    Span begin = tok().span;
    advance();
    auto imp = std::make_unique<Import>(begin);
    if (at(Tok::String) && !at_boundary()) {
      imp->path = advance().string_value;
      imp->quoted = true;
    } else {
      imp->path = expect_ident("a module name or a quoted path");
      while (at(Tok::Dot) && !at_boundary()) {
        advance();
        imp->path += "/" + expect_ident("a module name");
      }
    }
    if (at(Tok::KwAs) && !at_boundary()) {
      advance();
      imp->alias = expect_ident("a name after 'as'");
    }
    imp->span = span_from(begin);
    return imp;
  }

  StmtPtr parse_config() {
    Span begin = tok().span;
    advance();  // config
    auto c = std::make_unique<Config>(begin);
    advance();  // {
    Nested n(*this);  // entries may span lines; a new line or ',' separates them
    while (!at(Tok::RBrace) && !at(Tok::End)) {
      RecordField f;
      f.name_span = tok().span;
      if (!at(Tok::Ident)) error_here("expected a config key, found " + found());
      f.name = std::string(advance().text);
      if (!accept(Tok::Colon) && !accept(Tok::Assign)) error_here("expected ':' after the config key, found " + found());
      f.value = parse_expr();
      c->entries.push_back(std::move(f));
      if (!accept(Tok::Comma) && !accept(Tok::Semi) && !tok().line_start && !at(Tok::RBrace))
        error_here("expected ',' or a new line between config entries, found " + found());
    }
    expect(Tok::RBrace, "'}' closing the config block");
    c->span = span_from(begin);
    return c;
  }

  // ------------------------------------------------------------ blocks

  // After a header: `{ ... }`, or ':' and then either statements on the same
  // line or an indented block deeper than `header_indent`.
  Block parse_block(uint32_t header_indent, const char* after) {
    DepthGuard guard(*this);
    if (at(Tok::LBrace)) return parse_braced_block();
    if (!at(Tok::Colon))
      error_here(std::string("expected ':' or '{' after the ") + after + ", found " + found());
    Span colon = advance().span;
    Block b;
    b.span = colon;
    StatementMode sm(*this);
    if (!tok().line_start) {  // `for i in 0..n: out[i] = 0`
      while (!at(Tok::End) && !at(Tok::RBrace) && !tok().line_start) {
        size_t before = pos_;
        parse_statement_into(b.stmts);
        if (pos_ == before) break;
      }
      b.span = span_from(colon);
      return b;
    }
    if (at(Tok::End) || at(Tok::RBrace) || tok().indent <= header_indent) {
      error_at(colon, "expected an indented block after ':'",
               "indent the body more than the line with the ':'");
    }
    uint32_t indent = tok().indent;
    while (!at(Tok::End) && !at(Tok::RBrace) && !diags_.saturated()) {
      if (tok().line_start && tok().indent < indent) {
        // The block ends: the line must go back to the header's column (or
        // further out), never to one between it and the block's.
        if (tok().indent > header_indent)
          diags_.error(tok().span, "unindent does not match any outer indentation level")
              .with_hint("line it up with the statements of the block it belongs to (column " + std::to_string(indent + 1) +
                         " or " + std::to_string(header_indent + 1) + ")");
        break;
      }
      if (tok().line_start && tok().indent > indent) {
        diags_.error(tok().span, "unexpected indentation")
            .with_hint("statements of one block must start in the same column");
      }
      size_t before = pos_;
      parse_statement_into(b.stmts);
      if (pos_ == before) break;
    }
    b.span = span_from(colon);
    return b;
  }

  Block parse_braced_block() {
    DepthGuard guard(*this);
    Span open = tok().span;
    expect(Tok::LBrace, "'{'");
    StatementMode sm(*this);
    Block b;
    b.braced = true;
    while (!at(Tok::RBrace) && !at(Tok::End) && !diags_.saturated()) {
      size_t before = pos_;
      parse_statement_into(b.stmts);
      if (pos_ == before) advance();
    }
    if (!at(Tok::RBrace)) {
      diags_.error(open, "unclosed '{'").with_hint("add the matching '}'");
      throw ParseAbort{};
    }
    advance();
    b.span = span_from(open);
    return b;
  }

  // ------------------------------------------------------------ annotations

  // `@name`, `@name(args)`, and for @kernel a kernel type word before the args.
  Annotation parse_annotation() {
    Annotation a;
    Span begin = tok().span;
    advance();  // @
    a.name_span = tok().span;
    if (!at(Tok::Ident) || tok().span.begin != begin.end) error_here("expected an annotation name after '@'");
    a.name = std::string(advance().text);
    if (a.name == "kernel") {
      if (!at(Tok::Ident) || at_boundary())
        error_here("expected a kernel type after '@kernel'",
                   "one of elementwise, reduce(op), matmul, batched_matmul, conv2d, conv2d_depthwise, attention, "
                   "flash_attention, fused");
      a.word_span = tok().span;
      a.word = std::string(advance().text);
    }
    if (at(Tok::LParen) && !at_boundary() && (a.name != "kernel" || tok().span.begin == prev_span().end)) {
      a.has_args = true;
      advance();
      Nested n(*this);
      while (!at(Tok::RParen)) {
        a.args.push_back(parse_annotation_arg());
        if (!accept(Tok::Comma)) break;
      }
      expect(Tok::RParen, "')' closing the annotation's arguments");
    }
    a.span = span_from(begin);
    return a;
  }

  AnnotationArg parse_annotation_arg() {
    AnnotationArg arg;
    arg.span = tok().span;
    if (is_operator_argument()) {
      arg.op = std::string(advance().text);
      return arg;
    }
    if (at(Tok::Ident) && peek().kind == Tok::Assign) {
      arg.name = std::string(advance().text);
      advance();
    }
    arg.value = parse_expr();
    arg.span = span_from(arg.span);
    return arg;
  }

  // ------------------------------------------------------------ types

  std::unique_ptr<TypeExpr> parse_type() {
    DepthGuard guard(*this);
    auto t = std::make_unique<TypeExpr>();
    t->span = tok().span;
    if (at(Tok::KwNone)) {
      advance();
      t->name = "none";
      return t;
    }
    t->name = expect_ident("a type");
    if (at(Tok::LBracket) && !at_boundary()) {
      advance();
      Nested n(*this);
      if (t->name == "tensor") {
        while (!at(Tok::RBracket)) {
          t->dims.push_back(parse_expr());
          if (!accept(Tok::Comma)) break;
        }
        // A trailing element type: tensor[2, 3, f32].
        if (!t->dims.empty() && t->dims.back()->kind == ExprKind::Name) {
          const std::string& last = as<Name>(*t->dims.back()).name;
          if (parse_dtype(last)) {
            t->dtype = last;
            t->dtype_span = t->dims.back()->span;
            t->dims.pop_back();
          }
        }
      } else {
        while (!at(Tok::RBracket)) {
          t->params.push_back(parse_type());
          if (!accept(Tok::Comma)) break;
        }
      }
      expect(Tok::RBracket, "']' closing the type");
    }
    t->span = span_from(t->span);
    return t;
  }

  // ------------------------------------------------------------ expressions

  ExprPtr parse_expr() {
    DepthGuard guard(*this);
    ExprPtr lhs = parse_or();
    // `x |> f(y)` is `f(x, y)`; a pipe may start a continuation line.
    int links = 0;
    while (at(Tok::Pipe)) {
      count_link(links);
      advance();
      ExprPtr rhs = parse_or();
      std::unique_ptr<Call> call;
      if (rhs->kind == ExprKind::Call) {
        call.reset(static_cast<Call*>(rhs.release()));
      } else if (rhs->kind == ExprKind::Name || rhs->kind == ExprKind::Field) {
        Span s = rhs->span;
        call = std::make_unique<Call>(s, std::move(rhs));
      } else {
        error_at(rhs->span, "the right side of '|>' must be a function or a call", "write `x |> f(y)` for `f(x, y)`");
      }
      Arg first;
      first.value = std::move(lhs);
      call->args.insert(call->args.begin(), std::move(first));
      call->piped = true;
      call->span = Span::merge(call->args.front().value->span, call->span);
      lhs = std::move(call);
    }
    return lhs;
  }

  ExprPtr binary(BinOp op, ExprPtr a, ExprPtr b, Span op_span) {
    Span s = Span::merge(a->span, b->span);
    auto e = std::make_unique<Binary>(s, op, std::move(a), std::move(b));
    e->op_span = op_span;
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr lhs = parse_and();
    int links = 0;
    while ((at(Tok::KwOr) || at(Tok::BarBar)) && !at_boundary()) {
      count_link(links);
      Span op = advance().span;
      lhs = binary(BinOp::Or, std::move(lhs), parse_and(), op);
    }
    return lhs;
  }

  ExprPtr parse_and() {
    ExprPtr lhs = parse_not();
    int links = 0;
    while ((at(Tok::KwAnd) || at(Tok::AmpAmp)) && !at_boundary()) {
      count_link(links);
      Span op = advance().span;
      lhs = binary(BinOp::And, std::move(lhs), parse_not(), op);
    }
    return lhs;
  }

  ExprPtr parse_not() {
    if (at(Tok::KwNot) || at(Tok::Bang)) {
      DepthGuard guard(*this);
      Span begin = advance().span;
      ExprPtr x = parse_not();
      Span s = Span::merge(begin, x->span);
      return std::make_unique<Unary>(s, UnOp::Not, std::move(x));
    }
    return parse_comparison();
  }

  static bool comparison_op(Tok t, BinOp& op) {
    switch (t) {
      case Tok::EqEq: op = BinOp::Eq; return true;
      case Tok::NotEq: op = BinOp::Ne; return true;
      case Tok::Lt: op = BinOp::Lt; return true;
      case Tok::Le: op = BinOp::Le; return true;
      case Tok::Gt: op = BinOp::Gt; return true;
      case Tok::Ge: op = BinOp::Ge; return true;
      default: return false;
    }
  }

  ExprPtr parse_comparison() {
    ExprPtr lhs = parse_additive();
    BinOp op;
    if (!at_boundary() && comparison_op(tok().kind, op)) {
      Span op_span = advance().span;
      lhs = binary(op, std::move(lhs), parse_additive(), op_span);
      BinOp again;
      if (!at_boundary() && comparison_op(tok().kind, again))
        error_here("comparisons cannot be chained", "write `a < b and b < c`");
    }
    return lhs;
  }

  ExprPtr parse_additive() {
    ExprPtr lhs = parse_multiplicative();
    int links = 0;
    while ((at(Tok::Plus) || at(Tok::Minus)) && !at_boundary()) {
      count_link(links);
      BinOp op = at(Tok::Plus) ? BinOp::Add : BinOp::Sub;
      Span op_span = advance().span;
      lhs = binary(op, std::move(lhs), parse_multiplicative(), op_span);
    }
    return lhs;
  }

  ExprPtr parse_multiplicative() {
    ExprPtr lhs = parse_unary();
    int links = 0;
    while (!at_boundary()) {
      BinOp op;
      if (at(Tok::Star)) op = BinOp::Mul;
      else if (at(Tok::Slash)) op = BinOp::Div;
      else if (at(Tok::Percent)) op = BinOp::Mod;
      else if (at(Tok::At)) op = BinOp::MatMul;
      else break;
      count_link(links);
      Span op_span = advance().span;
      lhs = binary(op, std::move(lhs), parse_unary(), op_span);
    }
    return lhs;
  }

  ExprPtr parse_unary() {
    if (at(Tok::Minus) || at(Tok::Plus)) {
      DepthGuard guard(*this);
      UnOp op = at(Tok::Minus) ? UnOp::Neg : UnOp::Pos;
      Span begin = advance().span;
      ExprPtr x = parse_unary();
      Span s = Span::merge(begin, x->span);
      return std::make_unique<Unary>(s, op, std::move(x));
    }
    ExprPtr base = parse_postfix();
    if (at(Tok::StarStar) && !at_boundary()) {
      DepthGuard guard(*this);
      Span op_span = advance().span;
      return binary(BinOp::Pow, std::move(base), parse_unary(), op_span);
    }
    return base;
  }

  ExprPtr parse_postfix() {
    ExprPtr e = parse_primary();
    int links = 0;
    while (!at_boundary()) {
      if (at(Tok::LParen) || at(Tok::LBracket) || at(Tok::Dot)) count_link(links);
      if (at(Tok::LParen)) {
        DepthGuard guard(*this);
        advance();
        auto call = std::make_unique<Call>(e->span, std::move(e));
        Nested n(*this);
        while (!at(Tok::RParen)) {
          Arg a;
          if (at(Tok::Ident) && peek().kind == Tok::Assign) {
            a.name_span = tok().span;
            a.name = std::string(advance().text);
            advance();
          }
          if (is_operator_argument()) {  // reduce(+, t): the operator itself
            const Token& op = advance();
            a.value = std::make_unique<Name>(op.span, std::string(op.text));
          } else {
            a.value = parse_expr();
          }
          call->args.push_back(std::move(a));
          if (!accept(Tok::Comma)) break;
        }
        expect(Tok::RParen, "')' closing the call");
        call->span = span_from(call->span);
        e = std::move(call);
      } else if (at(Tok::LBracket)) {
        DepthGuard guard(*this);
        advance();
        auto idx = std::make_unique<Index>(e->span, std::move(e));
        Nested n(*this);
        while (!at(Tok::RBracket)) {
          idx->items.push_back(parse_index_item());
          if (!accept(Tok::Comma)) break;
        }
        expect(Tok::RBracket, "']' closing the index");
        idx->span = span_from(idx->span);
        e = std::move(idx);
      } else if (at(Tok::Dot)) {
        advance();
        Span fs = tok().span;
        std::string name;
        if (at(Tok::Int)) {  // t.0 on tuples
          name = std::string(advance().text);
        } else {
          name = expect_ident("a field name after '.'");
        }
        Span s = Span::merge(e->span, fs);
        auto f = std::make_unique<Field>(s, std::move(e), std::move(name));
        f->field_span = fs;
        e = std::move(f);
      } else {
        break;
      }
    }
    return e;
  }

  // An operator standing alone as an argument, as in `reduce(+, t)`.
  bool is_operator_argument() const {
    bool op = at(Tok::Plus) || at(Tok::Star) || at(Tok::Minus) || at(Tok::KwAnd) || at(Tok::KwOr);
    Tok next = peek().kind;
    return op && (next == Tok::Comma || next == Tok::RParen);
  }

  IndexItem parse_index_item() {
    IndexItem item;
    item.span = tok().span;
    if (at(Tok::Colon)) {
      advance();
      item.is_slice = true;
      if (!at(Tok::Comma) && !at(Tok::RBracket)) item.hi = parse_expr();
    } else {
      ExprPtr first = parse_expr();
      if (accept(Tok::Colon)) {
        item.is_slice = true;
        item.lo = std::move(first);
        if (!at(Tok::Comma) && !at(Tok::RBracket)) item.hi = parse_expr();
      } else {
        item.index = std::move(first);
      }
    }
    item.span = span_from(item.span);
    return item;
  }

  static bool is_unit(std::string_view u) {
    static const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "ns", "us", "ms", "s"};
    for (const char* k : kUnits)
      if (u == k) return true;
    return false;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    Span begin = tok().span;
    switch (tok().kind) {
      case Tok::Int: {
        const Token& t = advance();
        auto lit = std::make_unique<IntLit>(t.span, t.int_value);
        if (at(Tok::Ident) && tok().span.begin == t.span.end && is_unit(tok().text)) {
          lit->unit = std::string(advance().text);
          lit->span = span_from(begin);
        }
        return lit;
      }
      case Tok::Float: {
        const Token& t = advance();
        return std::make_unique<FloatLit>(t.span, t.float_value);
      }
      case Tok::String: {
        const Token& t = advance();
        return std::make_unique<StringLit>(t.span, t.string_value);
      }
      case Tok::KwTrue: advance(); return std::make_unique<BoolLit>(begin, true);
      case Tok::KwFalse: advance(); return std::make_unique<BoolLit>(begin, false);
      case Tok::KwNone: advance(); return std::make_unique<NoneLit>(begin);
      case Tok::Ident: {
        const Token& t = advance();
        return std::make_unique<Name>(t.span, std::string(t.text));
      }
      case Tok::LParen: {
        advance();
        Nested n(*this);
        if (accept(Tok::RParen)) return std::make_unique<Tuple>(span_from(begin));
        ExprPtr first = parse_expr();
        if (at(Tok::Comma)) {
          auto tup = std::make_unique<Tuple>(begin);
          tup->elems.push_back(std::move(first));
          while (accept(Tok::Comma)) {
            if (at(Tok::RParen)) break;
            tup->elems.push_back(parse_expr());
          }
          expect(Tok::RParen, "')' closing the tuple");
          tup->span = span_from(begin);
          return tup;
        }
        expect(Tok::RParen, "')'");
        first->span = span_from(begin);
        return first;
      }
      case Tok::LBracket: {
        advance();
        Nested n(*this);
        auto list = std::make_unique<List>(begin);
        while (!at(Tok::RBracket)) {
          list->elems.push_back(parse_expr());
          if (!accept(Tok::Comma)) break;
        }
        expect(Tok::RBracket, "']' closing the list");
        list->span = span_from(begin);
        return list;
      }
      case Tok::LBrace: {
        advance();
        Nested n(*this);
        auto rec = std::make_unique<Record>(begin);
        while (!at(Tok::RBrace)) {
          RecordField f;
          f.name_span = tok().span;
          if (at(Tok::String)) {
            f.name = advance().string_value;
          } else {
            f.name = expect_ident("a field name");
          }
          expect(Tok::Colon, "':' after the field name");
          f.value = parse_expr();
          rec->fields.push_back(std::move(f));
          if (!accept(Tok::Comma)) break;
        }
        expect(Tok::RBrace, "'}' closing the record");
        rec->span = span_from(begin);
        return rec;
      }
      case Tok::KwCompute: return parse_compute();
      case Tok::KwAwait: {
        advance();
        ExprPtr v = parse_unary();
        auto aw = std::make_unique<Await>(begin, std::move(v));
        if (at_ident("timeout") && !at_boundary()) {
          advance();
          aw->timeout = parse_unary();
          expect(Tok::KwElse, "'else' and a default value after the timeout");
          aw->fallback = parse_unary();
        }
        aw->span = span_from(begin);
        return aw;
      }
      default: break;
    }
    error_here("expected an expression, found " + found());
  }

  ExprPtr parse_compute() {
    Span begin = advance().span;  // compute
    auto c = std::make_unique<Compute>(begin);
    expect(Tok::LParen, "'(' with the compute inputs");
    {
      Nested n(*this);
      while (!at(Tok::RParen)) {
        c->inputs.push_back(parse_expr());
        if (!accept(Tok::Comma)) break;
      }
      expect(Tok::RParen, "')' closing the compute inputs");
    }
    while (at(Tok::At)) c->header.push_back(parse_annotation());
    if (!at(Tok::LBrace)) error_here("expected '{' starting the compute body, found " + found());
    c->body = std::make_unique<Block>(parse_braced_block());
    c->span = span_from(begin);
    return c;
  }

  const std::vector<Token>& toks_;
  FileId file_;
  DiagnosticEngine& diags_;
  size_t pos_ = 0;
  int nest_ = 0;
  int depth_ = 0;
};

}  // namespace

ast::Module parse(const std::vector<Token>& tokens, FileId file, DiagnosticEngine& diags) {
  return with_deep_stack([&] { return Parser(tokens, file, diags).parse_module(); });
}

ast::Module parse_file(const SourceManager& sources, FileId file, DiagnosticEngine& diags) {
  std::vector<Token> tokens = lex(sources.file(file), file, diags);
  return parse(tokens, file, diags);
}

}  // namespace zyntax
