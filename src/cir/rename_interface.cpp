#include "cir/rename_interface.hpp"

#include "cir/mutator.hpp"
#include "cir/substitute.hpp"

namespace zyntax::cir {

namespace {

// Reads of renamed inputs.
class RenameReads : public IRMutator {
 public:
  explicit RenameReads(const std::map<std::string, std::string>& to) : to_(to) {}
  using IRMutator::visit;
  Expr visit(const Access* op) override {
    Expr e = IRMutator::visit(op);
    auto it = to_.find(op->buffer);
    if (it == to_.end()) return e;
    const Access* a = e.as<Access>();
    return Expr(std::make_shared<Access>(it->second, a->axes, a->type, a->span));
  }

 private:
  const std::map<std::string, std::string>& to_;
};

}  // namespace

Kernel rename_interface(const Kernel& k, const std::map<std::string, std::string>& to, const std::map<std::string, int64_t>& sizes) {
  // Scalars and dimensions are variables: substituted, also inside extents.
  Substitution vars;
  for (const Param& p : k.params)
    if (p.role == ParamRole::Scalar && to.count(p.name)) vars[p.name] = Var::make(to.at(p.name), p.type);
  for (const DimParam& d : k.dims) {
    if (sizes.count(d.name)) vars[d.name] = i64(sizes.at(d.name));
    else if (to.count(d.name)) vars[d.name] = Var::make(to.at(d.name), Type::scalar(DType::I64));
  }
  Kernel r = substitute(k, vars);
  std::map<std::string, std::string> inputs;
  for (const Param& p : k.params)
    if (p.role == ParamRole::Input && to.count(p.name)) inputs[p.name] = to.at(p.name);
  r.body = RenameReads(inputs).mutate(r.body);
  for (Param& p : r.params)
    if (p.role != ParamRole::Output && to.count(p.name)) p.name = to.at(p.name);
  std::vector<DimParam> dims;
  for (DimParam d : r.dims) {
    if (sizes.count(d.name)) continue;
    if (to.count(d.name)) d.name = to.at(d.name);
    if (d.source == DimSource::Input && to.count(d.input)) d.input = to.at(d.input);
    dims.push_back(std::move(d));
  }
  r.dims = std::move(dims);
  return r;
}

}  // namespace zyntax::cir
