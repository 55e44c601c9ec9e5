// The parsed program. Nodes own their children; every node has a Span.
// Later phases keep side tables keyed by node pointers rather than mutating
// the tree, so the AST stays exactly what the user wrote.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/source.hpp"

namespace zyntax::ast {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;

enum class ExprKind {
  IntLit, FloatLit, StringLit, BoolLit, NoneLit,
  Name, Unary, Binary, Call, Index, Field, Tuple, List, Record, Compute, Await,
};

enum class UnOp { Neg, Pos, Not };
enum class BinOp {
  Add, Sub, Mul, Div, Mod, Pow, MatMul,
  Eq, Ne, Lt, Le, Gt, Ge, And, Or,
};
const char* binop_text(BinOp op);

struct Expr {
  ExprKind kind;
  Span span;
  explicit Expr(ExprKind k, Span s) : kind(k), span(s) {}
  virtual ~Expr() = default;
};

struct IntLit : Expr {
  int64_t value;
  // A size or duration suffix written right after the digits: "GB", "ms", ...
  std::string unit;
  IntLit(Span s, int64_t v) : Expr(ExprKind::IntLit, s), value(v) {}
};
struct FloatLit : Expr {
  double value;
  FloatLit(Span s, double v) : Expr(ExprKind::FloatLit, s), value(v) {}
};
struct StringLit : Expr {
  std::string value;
  StringLit(Span s, std::string v) : Expr(ExprKind::StringLit, s), value(std::move(v)) {}
};
struct BoolLit : Expr {
  bool value;
  BoolLit(Span s, bool v) : Expr(ExprKind::BoolLit, s), value(v) {}
};
struct NoneLit : Expr {
  explicit NoneLit(Span s) : Expr(ExprKind::NoneLit, s) {}
};
struct Name : Expr {
  std::string name;
  Name(Span s, std::string n) : Expr(ExprKind::Name, s), name(std::move(n)) {}
};
struct Unary : Expr {
  UnOp op;
  ExprPtr operand;
  Unary(Span s, UnOp o, ExprPtr x) : Expr(ExprKind::Unary, s), op(o), operand(std::move(x)) {}
};
struct Binary : Expr {
  BinOp op;
  ExprPtr lhs, rhs;
  Span op_span;
  Binary(Span s, BinOp o, ExprPtr a, ExprPtr b) : Expr(ExprKind::Binary, s), op(o), lhs(std::move(a)), rhs(std::move(b)) {}
};

struct Arg {
  std::string name;  // empty for a positional argument
  Span name_span;
  ExprPtr value;
};

// `f(a, b, axis=1)`; `x |> f(y)` parses to `f(x, y)` with `piped` set.
struct Call : Expr {
  ExprPtr callee;
  std::vector<Arg> args;
  bool piped = false;
  Call(Span s, ExprPtr c) : Expr(ExprKind::Call, s), callee(std::move(c)) {}
};

// One position inside `a[...]`: an index, a slice `lo:hi` (either side may be
// missing), or `:` alone.
struct IndexItem {
  Span span;
  bool is_slice = false;
  ExprPtr index;   // when !is_slice
  ExprPtr lo, hi;  // when is_slice; null means open
};

struct Index : Expr {
  ExprPtr base;
  std::vector<IndexItem> items;
  Index(Span s, ExprPtr b) : Expr(ExprKind::Index, s), base(std::move(b)) {}
};
struct Field : Expr {
  ExprPtr base;
  std::string field;
  Span field_span;
  Field(Span s, ExprPtr b, std::string f) : Expr(ExprKind::Field, s), base(std::move(b)), field(std::move(f)) {}
};
struct Tuple : Expr {
  std::vector<ExprPtr> elems;
  explicit Tuple(Span s) : Expr(ExprKind::Tuple, s) {}
};
struct List : Expr {
  std::vector<ExprPtr> elems;
  explicit List(Span s) : Expr(ExprKind::List, s) {}
};
struct RecordField {
  std::string name;
  Span name_span;
  ExprPtr value;
};
struct Record : Expr {
  std::vector<RecordField> fields;
  explicit Record(Span s) : Expr(ExprKind::Record, s) {}
};

// `@name` or `@name(args)`. Inside a compute body `@kernel reduce(+, axis=1)`
// keeps its bare words: `words` holds "reduce" and args hold "+" as an
// operator argument and axis=1 as a keyword argument.
struct AnnotationArg {
  std::string name;  // keyword, or empty
  Span span;
  std::string op;    // a bare operator or word such as "+", "max", "argmax"
  ExprPtr value;     // otherwise an expression
};
struct Annotation {
  std::string name;
  Span span;       // the whole annotation
  Span name_span;
  std::string word;  // @kernel's kernel type
  Span word_span;
  bool has_args = false;
  std::vector<AnnotationArg> args;
};

struct Block;

// `compute(inputs) [@device(..)] [@async] [@parallel(..)] { body }`.
struct Compute : Expr {
  std::vector<ExprPtr> inputs;
  std::vector<Annotation> header;  // annotations between ')' and '{'
  std::unique_ptr<Block> body;     // body annotations are statements in it
  Compute(Span s) : Expr(ExprKind::Compute, s) {}
};

struct Await : Expr {
  ExprPtr value;
  ExprPtr timeout;   // `await f timeout 100ms else default`
  ExprPtr fallback;
  Await(Span s, ExprPtr v) : Expr(ExprKind::Await, s), value(std::move(v)) {}
};

// ---------------------------------------------------------------- types

// `int`, `f32`, `tensor[batch, seq, hidden]`, `tensor[2, 3, f32]`,
// `list[int]`. Dims are expressions (names, integers, `3 * hidden`); a
// trailing dtype name in a tensor type is split off into `dtype`.
struct TypeExpr {
  Span span;
  std::string name;
  std::vector<ExprPtr> dims;
  std::string dtype;
  Span dtype_span;
  std::vector<std::unique_ptr<TypeExpr>> params;  // list[T], tuple[A, B]
};

// ---------------------------------------------------------------- statements

enum class StmtKind {
  Let, Assign, ExprStmt, If, For, While, Return, Break, Continue,
  FuncDef, Import, Config, Yield, SharedVar, Annotation, BlockStmt,
};

struct Stmt {
  StmtKind kind;
  Span span;
  Stmt(StmtKind k, Span s) : kind(k), span(s) {}
  virtual ~Stmt() = default;
};

struct Block {
  Span span;
  std::vector<StmtPtr> stmts;
  bool braced = false;
};

// `let x = e`, `let mut x = e`, `var x = e`, `let (a, b) = e`, `let x: T = e`.
struct Let : Stmt {
  std::vector<std::string> names;  // one, or several for tuple destructuring
  std::vector<Span> name_spans;
  bool destructure = false;
  bool is_mutable = false;  // `let mut` or `var`
  bool is_var = false;      // spelled `var`
  std::unique_ptr<TypeExpr> type;
  ExprPtr init;  // may be null for `var x: f32`
  explicit Let(Span s) : Stmt(StmtKind::Let, s) {}
};

enum class AssignOp { Set, Add, Sub, Mul, Div };
struct Assign : Stmt {
  AssignOp op;
  ExprPtr target;
  ExprPtr value;
  Assign(Span s, AssignOp o, ExprPtr t, ExprPtr v) : Stmt(StmtKind::Assign, s), op(o), target(std::move(t)), value(std::move(v)) {}
};
struct ExprStmt : Stmt {
  ExprPtr expr;
  ExprStmt(Span s, ExprPtr e) : Stmt(StmtKind::ExprStmt, s), expr(std::move(e)) {}
};
struct If : Stmt {
  ExprPtr cond;
  Block then_body;
  Block else_body;  // empty when absent; `elif` nests an If here
  bool has_else = false;
  explicit If(Span s) : Stmt(StmtKind::If, s) {}
};

// One `name in lo..hi [step k]` or `name in expr` of a for header.
struct ForRange {
  std::string var;
  Span var_span;
  Span span;
  ExprPtr lo, hi, step;  // a range when hi is set
  ExprPtr iterable;      // otherwise an expression to iterate
};
// `for i in 0..a, j in 0..b:` nests the ranges left to right.
struct For : Stmt {
  std::vector<ForRange> ranges;
  Block body;
  explicit For(Span s) : Stmt(StmtKind::For, s) {}
};
struct While : Stmt {
  ExprPtr cond;
  Block body;
  explicit While(Span s) : Stmt(StmtKind::While, s) {}
};
struct Return : Stmt {
  ExprPtr value;
  explicit Return(Span s) : Stmt(StmtKind::Return, s) {}
};
struct Break : Stmt {
  explicit Break(Span s) : Stmt(StmtKind::Break, s) {}
};
struct Continue : Stmt {
  explicit Continue(Span s) : Stmt(StmtKind::Continue, s) {}
};

struct Param {
  std::string name;
  Span span;
  std::unique_ptr<TypeExpr> type;
  ExprPtr default_value;
};
enum class FuncKind { Def, Fn, Pipeline };
struct FuncDef : Stmt {
  FuncKind func_kind;
  std::string name;
  Span name_span;
  std::vector<Param> params;
  std::unique_ptr<TypeExpr> return_type;
  Block body;
  // `@critical_path`, `@no_allocation`, ... written on the lines before it
  // (sema/function_annotations reads them).
  std::vector<Annotation> annotations;
  FuncDef(Span s, FuncKind k) : Stmt(StmtKind::FuncDef, s), func_kind(k) {}
};

// `import "path/to/file.zynml" [as name]` or `import name [as alias]`.
struct Import : Stmt {
  std::string path;  // as written
  bool quoted = false;
  std::string alias;  // the name it is bound to
  explicit Import(Span s) : Stmt(StmtKind::Import, s) {}
};
struct Config : Stmt {
  std::vector<RecordField> entries;
  explicit Config(Span s) : Stmt(StmtKind::Config, s) {}
};
// `yield e` or `yield (value, index)`.
struct Yield : Stmt {
  ExprPtr value;
  explicit Yield(Span s) : Stmt(StmtKind::Yield, s) {}
};
// `shared var up[n]` (optionally `: f16`).
struct SharedVar : Stmt {
  std::string name;
  Span name_span;
  std::vector<ExprPtr> dims;
  std::string dtype;
  explicit SharedVar(Span s) : Stmt(StmtKind::SharedVar, s) {}
};
struct AnnotationStmt : Stmt {
  Annotation annotation;
  explicit AnnotationStmt(Span s) : Stmt(StmtKind::Annotation, s) {}
};
struct BlockStmt : Stmt {
  Block block;
  explicit BlockStmt(Span s) : Stmt(StmtKind::BlockStmt, s) {}
};

struct Module {
  FileId file = kNoFile;
  Block body;
};

// Checked downcasts: `as<Call>(e)` asserts the kind matches.
template <class T>
T& as(Expr& e) { return static_cast<T&>(e); }
template <class T>
const T& as(const Expr& e) { return static_cast<const T&>(e); }
template <class T>
T& as(Stmt& s) { return static_cast<T&>(s); }
template <class T>
const T& as(const Stmt& s) { return static_cast<const T&>(s); }

// A path of names and fields (`w`, `weights.qkv_proj`) as text, or "" if
// the expression is not such a path.
std::string path_text(const Expr& e);

}  // namespace zyntax::ast
