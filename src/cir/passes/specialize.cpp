#include "cir/passes/specialize.hpp"

#include <stdexcept>

#include "cir/passes/simplify.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"
#include "support/diagnostics.hpp"

namespace zyntax::cir {

namespace {

// Loops whose step the values made constant and not positive: the
// program's error, at the loop (a generic kernel checks it as it runs).
class StepCheck : public IRVisitor {
 public:
  using IRVisitor::visit;
  void visit(const For* f) override {
    if (auto step = f->step.as<IntImm>(); step && step->value <= 0)
      throw Error(f->span, "the loop step is " + std::to_string(step->value) + ": a loop step must be positive");
    IRVisitor::visit(f);
  }
};

}  // namespace

Kernel specialize(const Kernel& k, const std::map<std::string, int64_t>& dims) {
  Substitution sizes;
  for (const DimParam& d : k.dims) {
    auto it = dims.find(d.name);
    if (it == dims.end())
      throw std::invalid_argument("specialising kernel " + k.name + ": no size for dim '" + d.name + "'");
    sizes[d.name] = i64(it->second);  // host integers may be negative; sizes are checked below
  }
  Kernel out = substitute(k, sizes);
  out.dims.clear();
  out = simplify(out);
  // A tensor's extent below zero: the host value that makes it is wrong.
  for (const Param& p : out.params)
    for (size_t a = 0; a < p.type.shape.size(); ++a)
      if (auto e = p.type.shape[a].as<IntImm>(); e && e->value < 0)
        throw Error(k.span, "kernel " + k.name + ": " + p.name + " would have " + std::to_string(e->value) + " elements along axis " +
                                std::to_string(a) + " (a negative size from the host's values)");
  StepCheck steps;
  steps.include(out.body);
  verify_or_throw(out, "specialize");
  return out;
}

}  // namespace zyntax::cir
