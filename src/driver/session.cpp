#include "driver/session.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/stdlib.hpp"
#include "support/bounded_read.hpp"
#include "syntax/parser.hpp"

namespace zyntax {

namespace {

// Finds every compute block and the name it is bound to (`let C = compute...`,
// also through pipes: `let n = compute(...) {...} |> sqrt()`); a block a
// function returns takes the function's name (`def softmax(x) { return
// compute(x) {...} }` is kernel `softmax`).
class KernelNamer {
 public:
  explicit KernelNamer(std::vector<std::pair<const ast::Compute*, std::string>>& out) : out_(out) {}

  void block(const ast::Block& b) {
    for (const ast::StmtPtr& s : b.stmts) stmt(*s);
  }

 private:
  void stmt(const ast::Stmt& s) {
    using ast::StmtKind;
    switch (s.kind) {
      case StmtKind::Let: {
        const auto& l = ast::as<ast::Let>(s);
        if (l.init) expr(*l.init, l.names.size() == 1 ? l.names[0] : "");
        break;
      }
      case StmtKind::Assign: {
        const auto& a = ast::as<ast::Assign>(s);
        expr(*a.value, a.target->kind == ast::ExprKind::Name ? ast::as<ast::Name>(*a.target).name : "");
        break;
      }
      case StmtKind::ExprStmt: expr(*ast::as<ast::ExprStmt>(s).expr, ""); break;
      case StmtKind::Return:
        if (ast::as<ast::Return>(s).value) expr(*ast::as<ast::Return>(s).value, function_);
        break;
      case StmtKind::If:
        expr(*ast::as<ast::If>(s).cond, "");
        block(ast::as<ast::If>(s).then_body);
        block(ast::as<ast::If>(s).else_body);
        break;
      case StmtKind::For:
        for (const ast::ForRange& r : ast::as<ast::For>(s).ranges) {
          if (r.iterable) expr(*r.iterable, "");
        }
        block(ast::as<ast::For>(s).body);
        break;
      case StmtKind::While: block(ast::as<ast::While>(s).body); break;
      case StmtKind::FuncDef: {
        std::string outer = function_;
        function_ = ast::as<ast::FuncDef>(s).name;
        block(ast::as<ast::FuncDef>(s).body);
        function_ = outer;
        break;
      }
      case StmtKind::BlockStmt: block(ast::as<ast::BlockStmt>(s).block); break;
      default: break;
    }
  }

  void expr(const ast::Expr& e, const std::string& bound) {
    using ast::ExprKind;
    switch (e.kind) {
      case ExprKind::Compute: out_.push_back({&ast::as<ast::Compute>(e), bound}); break;
      case ExprKind::Call:
        expr(*ast::as<ast::Call>(e).callee, "");
        for (const ast::Arg& a : ast::as<ast::Call>(e).args) expr(*a.value, ast::as<ast::Call>(e).piped ? bound : "");
        break;
      case ExprKind::Binary:
        expr(*ast::as<ast::Binary>(e).lhs, "");
        expr(*ast::as<ast::Binary>(e).rhs, "");
        break;
      case ExprKind::Unary: expr(*ast::as<ast::Unary>(e).operand, ""); break;
      case ExprKind::List:
        for (const ast::ExprPtr& x : ast::as<ast::List>(e).elems) expr(*x, "");
        break;
      case ExprKind::Tuple:
        for (const ast::ExprPtr& x : ast::as<ast::Tuple>(e).elems) expr(*x, "");
        break;
      case ExprKind::Record:
        for (const ast::RecordField& f : ast::as<ast::Record>(e).fields) expr(*f.value, f.name);
        break;
      case ExprKind::Await: expr(*ast::as<ast::Await>(e).value, bound); break;
      case ExprKind::Index: expr(*ast::as<ast::Index>(e).base, ""); break;
      case ExprKind::Field: expr(*ast::as<ast::Field>(e).base, ""); break;
      default: break;
    }
  }

  std::vector<std::pair<const ast::Compute*, std::string>>& out_;
  std::string function_;  // the function whose body is being walked
};

}  // namespace

LoadedModule* Session::load(const std::string& path, Span site) {
  auto it = modules_.find(path);
  if (it != modules_.end()) return it->second.get();
  if (path.rfind(kStdlibPrefix, 0) == 0) {
    auto embedded = stdlib_sources().find("stdlib/" + path.substr(std::string(kStdlibPrefix).size()));
    if (embedded != stdlib_sources().end()) return add(path, embedded->second);
  }
  std::string why;
  std::optional<std::string> text = read_regular_file(path, kMaxSourceBytes, &why);
  if (!text) {
    diags_.error(site, "cannot read '" + path + "': " + why);
    return nullptr;
  }
  return add(path, std::move(*text));
}

LoadedModule* Session::load_text(const std::string& name, std::string text) { return add(name, std::move(text)); }

LoadedModule* Session::add(const std::string& path, std::string text) {
  auto m = std::make_unique<LoadedModule>();
  m->path = path;
  m->file = sources_.add(path, std::move(text));
  m->ast = parse_file(sources_, m->file, diags_);
  name_kernels(m->ast);
  LoadedModule* p = m.get();
  modules_[path] = std::move(m);
  return p;
}

void Session::name_kernels(const ast::Module& m) {
  std::vector<std::pair<const ast::Compute*, std::string>> found;
  KernelNamer(found).block(m.body);
  for (auto& [c, bound] : found) {
    std::string base = bound.empty() ? "kernel" : bound;
    int n = ++name_counts_[base];
    kernel_names_[c] = n == 1 ? base : base + "_" + std::to_string(n);
  }
}

const std::string& Session::kernel_name(const ast::Compute* c) {
  auto it = kernel_names_.find(c);
  if (it != kernel_names_.end()) return it->second;
  return kernel_names_[c] = "kernel_" + std::to_string(kernel_names_.size() + 1);
}

std::string Session::resolve_import(const ast::Import& imp, const LoadedModule& from) const {
  std::filesystem::path rel = imp.path;
  if (!imp.quoted) rel += ".zynml";
  if (rel.is_absolute()) return rel.string();
  std::string beside = (std::filesystem::path(from.path).parent_path() / rel).lexically_normal().string();
  // `import nn`: a file next to the importer comes first, then the stdlib.
  std::error_code ec;
  if (!imp.quoted && !std::filesystem::exists(beside, ec) && stdlib_sources().count("stdlib/" + rel.string()))
    return kStdlibPrefix + rel.string();
  return beside;
}

}  // namespace zyntax
