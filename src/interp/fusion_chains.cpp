#include "interp/fusion_chains.hpp"

#include <set>
#include <vector>

#include "support/scalar.hpp"
#include "syntax/name_uses.hpp"

namespace zyntax {

namespace {

bool is_path(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Name) return true;
  return e.kind == ast::ExprKind::Field && is_path(*ast::as<ast::Field>(e).base);
}

// Names, literals, operators, attributes, indexing and quiet builtins; the
// names of the functions it calls added to `calls`.
bool quiet_expr(const ast::ExprPtr& p, std::vector<std::string>& calls) {
  if (!p) return true;
  const ast::Expr& e = *p;
  auto all = [&](const std::vector<ast::ExprPtr>& xs) {
    bool quiet = true;
    for (const ast::ExprPtr& x : xs) quiet = quiet_expr(x, calls) && quiet;
    return quiet;
  };
  switch (e.kind) {
    case ast::ExprKind::IntLit:
    case ast::ExprKind::FloatLit:
    case ast::ExprKind::StringLit:
    case ast::ExprKind::BoolLit:
    case ast::ExprKind::NoneLit:
    case ast::ExprKind::Name: return true;
    case ast::ExprKind::Unary: return quiet_expr(ast::as<ast::Unary>(e).operand, calls);
    case ast::ExprKind::Binary: return quiet_expr(ast::as<ast::Binary>(e).lhs, calls) && quiet_expr(ast::as<ast::Binary>(e).rhs, calls);
    case ast::ExprKind::Field: return quiet_expr(ast::as<ast::Field>(e).base, calls);
    case ast::ExprKind::Index: {
      const auto& x = ast::as<ast::Index>(e);
      bool quiet = quiet_expr(x.base, calls);
      for (const ast::IndexItem& i : x.items) quiet = quiet_expr(i.index, calls) && quiet_expr(i.lo, calls) && quiet_expr(i.hi, calls) && quiet;
      return quiet;
    }
    case ast::ExprKind::Tuple: return all(ast::as<ast::Tuple>(e).elems);
    case ast::ExprKind::List: return all(ast::as<ast::List>(e).elems);
    case ast::ExprKind::Call: {
      const auto& c = ast::as<ast::Call>(e);
      if (c.callee->kind != ast::ExprKind::Name || !is_quiet_builtin(ast::as<ast::Name>(*c.callee).name)) return false;
      calls.push_back(ast::as<ast::Name>(*c.callee).name);
      bool quiet = true;
      for (const ast::Arg& a : c.args) quiet = quiet_expr(a.value, calls) && quiet;
      return quiet;
    }
    default: return false;  // records, compute blocks, await
  }
}

// A host statement a run may hold, and the names it binds or assigns; or
// why not.
struct HostStatement {
  bool quiet = false;
  std::vector<std::string> writes;
  std::vector<std::string> calls;  // the functions it calls, by name
};

HostStatement host_statement(const ast::Stmt& s) {
  HostStatement h;
  if (s.kind == ast::StmtKind::Let) {
    const auto& l = ast::as<ast::Let>(s);
    if (l.init && l.init->kind == ast::ExprKind::Compute) return h;
    h.writes = l.names;
    if (l.type)
      for (const ast::ExprPtr& d : l.type->dims) {
        if (d->kind == ast::ExprKind::Name) h.writes.push_back(ast::as<ast::Name>(*d).name);
        else if (!quiet_expr(d, h.calls)) return h;
      }
    h.quiet = quiet_expr(l.init, h.calls);
  } else if (s.kind == ast::StmtKind::Assign) {
    const auto& a = ast::as<ast::Assign>(s);
    if (a.target->kind != ast::ExprKind::Name) return h;  // an element or a field: what a block before may read
    h.writes = {ast::as<ast::Name>(*a.target).name};
    h.quiet = quiet_expr(a.value, h.calls);
  }
  return h;
}

}  // namespace

bool is_quiet_builtin(const std::string& name) {
  static const std::set<std::string> quiet = {
      "int", "float", "bool", "str", "len", "shape", "astype", "reshape", "transpose", "matmul", "where", "allclose",
      "sum", "mean", "prod", "max", "min", "argmax", "argmin", "zeros", "ones", "full", "arange"};
  return quiet.count(name) || parse_math_fn(name).has_value();
}

const ast::Compute* let_compute(const ast::Stmt& s) {
  if (s.kind != ast::StmtKind::Let) return nullptr;
  const auto& l = ast::as<ast::Let>(s);
  if (l.destructure || l.names.size() != 1 || l.type || l.is_mutable || !l.init || l.init->kind != ast::ExprKind::Compute) return nullptr;
  const auto& c = ast::as<ast::Compute>(*l.init);
  if (!c.header.empty()) return nullptr;  // @device, @async, @parallel: launched as written
  for (const ast::ExprPtr& x : c.inputs)
    if (!is_path(*x)) return nullptr;
  return &c;
}

BlockChain block_chain(const ast::Block& b, size_t first) {
  BlockChain chain;
  // The statements that may join: blocks, and quiet host statements between them.
  std::vector<size_t> blocks;  // offsets
  std::vector<HostStatement> host;  // per offset (quiet = false for blocks)
  for (size_t at = first; at < b.stmts.size(); ++at) {
    if (let_compute(*b.stmts[at])) {
      blocks.push_back(at - first);
      host.emplace_back();
      continue;
    }
    HostStatement h = host_statement(*b.stmts[at]);
    if (!h.quiet) break;
    host.push_back(std::move(h));
  }
  size_t run = blocks.size();
  auto name = [&](size_t j) -> const std::string& { return ast::as<ast::Let>(*b.stmts[first + blocks[j]]).names[0]; };
  auto stmt = [&](size_t offset) -> const ast::Stmt& { return *b.stmts[first + offset]; };
  // uses[k][j]: how often block k names the result of block j; total[j]:
  // how often the whole block does.
  std::vector<std::vector<size_t>> uses(run, std::vector<size_t>(run));
  std::vector<size_t> total(run);
  for (size_t j = 0; j < run; ++j) {
    total[j] = ast::count_name_uses(b, name(j));
    for (size_t k = 0; k < run; ++k) uses[k][j] = ast::count_name_uses(stmt(blocks[k]), name(j));
  }
  // The longest run whose results but the last are read by later blocks of
  // the run alone, whose host statements read none of them and write
  // nothing a block before them reads.
  for (size_t last = run; last-- > 1;) {
    std::string why;
    std::set<std::string> names;
    for (size_t j = 0; j <= last && why.empty(); ++j) {
      const std::string& n = name(j);
      if (!names.insert(n).second) why = "'" + n + "' is bound twice";
      for (size_t k = 0; k < j && why.empty(); ++k)
        if (uses[k][j]) why = "'" + n + "' names something else before";
      for (size_t o = 0; o < blocks[last] && why.empty(); ++o)
        if (host[o].quiet && ast::count_name_uses(stmt(o), n)) why = "host code between the blocks reads '" + n + "'";
      if (j == last || !why.empty()) break;
      size_t inside = 0;
      for (size_t k = j + 1; k <= last; ++k) inside += uses[k][j];
      if (inside == 0) why = "'" + n + "' is not read by the blocks after it";
      else if (total[j] != inside) why = "'" + n + "' is read by more than the blocks after it";
    }
    for (size_t o = 0; o < blocks[last] && why.empty(); ++o) {
      if (!host[o].quiet) continue;
      for (size_t k = 0; k <= last && blocks[k] < o && why.empty(); ++k)
        for (const std::string& w : host[o].writes)
          if (ast::count_name_uses(stmt(blocks[k]), w) || w == name(k)) {
            why = "host code between the blocks changes '" + w + "', which the block before it reads";
            break;
          }
    }
    if (why.empty()) {
      chain.length = blocks[last] + 1;
      for (size_t j = 0; j <= last; ++j) {
        chain.blocks.push_back(blocks[j]);
        chain.names.push_back(name(j));
      }
      for (size_t o = 0; o < chain.length; ++o)
        if (host[o].quiet) {
          chain.host.push_back(o);
          chain.calls.insert(chain.calls.end(), host[o].calls.begin(), host[o].calls.end());
        }
      return chain;
    }
    if (last == 1) chain.not_continued.push_back(why);
  }
  return chain;
}

}  // namespace zyntax
