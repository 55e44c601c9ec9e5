#include "fusion/block_fusion.hpp"

#include <map>
#include <set>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::fusion {

namespace {

using cir::Expr;
using cir::Kernel;
using cir::Stmt;

// A kernel's loops as fusion sees them: parallel loops from 0 by 1, each
// the only statement of the one around it, and what the innermost holds.
struct Nest {
  std::vector<const cir::For*> loops;
  cir::Block body;
};

std::optional<Nest> parallel_nest(const Kernel& k) {
  Nest n;
  const cir::Block* b = &k.body;
  while (b->size() == 1) {
    const cir::For* f = (*b)[0].as<cir::For>();
    if (!f || f->loop_kind != cir::LoopKind::Parallel) break;
    const cir::IntImm* lo = f->lo.as<cir::IntImm>();
    const cir::IntImm* step = f->step.as<cir::IntImm>();
    if (!lo || lo->value != 0 || !step || step->value != 1) return std::nullopt;
    n.loops.push_back(f);
    b = &f->body;
  }
  if (n.loops.empty()) return std::nullopt;
  n.body = *b;
  return n;
}

// Statements fusion cannot move into another kernel's loops.
class Unmovable : public cir::IRVisitor {
 public:
  using IRVisitor::visit;
  std::string why;
  void visit(const cir::Atomic*) override { why = "it updates its result atomically"; }
  void visit(const cir::Yield*) override { why = "it is a reduction"; }
  void visit(const cir::Allocate*) override { why = "it allocates arrays"; }
  void visit(const cir::Barrier*) override { why = "it synchronises threads"; }
  void visit(const cir::GpuIndex*) override { why = "it is scheduled for a GPU"; }
};

std::string unmovable(const cir::Block& b) {
  Unmovable u;
  u.include(b);
  return u.why;
}

// Every read of `buffer`: its index, as the names of loop variables (empty
// where an axis is anything else).
class ReadsOf : public cir::IRVisitor {
 public:
  explicit ReadsOf(std::string buffer) : buffer_(std::move(buffer)) {}
  using IRVisitor::visit;
  std::vector<std::vector<std::string>> indices;
  void visit(const cir::Access* op) override {
    IRVisitor::visit(op);
    if (op->buffer != buffer_) return;
    std::vector<std::string> names;
    for (const cir::AxisSel& a : op->axes) {
      const cir::Var* v = a.is_slice ? nullptr : a.index.as<cir::Var>();
      names.push_back(v ? v->name : "");
    }
    indices.push_back(names);
  }

 private:
  std::string buffer_;
};

// Reads of `buffer` replaced by the value `by`.
class ReplaceReads : public cir::IRMutator {
 public:
  ReplaceReads(std::string buffer, Expr by) : buffer_(std::move(buffer)), by_(std::move(by)) {}
  using IRMutator::visit;
  Expr visit(const cir::Access* op) override { return op->buffer == buffer_ ? by_ : IRMutator::visit(op); }

 private:
  std::string buffer_;
  Expr by_;
};

// The producer's own names (loop variables, lets, vars) given a prefix, so
// they cannot meet the consumer's.
class RenameLocals : public cir::IRMutator {
 public:
  explicit RenameLocals(std::string prefix) : prefix_(std::move(prefix)) {}
  using IRMutator::visit;
  Expr visit(const cir::Var* op) override {
    auto it = names_.find(op->name);
    return it == names_.end() ? IRMutator::visit(op) : cir::Var::make(it->second, op->type, op->span);
  }
  Stmt visit(const cir::For* op) override {
    std::string to = bind(op->var);
    Stmt s = IRMutator::visit(op);
    const cir::For* f = s.as<cir::For>();
    return cir::make_for(to, f->lo, f->hi, f->step, f->body, f->loop_kind, f->factor, f->span);
  }
  Stmt visit(const cir::Let* op) override {
    Stmt s = IRMutator::visit(op);  // the value first: it cannot see its own name
    return cir::make_let(bind(op->name), s.as<cir::Let>()->value, op->span);
  }
  Stmt visit(const cir::Decl* op) override {
    Stmt s = IRMutator::visit(op);
    const cir::Decl* d = s.as<cir::Decl>();
    return cir::make_decl(bind(op->name), d->type, d->init, op->span);
  }
  Stmt visit(const cir::Assign* op) override {
    Stmt s = IRMutator::visit(op);
    auto it = names_.find(op->name);
    return cir::make_assign(it == names_.end() ? op->name : it->second, s.as<cir::Assign>()->value, op->span);
  }
  std::string bind(const std::string& name) { return names_[name] = prefix_ + name; }

 private:
  std::string prefix_;
  std::map<std::string, std::string> names_;
};

bool same_hints(const cir::KernelHints& a, const cir::KernelHints& b) {
  return a.workgroup == b.workgroup && !a.shared_bytes.defined() && !b.shared_bytes.defined() && a.tile == b.tile &&
         a.device == b.device && a.parallel == b.parallel && a.tf32 == b.tf32;
}

}  // namespace

std::variant<Kernel, std::string> fuse_producer(const Kernel& producer, const Kernel& consumer, const std::string& input) {
  const cir::Param* in = consumer.find_param(input);
  if (!in || in->role != cir::ParamRole::Input) return "the consumer does not read it";
  const cir::Param& out = producer.output();
  if (in->type.dtype != out.type.dtype || in->type.rank() != out.type.rank()) return "the consumer reads it as another type";
  if (producer.kind == cir::KernelKind::Reduce) return "the producer is a reduction";
  if (consumer.kind == cir::KernelKind::Reduce) return "the consumer is a reduction";
  if (!same_hints(producer.hints, consumer.hints)) return "their annotations differ";

  std::optional<Nest> p = parallel_nest(producer);
  if (!p) return "the producer is not a nest of parallel loops";
  std::optional<Nest> c = parallel_nest(consumer);
  if (!c) return "the consumer is not a nest of parallel loops";
  if (std::string why = unmovable(p->body); !why.empty()) return "the producer cannot move: " + why;

  // The producer: one store, its last statement, at its loop variables.
  const cir::Store* store = p->body.empty() ? nullptr : p->body.back().as<cir::Store>();
  if (!store || store->buffer != out.name) return "the producer does not end by storing its element";
  for (size_t i = 0; i + 1 < p->body.size(); ++i)
    if (cir::writes(p->body[i]).count(out.name) || cir::reads(p->body[i]).count(out.name))
      return "the producer reads or writes its result elsewhere";
  if (cir::reads(store->value).count(out.name)) return "the producer reads its own result";
  std::map<std::string, const cir::For*> p_loops, c_loops;
  for (const cir::For* f : p->loops) p_loops[f->var] = f;
  for (const cir::For* f : c->loops) c_loops[f->var] = f;
  std::vector<std::string> stored;
  for (const cir::AxisSel& a : store->axes) {
    const cir::Var* v = a.is_slice ? nullptr : a.index.as<cir::Var>();
    if (!v || !p_loops.count(v->name)) return "the producer stores at an index that is not its loop variables";
    stored.push_back(v->name);
  }
  if (std::set<std::string>(stored.begin(), stored.end()).size() != p->loops.size() || stored.size() != p->loops.size())
    return "the producer's loops and its element do not match one to one";

  // The consumer: reads of the input at one index, its loop variables, one to one.
  ReadsOf reads(input);
  reads.include(c->body);
  if (reads.indices.empty()) return "the consumer only takes its sizes";
  const std::vector<std::string>& at = reads.indices[0];
  for (const std::vector<std::string>& r : reads.indices)
    if (r != at) return "the consumer reads it at several indices";
  std::set<std::string> read_vars;
  for (const std::string& v : at) {
    if (v.empty() || !c_loops.count(v)) return "the consumer reads it at an index that is not its loop variables";
    read_vars.insert(v);
  }
  if (read_vars.size() != at.size() || at.size() != c->loops.size()) return "the consumer's loops and the element it reads do not match one to one";

  // The consumer in the producer's sizes: its sizes of the input are the
  // producer's output extents.
  cir::Substitution sizes;
  std::set<std::string> input_dims;
  for (const cir::DimParam& d : consumer.dims)
    if (d.source == cir::DimSource::Input && d.input == input) {
      sizes[d.name] = out.type.shape.at(d.axis);
      input_dims.insert(d.name);
    }
  Kernel cons = cir::substitute(consumer, sizes);
  std::optional<Nest> cn = parallel_nest(cons);
  if (!cn) return "the consumer is not a nest of parallel loops";
  std::map<std::string, const cir::For*> cn_loops;
  for (const cir::For* f : cn->loops) cn_loops[f->var] = f;

  // The producer's names out of the way, its loop variables the consumer's.
  std::string prefix = producer.name + "%";
  cir::Substitution to_consumer;
  for (size_t axis = 0; axis < stored.size(); ++axis) {
    const cir::For* pf = p_loops.at(stored[axis]);
    const cir::For* cf = cn_loops.at(at[axis]);
    if (!cir::equal(cir::simplify(pf->hi), cir::simplify(cf->hi)) || !cir::equal(cir::simplify(out.type.shape[axis]), cir::simplify(cf->hi)))
      return "the consumer's loops do not cover the producer's elements";
    to_consumer[prefix + stored[axis]] = cir::Var::make(at[axis], cir::Type::scalar(DType::I64));
  }
  RenameLocals rename(prefix);
  for (const cir::For* f : p->loops) rename.bind(f->var);
  cir::Block moved;
  for (const Stmt& s : p->body) moved.push_back(cir::substitute(cir::Block{rename.mutate(s)}, to_consumer)[0]);
  const cir::Store* last = moved.back().as<cir::Store>();
  Expr value = last->value;
  if (value->type.dtype != out.type.dtype) value = cir::Cast::make(out.type.dtype, value, last->span);
  std::string element = prefix + "element";
  moved.back() = cir::make_let(element, value, last->span);
  Expr element_var = cir::Var::make(element, cir::Type::scalar(out.type.dtype));
  ReplaceReads replace(input, element_var);
  for (const Stmt& s : cn->body) moved.push_back(replace.mutate(s));

  // The consumer's nest around it all.
  cir::Block body = moved;
  for (auto it = cn->loops.rbegin(); it != cn->loops.rend(); ++it)
    body = {cir::make_for((*it)->var, (*it)->lo, (*it)->hi, (*it)->step, body, (*it)->loop_kind, (*it)->factor, (*it)->span)};

  Kernel fused;
  fused.name = producer.name + "+" + consumer.name;
  fused.kind = cir::KernelKind::Fused;
  fused.hints = consumer.hints;
  fused.span = consumer.span;
  fused.body = body;
  std::set<std::string> dims;
  for (const Kernel* k : {&producer, static_cast<const Kernel*>(&cons)})
    for (const cir::DimParam& d : k->dims)
      if (!input_dims.count(d.name) && dims.insert(d.name).second) fused.dims.push_back(d);
  std::map<std::string, const cir::Param*> seen;
  for (cir::ParamRole role : {cir::ParamRole::Input, cir::ParamRole::Scalar})
    for (const Kernel* k : {&producer, static_cast<const Kernel*>(&cons)})
      for (const cir::Param& prm : k->params) {
        if (prm.role != role || (k == &cons && prm.name == input)) continue;
        auto [it, fresh] = seen.emplace(prm.name, &prm);
        if (fresh) {
          fused.params.push_back(prm);
        } else if (it->second->type.dtype != prm.type.dtype || it->second->type.rank() != prm.type.rank()) {
          return "both read '" + prm.name + "' as different types";
        }
      }
  fused.params.push_back(cons.output());
  std::vector<std::string> problems = cir::verify(fused);
  if (!problems.empty()) return "the fused kernel does not verify: " + problems[0];
  return cir::simplify(fused);
}

}  // namespace zyntax::fusion
