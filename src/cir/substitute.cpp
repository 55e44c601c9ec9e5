#include "cir/substitute.hpp"

#include "cir/mutator.hpp"

namespace zyntax::cir {

namespace {

class Substituter : public IRMutator {
 public:
  explicit Substituter(const Substitution& s) : IRMutator(/*rewrite_node_types=*/true), s_(s) {}

  using IRMutator::visit;

  Expr visit(const Var* op) override {
    auto it = s_.find(op->name);
    return it != s_.end() ? it->second : IRMutator::visit(op);
  }

 private:
  const Substitution& s_;
};

}  // namespace

Expr substitute(const Expr& e, const Substitution& s) { return Substituter(s).mutate(e); }
Type substitute(const Type& t, const Substitution& s) { return Substituter(s).mutate_type(t); }
Block substitute(const Block& b, const Substitution& s) { return Substituter(s).mutate(b); }
Kernel substitute(const Kernel& k, const Substitution& s) { return Substituter(s).mutate(k); }

}  // namespace zyntax::cir
