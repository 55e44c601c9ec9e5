#include "runtime/split_scatter.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <set>

#include "cir/mutator.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax {

namespace {

bool is_loop_index(const cir::AxisSel& a, const std::string& var) {
  auto v = a.is_slice ? nullptr : a.index.as<cir::Var>();
  return v && v->name == var;
}

// For each parameter, the axes that every access of it indexes with exactly
// the split loop's variable; parameters named anywhere else (statements
// that take buffers by name) are not sliced.
class LoopIndexedAxes : public cir::IRVisitor {
 public:
  explicit LoopIndexedAxes(std::string var) : var_(std::move(var)) {}
  std::map<std::string, std::set<int>> axes;  // absent: never accessed
  std::set<std::string> unsliceable;
  using IRVisitor::visit;

 protected:
  void visit(const cir::Access* op) override {
    note(op->buffer, op->axes);
    IRVisitor::visit(op);
  }
  void visit(const cir::Store* op) override {
    note(op->buffer, op->axes);
    IRVisitor::visit(op);
  }
  void visit(const cir::Atomic* op) override {
    unsliceable.insert(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const cir::MatMulBlock* op) override {
    unsliceable.insert({op->a, op->b, op->c});
    IRVisitor::visit(op);
  }
  void visit(const cir::AsyncCopy* op) override {
    unsliceable.insert({op->src, op->dst});
    IRVisitor::visit(op);
  }
  void visit(const cir::TileMma* op) override {
    unsliceable.insert({op->a, op->b, op->d});
    IRVisitor::visit(op);
  }
  // Their operands are read through flat views of the whole inputs.
  void visit(const cir::WarpgroupProduct* op) override {
    unsliceable.insert({op->a.buffer, op->b.buffer, op->stage});
    IRVisitor::visit(op);
  }
  void visit(const cir::WarpgroupAttention* op) override {
    unsliceable.insert({op->q.buffer, op->k.buffer, op->v.buffer, op->stage});
    IRVisitor::visit(op);
  }

 private:
  void note(const std::string& buffer, const std::vector<cir::AxisSel>& sel) {
    std::set<int> here;
    for (size_t a = 0; a < sel.size(); ++a)
      if (is_loop_index(sel[a], var_)) here.insert(static_cast<int>(a));
    auto [it, fresh] = axes.emplace(buffer, here);
    if (!fresh) {
      std::set<int> both;
      std::set_intersection(it->second.begin(), it->second.end(), here.begin(), here.end(), std::inserter(both, both.begin()));
      it->second = std::move(both);
    }
  }
  std::string var_;
};

// Restricts the split loop and rebases the sliced buffers' accesses.
class ScatterRewrite : public cir::IRMutator {
 public:
  ScatterRewrite(const SplitPlan& p, int64_t lo, int64_t hi, std::map<std::string, Slab> slabs)
      : p_(p), lo_(lo), hi_(hi), slabs_(std::move(slabs)) {}
  using IRMutator::visit;

 protected:
  cir::Stmt visit(const cir::For* op) override {
    if (op->var != p_.var) return IRMutator::visit(op);
    return cir::make_for(op->var, cir::i64(lo_), cir::i64(std::min(hi_, op->hi.as<cir::IntImm>()->value)), op->step,
                         mutate(op->body), op->loop_kind, op->factor, op->span);
  }
  cir::Expr visit(const cir::Access* op) override {
    cir::Expr e = IRMutator::visit(op);
    const auto* a = e.as<cir::Access>();
    std::vector<cir::AxisSel> axes;
    if (!rebased(a->buffer, a->axes, &axes)) return e;
    return cir::Expr(std::make_shared<cir::Access>(a->buffer, axes, a->type, a->span));
  }
  cir::Stmt visit(const cir::Store* op) override {
    cir::Stmt s = IRMutator::visit(op);
    const auto* st = s.as<cir::Store>();
    std::vector<cir::AxisSel> axes;
    if (!rebased(st->buffer, st->axes, &axes)) return s;
    return cir::make_store(st->buffer, axes, st->value, st->span);
  }

 private:
  bool rebased(const std::string& buffer, const std::vector<cir::AxisSel>& in, std::vector<cir::AxisSel>* out) const {
    auto it = slabs_.find(buffer);
    if (it == slabs_.end() || it->second.whole() || it->second.lo == 0) return false;
    *out = in;
    cir::AxisSel& a = (*out)[static_cast<size_t>(it->second.axis)];
    a.index = a.index - cir::i64(it->second.lo);
    return true;
  }
  const SplitPlan& p_;
  int64_t lo_, hi_;
  std::map<std::string, Slab> slabs_;
};

int64_t extent(const cir::Param& p, int axis) { return p.type.shape[static_cast<size_t>(axis)].as<cir::IntImm>()->value; }

}  // namespace

std::optional<ScatteredShare> scatter_share(const cir::Kernel& k, const SplitPlan& p, int64_t first, int64_t end,
                                            int64_t owned_end) {
  if (end <= first) return std::nullopt;
  LoopIndexedAxes found(p.var);
  for (const cir::Stmt& s : k.body) found.include(s);
  int64_t lo = p.lo + first * p.step, last = p.lo + (end - 1) * p.step;
  ScatteredShare share;
  std::map<std::string, Slab> slabs;
  const cir::Param& outp = k.output();
  auto out_axes = found.axes.find(outp.name);
  if (found.unsliceable.count(outp.name) || out_axes == found.axes.end() || !out_axes->second.count(p.axis)) return std::nullopt;
  share.out = {p.axis, lo, owned_end};
  slabs[outp.name] = share.out;
  for (const cir::Param& param : k.params) {
    if (param.role != cir::ParamRole::Input) continue;
    Slab s;
    auto it = found.axes.find(param.name);
    if (it != found.axes.end() && !it->second.empty() && !found.unsliceable.count(param.name)) {
      int axis = *it->second.begin();
      // Only where every index the share reads lies inside the input (an
      // index past it stays the whole kernel's error).
      if (extent(param, axis) > last) s = {axis, lo, last + 1};
    }
    share.inputs.push_back(s);
    slabs[param.name] = s;
  }
  share.kernel = ScatterRewrite(p, lo, p.lo + end * p.step, slabs).mutate(k);
  for (cir::Param& param : share.kernel.params) {
    const Slab& s = slabs[param.name];
    if (!s.whole()) param.type.shape[static_cast<size_t>(s.axis)] = cir::i64(s.hi - s.lo);
  }
  cir::verify_or_throw(share.kernel, "scatter_share");
  return share;
}

namespace {

// Rows of a slab copy: `outer` runs of `run` bytes, `stride` bytes apart in
// the whole tensor, the first at `start`.
struct SlabLayout {
  int64_t outer = 1, run = 0, stride = 0, start = 0;
};

SlabLayout layout(const Shape& whole, DType t, const Slab& s) {
  int64_t inner = static_cast<int64_t>(dtype_size(t));
  SlabLayout l;
  for (int a = 0; a < s.axis; ++a) l.outer *= whole[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(s.axis) + 1; a < whole.size(); ++a) inner *= whole[a];
  l.run = (s.hi - s.lo) * inner;
  l.stride = whole[static_cast<size_t>(s.axis)] * inner;
  l.start = s.lo * inner;
  return l;
}

Shape slab_shape(Shape whole, const Slab& s) {
  whole[static_cast<size_t>(s.axis)] = s.hi - s.lo;
  return whole;
}

}  // namespace

Tensor take_slab(const Tensor& t, const Slab& s) {
  if (s.whole()) return t;
  SlabLayout l = layout(t.shape(), t.dtype(), s);
  if (l.outer == 1) return t.bytes_copy(static_cast<size_t>(l.start), t.dtype(), slab_shape(t.shape(), s));  // one run of bytes
  Tensor part = Tensor::for_overwrite(t.dtype(), slab_shape(t.shape(), s));
  part.set_device(t.device());
  const auto* from = static_cast<const unsigned char*>(t.data());
  auto* to = static_cast<unsigned char*>(part.data());
  for (int64_t o = 0; o < l.outer; ++o) std::memcpy(to + o * l.run, from + o * l.stride + l.start, static_cast<size_t>(l.run));
  return part;
}

void put_slab(const Tensor& part, Tensor& into, const Slab& s) {
  SlabLayout l = layout(into.shape(), into.dtype(), s);
  const auto* from = static_cast<const unsigned char*>(part.data());
  auto* to = static_cast<unsigned char*>(into.data());
  for (int64_t o = 0; o < l.outer; ++o) std::memcpy(to + o * l.stride + l.start, from + o * l.run, static_cast<size_t>(l.run));
}

}  // namespace zyntax
