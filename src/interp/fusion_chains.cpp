#include "interp/fusion_chains.hpp"

#include <set>
#include <vector>

#include "syntax/name_uses.hpp"

namespace zyntax {

namespace {

bool is_path(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Name) return true;
  return e.kind == ast::ExprKind::Field && is_path(*ast::as<ast::Field>(e).base);
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
  size_t run = 0;
  while (first + run < b.stmts.size() && let_compute(*b.stmts[first + run])) ++run;
  auto name = [&](size_t i) -> const std::string& { return ast::as<ast::Let>(*b.stmts[i]).names[0]; };
  // uses[k][j]: how often statement first + k names the result of first + j;
  // total[j]: how often the whole block does.
  std::vector<std::vector<size_t>> uses(run, std::vector<size_t>(run));
  std::vector<size_t> total(run);
  for (size_t j = 0; j < run; ++j) {
    total[j] = ast::count_name_uses(b, name(first + j));
    for (size_t k = 0; k < run; ++k) uses[k][j] = ast::count_name_uses(*b.stmts[first + k], name(first + j));
  }
  // The longest run whose results but the last are read by later blocks of
  // the run alone.
  for (size_t last = run; last-- > 1;) {
    std::string why;
    std::set<std::string> names;
    for (size_t j = 0; j <= last && why.empty(); ++j) {
      const std::string& n = name(first + j);
      if (!names.insert(n).second) why = "'" + n + "' is bound twice";
      for (size_t k = 0; k < j && why.empty(); ++k)
        if (uses[k][j]) why = "'" + n + "' names something else before";
      if (j == last) break;
      size_t inside = 0;
      for (size_t k = j + 1; k <= last; ++k) inside += uses[k][j];
      if (inside == 0) why = "'" + n + "' is not read by the blocks after it";
      else if (total[j] != inside) why = "'" + n + "' is read by more than the blocks after it";
    }
    if (why.empty()) {
      chain.length = last + 1;
      for (size_t j = 0; j <= last; ++j) chain.names.push_back(name(first + j));
      return chain;
    }
    if (last == 1) chain.not_continued.push_back(why);
  }
  return chain;
}

}  // namespace zyntax
