#include "cir/passes/freeze_invariant_vars.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cir/equal_everywhere.hpp"
#include "cir/mutator.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// Every integer scalar var, its init, and each assignment with the loops around it.
struct Vars : IRVisitor {
  using IRVisitor::visit;
  struct Assignment {
    Expr value;
    std::vector<const For*> loops;
  };
  struct Candidate {
    Expr init;
    int decls = 0;
    std::vector<Assignment> assignments;
  };
  std::map<std::string, Candidate> vars;
  std::vector<const For*> loops;

  void visit(const For* op) override {
    loops.push_back(op);
    IRVisitor::visit(op);
    loops.pop_back();
  }
  void visit(const Decl* op) override {
    if (op->type.is_scalar() && op->type.dtype == DType::I64 && op->init.defined()) {
      Candidate& c = vars[op->name];
      c.init = op->init;
      ++c.decls;
    }
    IRVisitor::visit(op);
  }
  void visit(const Assign* op) override {
    auto it = vars.find(op->name);
    if (it != vars.end()) it->second.assignments.push_back({op->value, loops});
    IRVisitor::visit(op);
  }
};

class Freeze : public IRMutator {
 public:
  explicit Freeze(const std::set<std::string>& frozen) : frozen_(frozen) {}
  using IRMutator::visit;

 protected:
  Stmt visit(const Decl* op) override {
    if (frozen_.count(op->name)) return make_let(op->name, op->init, op->span);
    return IRMutator::visit(op);
  }
  Stmt visit(const Assign* op) override {
    if (frozen_.count(op->name)) return Stmt();
    return IRMutator::visit(op);
  }

 private:
  const std::set<std::string>& frozen_;
};

}  // namespace

Kernel freeze_invariant_vars(const Kernel& k) {
  Vars v;
  v.include(k.body);
  Substitution lets = resolved_lets(k);
  // Candidates: declared once, with an init of loop variables, lets and
  // inputs. Values that name other vars or arrays are never taken as
  // equal, not even to the same text: those may have changed in between.
  std::set<std::string> changing = mutable_names(k);
  std::map<std::string, Expr> inits;
  for (auto& [name, c] : v.vars)
    if (c.decls == 1) inits[name] = substitute(c.init, lets);
  for (bool changed = true; changed;) {
    changed = false;
    Substitution held(inits.begin(), inits.end());  // the others hold their inits
    for (auto it = inits.begin(); it != inits.end();) {
      const std::vector<Vars::Assignment>& assignments = v.vars[it->first].assignments;
      bool invariant = assignments.empty() || !reads_any(it->second, changing);
      for (const Vars::Assignment& a : assignments) {
        if (!invariant) break;
        Expr value = substitute(substitute(a.value, lets), held);
        invariant = !reads_any(value, changing) && equal_everywhere(value, it->second, a.loops, lets);
      }
      if (invariant) {
        ++it;
      } else {
        it = inits.erase(it);
        changed = true;
      }
    }
  }
  if (inits.empty()) return k;
  std::set<std::string> frozen;
  for (auto& [name, init] : inits) frozen.insert(name);
  Kernel out = Freeze(frozen).mutate(k);
  verify_or_throw(out, "freeze_invariant_vars");
  return out;
}

}  // namespace zyntax::cir
