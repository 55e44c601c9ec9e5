#include "interp/fusion_chains.hpp"

#include "syntax/name_uses.hpp"

namespace zyntax {

namespace {

bool is_path(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Name) return true;
  return e.kind == ast::ExprKind::Field && is_path(*ast::as<ast::Field>(e).base);
}

// Whether `c` reads `name` as one of its inputs, exactly once.
bool reads_input(const ast::Compute& c, const std::string& name) {
  int n = 0;
  for (const ast::ExprPtr& x : c.inputs) n += x->kind == ast::ExprKind::Name && ast::as<ast::Name>(*x).name == name;
  return n == 1;
}

}  // namespace

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
  if (!let_compute(*b.stmts[first])) return chain;
  for (size_t i = first; i + 1 < b.stmts.size(); ++i) {
    const std::string& name = ast::as<ast::Let>(*b.stmts[i]).names[0];
    const ast::Compute* next = let_compute(*b.stmts[i + 1]);
    if (!next || !reads_input(*next, name)) break;
    // Inside the next block, the name is that block's input.
    if (ast::count_name_uses(b, name) != ast::count_name_uses(*b.stmts[i + 1], name)) {
      chain.not_continued.push_back("'" + name + "' is read by more than the next block");
      break;
    }
    chain.links.push_back(name);
    ++chain.length;
  }
  return chain;
}

}  // namespace zyntax
