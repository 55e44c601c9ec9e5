#include "fusion/block_fusion.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <set>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/register_pressure.hpp"
#include "cir/storage_buffers.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"
#include "plan/gpu_plan.hpp"

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

// Statements fusion cannot move into another kernel's loops (a
// reduction's yields aside, where its rows are computed by fusion).
class Unmovable : public cir::IRVisitor {
 public:
  explicit Unmovable(bool yields_allowed) : yields_allowed_(yields_allowed) {}
  using IRVisitor::visit;
  std::string why;
  void visit(const cir::Atomic*) override { why = "it updates its result atomically"; }
  void visit(const cir::Yield* op) override {
    if (!yields_allowed_) why = "it is a reduction";
    IRVisitor::visit(op);
  }
  void visit(const cir::Allocate*) override { why = "it allocates arrays"; }
  void visit(const cir::Barrier*) override { why = "it synchronises threads"; }
  void visit(const cir::GpuIndex*) override { why = "it is scheduled for a GPU"; }

 private:
  bool yields_allowed_;
};

bool has_loop(const Stmt& s) {
  struct Loops : cir::IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const cir::For*) override { found = true; }
  } v;
  v.include(s);
  return v.found;
}

// A producer with loops of its own inside its parallel nest (a product, a
// convolution): it keeps them, and its schedule.
bool has_own_loops(const Nest& nest) {
  return std::any_of(nest.body.begin(), nest.body.end(), [](const Stmt& s) { return has_loop(s); });
}

std::string unmovable(const cir::Block& b, bool yields_allowed = false) {
  Unmovable u(yields_allowed);
  u.include(b);
  return u.why;
}

// The loop variable a producer's store writes each output axis at: one
// loop per axis, every loop of its nest. Or why not.
std::variant<std::vector<std::string>, std::string> stored_at(const Nest& nest, const cir::Store& store) {
  std::vector<std::string> vars;
  for (const cir::AxisSel& a : store.axes) {
    const cir::Var* v = a.is_slice ? nullptr : a.index.as<cir::Var>();
    bool loop = false;
    for (const cir::For* f : nest.loops) loop = loop || (v && f->var == v->name);
    if (!loop) return "the producer stores at an index that is not its loop variables";
    vars.push_back(v->name);
  }
  if (std::set<std::string>(vars.begin(), vars.end()).size() != vars.size() || vars.size() != nest.loops.size())
    return "the producer's loops and its element do not match one to one";
  return vars;
}

// What a nest's body, lets and then a store, stores: one expression, the
// lets substituted. Nothing where the body holds anything else.
std::optional<Expr> stored_value(const cir::Block& body) {
  const cir::Store* store = body.empty() ? nullptr : body.back().as<cir::Store>();
  if (!store) return std::nullopt;
  Expr value = store->value;
  for (size_t i = body.size() - 1; i-- > 0;) {
    const cir::Let* let = body[i].as<cir::Let>();
    if (!let) return std::nullopt;
    value = cir::substitute(value, {{let->name, let->value}});
  }
  return value;
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
         a.device == b.device && a.parallel == b.parallel && a.tf32 == b.tf32 && a.bf16 == b.bf16;
}

// The consumer's sizes of `input` are the producer's output extents.
Kernel in_producer_sizes(const Kernel& consumer, const Kernel& producer, const std::string& input) {
  cir::Substitution sizes;
  for (const cir::DimParam& d : consumer.dims)
    if (d.source == cir::DimSource::Input && d.input == input) sizes[d.name] = producer.output().type.shape.at(d.axis);
  return cir::substitute(consumer, sizes);
}

// The fused kernel's interface: the inputs of both (the producer's first,
// each name once; `input` gone), their scalars and dims; the consumer's
// output, name and reduction. `cons` is the consumer in the producer's sizes.
std::variant<Kernel, std::string> merge_interfaces(const Kernel& producer, const Kernel& cons, const std::string& input, cir::Block body,
                                                   cir::KernelKind kind, bool finished = true) {
  Kernel fused;
  fused.name = cons.name;
  fused.kind = kind;
  fused.reduce_op = cons.reduce_op;
  fused.reduce_axis = cons.reduce_axis;
  fused.hints = cons.hints;
  fused.span = cons.span;
  fused.body = std::move(body);
  std::set<std::string> dims;
  for (const Kernel* k : {&producer, &cons})
    for (const cir::DimParam& d : k->dims)
      if (!(d.source == cir::DimSource::Input && d.input == input) && dims.insert(d.name).second) fused.dims.push_back(d);
  std::map<std::string, const cir::Param*> seen;
  for (cir::ParamRole role : {cir::ParamRole::Input, cir::ParamRole::Scalar})
    for (const Kernel* k : {&producer, &cons})
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
  if (!finished) return fused;
  std::vector<std::string> problems = cir::verify(fused);
  if (!problems.empty()) return "the fused kernel does not verify: " + problems[0];
  return cir::simplify(fused);
}

std::variant<Kernel, std::string> fuse_epilogue(const Kernel& producer, const Kernel& cons, const std::string& input,
                                                const std::vector<std::string>& stored, const std::vector<std::string>& at);

// The third rule: a loop-free element-wise producer's statements moved
// into a consumer whose parallel loops cover the same elements and read it
// only there, at their own variables. A producer with loops of its own (a
// product) takes such a consumer in instead, as its epilogue, where the
// consumer only maps each element (fuse_epilogue); `rows`: the consumer
// has rows of reductions still to place in its loops, which it keeps.
std::variant<Kernel, std::string> fuse_producer(const Kernel& producer, const Kernel& consumer, const std::string& input, bool rows) {
  const cir::Param& out = producer.output();
  if (producer.kind == cir::KernelKind::Reduce) return "the producer is a reduction";
  if (consumer.kind == cir::KernelKind::Reduce) return "the consumer is a reduction";

  std::optional<Nest> p = parallel_nest(producer);
  if (!p) return "the producer is not a nest of parallel loops";
  // The consumer in the producer's sizes.
  Kernel cons = in_producer_sizes(consumer, producer, input);
  std::optional<Nest> c = parallel_nest(cons);
  if (!c) return "the consumer is not a nest of parallel loops";
  if (std::string why = unmovable(p->body); !why.empty()) return "the producer cannot move: " + why;
  // A product or a reduction inside keeps its own schedule (moved into an
  // element-wise loop, it would lose its blocking and its summation order).
  bool loops = has_own_loops(*p);

  // The producer: one store, its last statement, at its loop variables.
  const cir::Store* store = p->body.empty() ? nullptr : p->body.back().as<cir::Store>();
  if (!store || store->buffer != out.name) return "the producer does not end by storing its element";
  for (size_t i = 0; i + 1 < p->body.size(); ++i)
    if (cir::writes(p->body[i]).count(out.name) || cir::reads(p->body[i]).count(out.name))
      return "the producer reads or writes its result elsewhere";
  if (cir::reads(store->value).count(out.name)) return "the producer reads its own result";
  auto stored_vars = stored_at(*p, *store);
  if (auto* why = std::get_if<std::string>(&stored_vars)) return *why;
  const std::vector<std::string>& stored = std::get<std::vector<std::string>>(stored_vars);
  std::map<std::string, const cir::For*> p_loops, c_loops;
  for (const cir::For* f : p->loops) p_loops[f->var] = f;
  for (const cir::For* f : c->loops) c_loops[f->var] = f;

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

  // The producer's names out of the way, its loop variables the consumer's.
  std::string prefix = producer.name + "%";
  cir::Substitution to_consumer;
  for (size_t axis = 0; axis < stored.size(); ++axis) {
    const cir::For* pf = p_loops.at(stored[axis]);
    const cir::For* cf = c_loops.at(at[axis]);
    if (!cir::equal(cir::simplify(pf->hi), cir::simplify(cf->hi)) || !cir::equal(cir::simplify(out.type.shape[axis]), cir::simplify(cf->hi)))
      return "the consumer's loops do not cover the producer's elements";
    to_consumer[prefix + stored[axis]] = cir::Var::make(at[axis], cir::Type::scalar(DType::I64));
  }
  if (loops) {
    if (rows) return "the producer has loops of its own (a product keeps its schedule), and the consumer computes rows of reductions";
    return fuse_epilogue(producer, cons, input, stored, at);
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
  for (const Stmt& s : c->body) moved.push_back(replace.mutate(s));

  // The consumer's nest around it all.
  cir::Block body = moved;
  for (auto it = c->loops.rbegin(); it != c->loops.rend(); ++it)
    body = {cir::make_for((*it)->var, (*it)->lo, (*it)->hi, (*it)->step, body, (*it)->loop_kind, (*it)->factor, (*it)->span)};

  return merge_interfaces(producer, cons, input, body, cir::KernelKind::Fused);
}

// A consumer that maps each element of a producer with loops of its own (a
// matrix product, a convolution) becomes the producer's epilogue: its
// element computed from the producer's, in the producer's store, so the
// product keeps its loops, its schedule and its summation order, and the
// product's result never goes to memory. `cons` is the consumer in the
// producer's sizes; `stored` the producer's loop variable per output axis,
// `at` the consumer's at which it reads the producer.
std::variant<Kernel, std::string> fuse_epilogue(const Kernel& producer, const Kernel& cons, const std::string& input,
                                                const std::vector<std::string>& stored, const std::vector<std::string>& at) {
  const char* not_a_map = "the producer has loops of its own (a product keeps its schedule), and the consumer does more than map each of its elements";
  std::optional<Nest> c = parallel_nest(cons);
  const cir::Store* c_store = c && !c->body.empty() ? c->body.back().as<cir::Store>() : nullptr;
  if (!c_store || c_store->buffer != cons.output().name) return not_a_map;
  auto c_vars = stored_at(*c, *c_store);
  if (!std::holds_alternative<std::vector<std::string>>(c_vars) || std::get<std::vector<std::string>>(c_vars) != at) return not_a_map;
  // The consumer's element as one expression of its loop variables.
  std::optional<Expr> value = stored_value(c->body);
  if (!value) return not_a_map;
  Expr g = *value;
  if (cir::reads(g).count(cons.output().name)) return not_a_map;
  // The producer with its names out of the way of the consumer's.
  std::string prefix = producer.name + "%";
  RenameLocals rename(prefix);
  Kernel p_renamed = producer;
  p_renamed.body = rename.mutate(producer.body);
  std::optional<Nest> p = parallel_nest(p_renamed);
  const cir::Store* p_store = p ? p->body.back().as<cir::Store>() : nullptr;
  if (!p_store) return not_a_map;
  // The producer's element rounded to its output type, read where the consumer read the tensor.
  const cir::Param& out = producer.output();
  Expr element = p_store->value;
  if (element->type.dtype != out.type.dtype) element = cir::Cast::make(out.type.dtype, element, p_store->span);
  g = ReplaceReads(input, element).mutate(g);
  cir::Substitution to_producer;
  for (size_t axis = 0; axis < at.size(); ++axis) to_producer[at[axis]] = cir::Var::make(prefix + stored[axis], cir::Type::scalar(DType::I64));
  g = cir::substitute(g, to_producer);
  cir::Block body = p->body;
  body.back() = cir::make_store(cons.output().name, p_store->axes, g, c_store->span);
  for (auto it = p->loops.rbegin(); it != p->loops.rend(); ++it)
    body = {cir::make_for((*it)->var, (*it)->lo, (*it)->hi, (*it)->step, body, (*it)->loop_kind, (*it)->factor, (*it)->span)};
  return merge_interfaces(producer, cons, input, body, producer.kind);
}

// Loops around a point of the consumer, and whether a condition is.
struct LoopScope {
  std::vector<const cir::For*> loops;  // outermost first
  int conditions = 0;
};

// Why the read `a` of a producer with output `shape` cannot be inlined
// there: each index a loop variable over the whole axis (so the producer's
// every element, and every check it makes, is computed), one loop per
// axis, not under a condition. The loops of the indices, by axis.
std::variant<std::vector<const cir::For*>, std::string> whole_loop_read(const cir::Access& a, const std::vector<Expr>& shape,
                                                                          const LoopScope& scope) {
  if (scope.conditions) return "the consumer reads it under a condition";
  std::vector<const cir::For*> at;
  for (size_t k = 0; k < a.axes.size(); ++k) {
    const cir::Var* v = a.axes[k].is_slice ? nullptr : a.axes[k].index.as<cir::Var>();
    const cir::For* loop = nullptr;
    for (const cir::For* f : scope.loops)
      if (v && f->var == v->name) loop = f;
    const cir::IntImm* lo = loop ? loop->lo.as<cir::IntImm>() : nullptr;
    const cir::IntImm* step = loop ? loop->step.as<cir::IntImm>() : nullptr;
    if (!lo || lo->value != 0 || !step || step->value != 1 || !cir::equal(cir::simplify(loop->hi), cir::simplify(shape[k])))
      return "the consumer reads it at an index that is not a loop over its whole axis";
    for (const cir::For* f : at)
      if (f == loop) return "the consumer reads it with one loop on two axes";
    at.push_back(loop);
  }
  return at;
}

// A mutator that knows the loops and conditions around what it visits.
class ScopedMutator : public cir::IRMutator {
 public:
  using IRMutator::visit;
  // Code placed inside these loops (a row computed at the top of the last).
  void start_inside(std::vector<const cir::For*> loops) { scope_.loops = std::move(loops); }
  Stmt visit(const cir::For* op) override {
    scope_.loops.push_back(op);
    Stmt s = IRMutator::visit(op);
    scope_.loops.pop_back();
    return s;
  }
  Stmt visit(const cir::If* op) override {
    ++scope_.conditions;
    Stmt s = IRMutator::visit(op);
    --scope_.conditions;
    return s;
  }
  Expr visit(const cir::Select* op) override {
    ++scope_.conditions;  // only one side is computed
    Expr e = IRMutator::visit(op);
    --scope_.conditions;
    return e;
  }

 protected:
  LoopScope scope_;
};

// The element of an element-wise producer as one expression of its loop
// variables: lets and a store at them, nothing else. Or nothing.
struct Element {
  Expr value;
  std::vector<std::string> vars;  // by output axis
};

std::optional<Element> element_expression(const Kernel& p) {
  std::optional<Nest> nest = parallel_nest(p);
  if (!nest || nest->body.empty()) return std::nullopt;
  const cir::Store* store = nest->body.back().as<cir::Store>();
  if (!store || store->buffer != p.output().name) return std::nullopt;
  auto vars = stored_at(*nest, *store);
  if (!std::holds_alternative<std::vector<std::string>>(vars)) return std::nullopt;
  Element e;
  e.vars = std::get<std::vector<std::string>>(vars);
  std::optional<Expr> value = stored_value(nest->body);
  if (!value) return std::nullopt;
  e.value = *value;
  if (cir::reads(e.value).count(p.output().name)) return std::nullopt;
  if (e.value->type.dtype != p.output().type.dtype) e.value = cir::Cast::make(p.output().type.dtype, e.value, store->span);
  return e;
}

size_t node_count(const Expr& e) {
  struct Count : cir::IRVisitor {
    size_t n = 0;
    using IRVisitor::visit;
    void visit(const cir::Binary* op) override { ++n, IRVisitor::visit(op); }
    void visit(const cir::Unary* op) override { ++n, IRVisitor::visit(op); }
    void visit(const cir::Math* op) override { ++n, IRVisitor::visit(op); }
    void visit(const cir::Select* op) override { ++n, IRVisitor::visit(op); }
    void visit(const cir::Access* op) override { ++n, IRVisitor::visit(op); }
  } c;
  c.include(e);
  return c.n;
}

// Each read of `name` replaced by the producer's element at its indices.
class InlineElement : public ScopedMutator {
 public:
  InlineElement(std::string name, const Element& e, const std::vector<Expr>& shape) : name_(std::move(name)), e_(e), shape_(shape) {}
  using ScopedMutator::visit;
  std::string why;
  Expr visit(const cir::Access* op) override {
    if (op->buffer != name_) return IRMutator::visit(op);
    auto at = whole_loop_read(*op, shape_, scope_);
    if (auto* w = std::get_if<std::string>(&at)) {
      if (why.empty()) why = *w;
      return IRMutator::visit(op);
    }
    // A loop around the read that is not one of its indices reads each
    // element again at every iteration.
    for (const cir::For* f : scope_.loops) {
      bool index = false;
      for (const cir::AxisSel& a : op->axes) index = index || a.index.as<cir::Var>()->name == f->var;
      repeated = repeated || !index;
    }
    cir::Substitution s;
    for (size_t k = 0; k < e_.vars.size(); ++k) s[e_.vars[k]] = op->axes[k].index;
    return cir::substitute(e_.value, s);
  }
  bool repeated = false;

 private:
  std::string name_;
  const Element& e_;
  const std::vector<Expr>& shape_;
};

// A row of a reduction read by the consumer: computed once, at the top of
// the innermost loop of the indices it is read at, into the let `value`.
// Its code is kept apart until every producer is inlined (it may read
// other producers, and rows planned later may have to come before it).
struct Row {
  std::string key;    // the producer and the row's index variables
  std::string value;  // the let holding it
  std::string loop;   // where it is computed
  cir::Block code;
};

struct InlineState {
  std::vector<Row> rows;
  int counter = 0;
  bool epilogue = false;  // the kernel is a product's loops with the consumer as its epilogue
};

// The loops from the top of `body` down to the loop of `var`, that one
// included; empty where there is none.
std::vector<const cir::For*> loops_to(const cir::Block& body, const std::string& var) {
  for (const Stmt& st : body) {
    const cir::For* f = st.as<cir::For>();
    if (!f) {
      if (const cir::If* i = st.as<cir::If>())
        for (const cir::Block* b : {&i->then_body, &i->else_body})
          if (auto inner = loops_to(*b, var); !inner.empty()) return inner;
      continue;
    }
    if (f->var == var) return {f};
    if (auto inner = loops_to(f->body, var); !inner.empty()) {
      inner.insert(inner.begin(), f);
      return inner;
    }
  }
  return {};
}

// Yields folded into an accumulator.
class Accumulate : public cir::IRMutator {
 public:
  Accumulate(std::string acc, DType acc_dtype, BinaryOp op) : acc_(std::move(acc)), dtype_(acc_dtype), op_(op) {}
  using IRMutator::visit;
  Stmt visit(const cir::Yield* op) override {
    Expr v = mutate(op->value);
    if (v->type.dtype != dtype_) v = cir::Cast::make(dtype_, v, op->span);
    return cir::make_assign(acc_, cir::Binary::make(op_, cir::Var::make(acc_, cir::Type::scalar(dtype_)), v, op->span), op->span);
  }

 private:
  std::string acc_;
  DType dtype_;
  BinaryOp op_;
};

Expr scalar_constant(const Scalar& v) {
  if (is_float(v.dtype)) return cir::FloatImm::make(v.f, v.dtype);
  if (v.dtype == DType::Bool) return cir::BoolImm::make(v.i != 0);
  return cir::IntImm::make(v.i, v.dtype);
}

// The code of one row of reduction `p`: var acc = identity; the
// reduction's loops inside its rows, yields folded into acc, as the
// reduction accumulates (reduce_accumulator_dtype); let value = acc in
// the output's dtype. `row_axis[k]`: the output axis p's loop k yields to.
cir::Block row_code(const Kernel& p, const std::vector<size_t>& row_axis, const std::vector<std::string>& vars, const std::string& value) {
  std::optional<Nest> nest = parallel_nest(p);
  DType out = p.output().type.dtype;
  DType acc_dtype = reduce_accumulator_dtype(p.reduce_op, out);
  std::string prefix = value + ".";
  RenameLocals rename(prefix);
  cir::Substitution to_row;
  for (size_t k = 0; k < nest->loops.size(); ++k) {
    rename.bind(nest->loops[k]->var);
    to_row[prefix + nest->loops[k]->var] = cir::Var::make(vars[row_axis[k]], cir::Type::scalar(DType::I64));
  }
  std::string acc = prefix + "acc";
  Accumulate fold(acc, acc_dtype, *reduce_binary_op(p.reduce_op));
  cir::Block code;
  code.push_back(cir::make_decl(acc, cir::Type::scalar(acc_dtype), scalar_constant(reduce_identity(p.reduce_op, acc_dtype))));
  for (const Stmt& st : nest->body) code.push_back(cir::substitute(cir::Block{fold.mutate(rename.mutate(st))}, to_row)[0]);
  Expr v = cir::Var::make(acc, cir::Type::scalar(acc_dtype));
  if (acc_dtype != out) v = cir::Cast::make(out, v);
  code.push_back(cir::make_let(value, v));
  return code;
}

// Reads of reduction `name` replaced by the lets of their rows, rows not
// met before planned (their code from row_code).
class PlanRows : public ScopedMutator {
 public:
  PlanRows(std::string name, const Kernel& p, const std::vector<size_t>& row_axis, const cir::Block& body, InlineState& st)
      : name_(std::move(name)), p_(p), row_axis_(row_axis), body_(body), st_(st) {}
  using ScopedMutator::visit;
  std::string why;
  Expr visit(const cir::Access* op) override {
    if (op->buffer != name_) return IRMutator::visit(op);
    auto at = whole_loop_read(*op, p_.output().type.shape, scope_);
    if (auto* w = std::get_if<std::string>(&at)) {
      if (why.empty()) why = *w;
      return IRMutator::visit(op);
    }
    std::vector<std::string> vars;
    std::string key = name_;
    for (const cir::AxisSel& a : op->axes) {
      vars.push_back(a.index.as<cir::Var>()->name);
      key += "," + vars.back();
    }
    for (const Row& r : st_.rows)
      if (r.key == key) return cir::Var::make(r.value, op->type, op->span);
    // The innermost loop of the row's indices: one of the kernel's own
    // (not a loop of another row's code).
    size_t deepest = 0;
    for (const cir::For* f : std::get<std::vector<const cir::For*>>(at))
      for (size_t d = 0; d < scope_.loops.size(); ++d)
        if (scope_.loops[d] == f) deepest = std::max(deepest, d);
    std::string loop = scope_.loops[deepest]->var;
    if (loops_to(body_, loop).empty()) {
      if (why.empty()) why = "the consumer reads it inside another reduction's loop";
      return IRMutator::visit(op);
    }
    Row r;
    r.key = key;
    r.value = name_ + "%row" + std::to_string(st_.counter++);
    r.loop = loop;
    r.code = row_code(p_, row_axis_, vars, r.value);
    st_.rows.push_back(r);
    return cir::Var::make(r.value, op->type, op->span);
  }

 private:
  std::string name_;
  const Kernel& p_;
  const std::vector<size_t>& row_axis_;
  const cir::Block& body_;
  InlineState& st_;
};

// The rows computed at the top of their loops, each after the rows it reads.
class InsertRows : public cir::IRMutator {
 public:
  explicit InsertRows(const std::vector<Row>& rows) : rows_(rows) {}
  using IRMutator::visit;
  Stmt visit(const cir::For* op) override {
    Stmt s = IRMutator::visit(op);
    std::vector<const Row*> here;
    for (const Row& r : rows_)
      if (r.loop == op->var) here.push_back(&r);
    if (here.empty()) return s;
    cir::Block head;
    std::set<std::string> placed;
    while (!here.empty()) {
      size_t before = here.size();
      for (auto it = here.begin(); it != here.end();) {
        bool ready = true;
        for (const Row* other : here)
          if (other != *it && reads_name((*it)->code, other->value)) ready = false;
        if (!ready) {
          ++it;
          continue;
        }
        head.insert(head.end(), (*it)->code.begin(), (*it)->code.end());
        it = here.erase(it);
      }
      if (here.size() == before) throw std::logic_error("fusion: rows that read each other");
    }
    const cir::For* f = s.as<cir::For>();
    cir::Block body = head;
    body.insert(body.end(), f->body.begin(), f->body.end());
    return cir::make_for(f->var, f->lo, f->hi, f->step, body, f->loop_kind, f->factor, f->span);
  }

 private:
  static bool reads_name(const cir::Block& b, const std::string& name) {
    for (const Stmt& st : b)
      if (cir::reads(st).count(name)) return true;
    return false;
  }
  const std::vector<Row>& rows_;
};

// The output axis each of a reduction's parallel loops yields to, or why
// the reduction cannot be computed by rows.
std::variant<std::vector<size_t>, std::string> row_axes(const Kernel& p) {
  if (!reduce_binary_op(p.reduce_op)) return "the producer is an arg or logical reduction";
  std::optional<Nest> nest = parallel_nest(p);
  if (!nest) return "the producer does not reduce rows of parallel loops";
  struct Yields : cir::IRVisitor {
    std::vector<const cir::Yield*> found;
    using IRVisitor::visit;
    void visit(const cir::Yield* op) override { found.push_back(op); }
  } yields;
  yields.include(nest->body);
  if (yields.found.empty()) return "the producer yields nothing";
  if (std::string why = unmovable(nest->body, /*yields_allowed=*/true); !why.empty()) return "the producer cannot move: " + why;
  std::vector<size_t> axes(nest->loops.size(), SIZE_MAX);
  for (const cir::Yield* y : yields.found) {
    if (y->out_index.size() != nest->loops.size()) return "the producer yields to elements that are not its rows";
    for (size_t a = 0; a < y->out_index.size(); ++a) {
      const cir::Var* v = y->out_index[a].as<cir::Var>();
      size_t k = SIZE_MAX;
      for (size_t l = 0; l < nest->loops.size(); ++l)
        if (v && nest->loops[l]->var == v->name) k = l;
      if (k == SIZE_MAX || (axes[k] != SIZE_MAX && axes[k] != a)) return "the producer yields to elements that are not its rows";
      axes[k] = a;
    }
  }
  return axes;
}

std::optional<std::string> first_pending_read(const Kernel& k, const InlineState& st, const Pending& pending) {
  struct First : cir::IRVisitor {
    const Kernel& k;
    const Pending& pending;
    std::optional<std::string> name;
    First(const Kernel& kk, const Pending& p) : k(kk), pending(p) {}
    using IRVisitor::visit;
    void visit(const cir::Access* op) override {
      IRVisitor::visit(op);
      const cir::Param* prm = k.find_param(op->buffer);
      if (!name && pending.count(op->buffer) && prm && prm->role == cir::ParamRole::Input) name = op->buffer;
    }
  } f(k, pending);
  f.include(k.body);
  for (const Row& r : st.rows) f.include(r.code);
  return f.name;
}

// `m` over the kernel's body, then over each row's code as placed.
template <class M>
std::string mutate_everywhere(M& m, cir::Block& body, InlineState& st) {
  cir::Block original = body;
  body = m.mutate(original);
  for (size_t i = 0; i < st.rows.size(); ++i) {  // rows planned meanwhile too
    m.start_inside(loops_to(original, st.rows[i].loop));
    cir::Block code = m.mutate(st.rows[i].code);
    st.rows[i].code = std::move(code);
  }
  return m.why;
}

std::variant<Kernel, std::string> inline_one(const Kernel& consumer, const Kernel& producer, const std::string& name, InlineState& st) {
  const cir::Param* in = consumer.find_param(name);
  const cir::Param& out = producer.output();
  if (in->type.dtype != out.type.dtype || in->type.rank() != out.type.rank()) return "the consumer reads it as another type";
  if (!same_hints(producer.hints, consumer.hints)) return "their annotations differ";
  Kernel cons = in_producer_sizes(consumer, producer, name);
  cir::Substitution sizes;
  for (const cir::DimParam& d : consumer.dims)
    if (d.source == cir::DimSource::Input && d.input == name) sizes[d.name] = out.type.shape.at(d.axis);
  for (Row& r : st.rows) r.code = cir::substitute(r.code, sizes);
  if (producer.kind == cir::KernelKind::Reduce) {
    // Rows computed inside a product's loops would cost it its schedule.
    if (st.epilogue) return "the consumer became a product's epilogue, whose loops keep the product's schedule";
    auto axes = row_axes(producer);
    if (auto* why = std::get_if<std::string>(&axes)) return *why;
    PlanRows plan(name, producer, std::get<std::vector<size_t>>(axes), cons.body, st);
    cir::Block body = cons.body;
    if (std::string why = mutate_everywhere(plan, body, st); !why.empty()) return why;
    return merge_interfaces(producer, cons, name, body, cons.kind, false);
  }
  if (std::optional<Element> e = element_expression(producer)) {
    // Recomputed at each read: only while that stays cheap.
    ReadsOf reads(name);
    reads.include(cons.body);
    for (const Row& r : st.rows) reads.include(r.code);
    if (reads.indices.size() > 1 && node_count(e->value) * reads.indices.size() > 96)
      return "the consumer reads it " + std::to_string(reads.indices.size()) + " times, and recomputing it costs more than storing it";
    InlineElement inl(name, *e, out.type.shape);
    cir::Block body = cons.body;
    if (std::string why = mutate_everywhere(inl, body, st); !why.empty()) return why;
    // Read again inside a loop over another axis (a product's operand, a
    // broadcast): only an element of a few operations is recomputed there.
    if (inl.repeated && node_count(e->value) > 4)
      return "the consumer reads each element again in a loop over another axis, and recomputing it costs more than storing it";
    return merge_interfaces(producer, cons, name, body, cons.kind, false);
  }
  for (const Row& r : st.rows) {
    ReadsOf reads(name);
    reads.include(r.code);
    if (!reads.indices.empty()) return "the consumer reads it inside a reduction's row";
  }
  auto fused = fuse_producer(producer, consumer, name, !st.rows.empty());
  if (std::holds_alternative<Kernel>(fused)) st.epilogue = st.epilogue || has_own_loops(*parallel_nest(producer));
  return fused;
}

// Why `fused` cannot run where `consumer` alone runs on a GPU target: its
// plan fails there (too much shared memory, a limit of the driver), or a
// thread would hold more registers than the target has, which the consumer
// alone would not. "" when it can.
std::string gpu_limit_excess(const Kernel& fused, const Kernel& consumer, const GpuTarget& target) {
  GpuPlan f = gpu_plan(fused, target);
  const std::string where = std::string(gpu_api_name(target.api)) + " " + target.arch;
  if (!f.kernel) return gpu_plan(consumer, target).kernel ? "not run on " + where + " (" + f.why_not + ")" : "";
  const int budget = target.max_registers_per_thread;
  if (budget <= 0) return "";
  int64_t regs = cir::estimated_registers(*f.kernel);
  if (regs <= budget) return "";
  GpuPlan c = gpu_plan(consumer, target);
  if (!c.kernel || cir::estimated_registers(*c.kernel) > budget) return "";
  return "hold about " + std::to_string(regs) + " registers per thread, more than the " + std::to_string(budget) + " a thread has on " + where +
         " (it would spill to memory)";
}

}  // namespace

Inlined inline_producers(const Kernel& consumer, const Pending& pending, const GpuTarget* target) {
  Inlined out;
  Kernel k = consumer;
  InlineState st;
  while (std::optional<std::string> name = first_pending_read(k, st, pending)) {
    auto r = inline_one(k, pending.at(*name), *name, st);
    if (auto* why = std::get_if<std::string>(&r)) {
      out.refused = *name;
      out.why = *why;
      return out;
    }
    // A fused kernel may bind no more than the device allows, unless the
    // consumer alone already does (it then runs wherever it ran before).
    if (target) {
      std::string excess = cir::gpu_binding_excess(std::get<Kernel>(r), *target);
      if (!excess.empty() && cir::gpu_binding_excess(k, *target).empty()) {
        out.refused = *name;
        out.why = "the fused kernel would " + excess;
        return out;
      }
    }
    k = std::move(std::get<Kernel>(r));
    if (std::find(out.producers.begin(), out.producers.end(), *name) == out.producers.end()) out.producers.push_back(*name);
    if (out.producers.size() > 64) {
      out.refused = *name;
      out.why = "too many producers in one kernel";
      return out;
    }
  }
  if (!out.producers.empty()) {
    k.body = InsertRows(st.rows).mutate(k.body);
    std::vector<std::string> problems = cir::verify(k);
    if (!problems.empty()) {
      out.refused = out.producers.back();
      out.why = "the fused kernel does not verify: " + problems[0];
      return out;
    }
    k = cir::simplify(k);
    if (target) {
      if (std::string excess = gpu_limit_excess(k, consumer, *target); !excess.empty()) {
        out.refused = out.producers.back();
        out.why = "the fused kernel would " + excess;
        return out;
      }
    }
  }
  out.kernel = std::move(k);
  return out;
}

}  // namespace zyntax::fusion
