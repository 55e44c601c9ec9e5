#include "cir/passes/gpu_row_registers.hpp"

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cir/equal.hpp"
#include "cir/mutator.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/printer.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// Registers all kept rows may take together, per thread.
constexpr int64_t kMostKeptElements = 2 * kMostRowElements;

std::optional<int64_t> constant(const Expr& e) {
  if (auto i = e.as<IntImm>()) return i->value;
  return std::nullopt;
}

// A thread loop of the row block, `for t in 0..T`, whose loop `inner`
// (a statement of its body) walks the row: `for j in t..C step T`.
struct RowLoop {
  size_t at;  // in the block's body
  const For* thread;
  size_t inner_at;  // in the thread loop's body
  const For* inner;
  int64_t threads, length;
};

std::optional<RowLoop> row_loop(const Stmt& s, size_t at) {
  auto thread = s.as<For>();
  if (!thread || thread->loop_kind != LoopKind::GpuThread || !constant(thread->lo) || *constant(thread->lo) != 0) return std::nullopt;
  std::optional<int64_t> threads = constant(thread->hi);
  if (!threads || *threads <= 0) return std::nullopt;
  std::optional<RowLoop> found;
  for (size_t i = 0; i < thread->body.size(); ++i) {
    auto inner = thread->body[i].as<For>();
    if (!inner || inner->loop_kind != LoopKind::Serial) continue;
    auto lo = inner->lo.as<Var>();
    std::optional<int64_t> length = constant(inner->hi), step = constant(inner->step);
    if (!lo || lo->name != thread->var || !length || !step || *step != *threads || *length < 0) continue;
    if (found) return std::nullopt;  // two walks of the row: left as they are
    found = RowLoop{at, thread, i, inner, *threads, *length};
  }
  return found;
}

// A row read: an access whose last index is the row loop's variable and
// whose others name neither it nor anything the thread loop declares.
std::string row_key(const Access& a, const RowLoop& loop, const std::set<std::string>& inside) {
  if (a.axes.empty()) return "";
  for (const AxisSel& s : a.axes)
    if (s.is_slice) return "";
  auto last = a.axes.back().index.as<Var>();
  if (!last || last->name != loop.inner->var) return "";
  std::string key = a.buffer + "[";
  for (size_t k = 0; k + 1 < a.axes.size(); ++k) {
    if (reads_any(a.axes[k].index, inside)) return "";
    key += print(a.axes[k].index) + ", ";
  }
  return key + "]";
}

struct RowReads : IRVisitor {
  using IRVisitor::visit;
  const RowLoop* loop = nullptr;
  std::set<std::string> inside;
  std::map<std::string, const Access*> rows;  // by key
  bool conditional = false;
  void visit(const Access* op) override {
    std::string key = row_key(*op, *loop, inside);
    if (!key.empty()) rows.emplace(key, op);
    IRVisitor::visit(op);
  }
  void visit(const If* op) override {
    conditional = true;
    IRVisitor::visit(op);
  }
};

// The row reads of `keys` replaced: by each key's value (the first loop) or
// its element of the thread's array.
class ReplaceRowReads : public IRMutator {
 public:
  ReplaceRowReads(const RowLoop& loop, const std::set<std::string>& inside, std::map<std::string, Expr> with)
      : loop_(loop), inside_(inside), with_(std::move(with)) {}
  using IRMutator::visit;

 protected:
  Expr visit(const Access* op) override {
    auto it = with_.find(row_key(*op, loop_, inside_));
    if (it != with_.end()) return it->second;
    return IRMutator::visit(op);
  }

 private:
  const RowLoop& loop_;
  const std::set<std::string>& inside_;
  std::map<std::string, Expr> with_;
};

class RowRegisters {
 public:
  explicit RowRegisters(const Kernel& k) : k_(k), fresh_(k) {}

  Kernel run() {
    auto block = k_.body.size() == 1 ? k_.body[0].as<For>() : nullptr;
    if (!block || block->loop_kind != LoopKind::GpuBlock) return k_;
    std::vector<RowLoop> loops;
    for (size_t i = 0; i < block->body.size(); ++i)
      if (std::optional<RowLoop> l = row_loop(block->body[i], i)) {
        int64_t per_thread = (l->length + l->threads - 1) / l->threads;
        if (per_thread >= 1 && per_thread <= kMostRowElements) loops.push_back(*l);
      }
    if (loops.empty()) return k_;

    // The rows worth keeping: inputs the kernel never stores into, read by
    // two loops or more that have no conditions, their other indices
    // naming nothing that changes within the block.
    std::set<std::string> inputs, stored = writes(Stmt(k_.body[0]));
    for (const Param& p : k_.params)
      if (p.role == ParamRole::Input) inputs.insert(p.name);
    std::set<std::string> changing = mutable_names(k_);
    std::vector<RowReads> reads_of(loops.size());
    std::map<std::string, int> loops_reading;
    std::set<std::string> unkeepable;
    for (size_t i = 0; i < loops.size(); ++i) {
      RowReads& r = reads_of[i];
      r.loop = &loops[i];
      r.inside = declared_in(*loops[i].thread);
      r.inside.insert(loops[i].thread->var);
      r.inside.insert(changing.begin(), changing.end());
      r.include(loops[i].inner->body);
      for (const auto& [key, access] : r.rows) {
        ++loops_reading[key];
        if (r.conditional || !inputs.count(access->buffer) || stored.count(access->buffer)) unkeepable.insert(key);
      }
    }
    std::map<std::string, std::string> kept;  // key -> thread-private array
    int64_t kept_elements = 0;
    for (const auto& [key, n] : loops_reading) {
      if (n < 2 || unkeepable.count(key)) continue;
      const RowLoop& first = loops[0];
      int64_t per_thread = (first.length + first.threads - 1) / first.threads;
      bool same_walk = true;  // every loop reading the row walks it alike
      for (size_t i = 0; i < loops.size(); ++i)
        if (reads_of[i].rows.count(key)) same_walk = same_walk && loops[i].threads == first.threads && loops[i].length == first.length;
      if (!same_walk || kept_elements + per_thread > kMostKeptElements) continue;
      kept_elements += per_thread;
      kept[key] = fresh_(reads_of[0].rows.count(key) ? reads_of[0].rows.at(key)->buffer + "%row" : "row");
    }

    Block body = block->body;
    std::set<std::string> loaded;  // kept rows already in their arrays
    std::vector<Stmt> allocations;
    for (size_t i = 0; i < loops.size(); ++i) {
      const RowLoop& l = loops[i];
      int64_t per_thread = (l.length + l.threads - 1) / l.threads;
      std::string k = fresh_(l.inner->var + "%k");
      Expr t = index_var(l.thread->var), kv = index_var(k);
      std::map<std::string, Expr> with;
      Block loads;
      for (const auto& [key, access] : reads_of[i].rows) {
        auto it = kept.find(key);
        if (it == kept.end()) continue;
        const std::string& array = it->second;
        Type array_type = Type::tensor(access->type.dtype, {i64(l.threads), i64(per_thread)});
        if (!loaded.count(key)) {
          allocations.push_back(make_allocate(array, array_type, MemorySpace::Local, l.thread->span));
          std::string v = fresh_(array + "%v");
          loads.push_back(make_let(v, make_access(access->buffer, param_type(access->buffer), access->axes, access->span), access->span));
          loads.push_back(make_store(array, {AxisSel::at(t), AxisSel::at(kv)}, Var::make(v, access->type), access->span));
          with[key] = Var::make(v, access->type);
          loaded.insert(key);
        } else {
          with[key] = make_access(array, array_type, {AxisSel::at(t), AxisSel::at(kv)}, access->span);
        }
      }
      std::set<std::string> inside = reads_of[i].inside;
      Block walk = ReplaceRowReads(l, inside, with).mutate(l.inner->body);
      walk.insert(walk.begin(), loads.begin(), loads.end());
      Block step = {make_let(l.inner->var, simplify(t + kv * i64(l.threads)), l.inner->span)};
      if (l.length % l.threads == 0) step.insert(step.end(), walk.begin(), walk.end());
      else step.push_back(make_if(less_than(index_var(l.inner->var), i64(l.length)), std::move(walk), {}, l.inner->span));
      Block thread_body = l.thread->body;
      thread_body[l.inner_at] = make_for(k, i64(0), i64(per_thread), i64(1), std::move(step), LoopKind::Unrolled, per_thread, l.inner->span);
      body[l.at] = make_for(l.thread->var, l.thread->lo, l.thread->hi, l.thread->step, std::move(thread_body), LoopKind::GpuThread,
                            l.thread->factor, l.thread->span);
    }
    body.insert(body.begin(), allocations.begin(), allocations.end());
    Kernel out = k_;
    out.body = {make_for(block->var, block->lo, block->hi, block->step, std::move(body), LoopKind::GpuBlock, block->factor, block->span)};
    verify_or_throw(out, "gpu_row_registers");
    return out;
  }

 private:
  const Type& param_type(const std::string& name) const {
    for (const Param& p : k_.params)
      if (p.name == name) return p.type;
    throw std::logic_error("gpu_row_registers: no parameter " + name);
  }

  const Kernel& k_;
  FreshNames fresh_;
};

}  // namespace

Kernel gpu_row_registers(const Kernel& k) { return RowRegisters(k).run(); }

}  // namespace zyntax::cir
