#include "cir/passes/place_shared_arrays.hpp"

#include <algorithm>
#include <map>

#include "cir/mutator.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

bool ends_with_barrier(const Block& b) { return !b.empty() && b.back()->kind == StmtKind::Barrier; }

// The life of each shared array of a GPU block, in barrier intervals.
class SharedLives : public IRVisitor {
 public:
  struct Life {
    std::string name;
    int64_t bytes = 0;          // its footprint in the block's shared memory
    int64_t first = 0, last = 0;  // barrier intervals: allocated, last touched
    int64_t touched = 0;          // when it was last touched, counted in touches
  };
  std::vector<Life> lives;  // in the order of their allocations
  bool placeable = true;

  using IRVisitor::visit;

 protected:
  void visit(const Barrier*) override {
    if (under_condition_) placeable = false;
    ++interval_;
  }
  void visit(const Allocate* op) override {
    if (op->space != MemorySpace::Shared) return;
    int64_t bytes = allocation_bytes(*op);
    if (bytes < 0 || index_.count(op->name)) {
      placeable = false;  // a size known only at run time, or a name allocated twice
      return;
    }
    index_[op->name] = lives.size();
    lives.push_back({op->name, shared_footprint(bytes), interval_, interval_});
  }
  void visit(const Access* op) override {
    touch(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    touch(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const For* op) override {
    int64_t touches = touches_;
    size_t before = lives.size();
    IRVisitor::visit(op);
    // Each iteration touches again what the loop touched of the arrays from
    // before it: they live to its end (to its last barrier, where that ends
    // the body).
    int64_t end = ends_with_barrier(op->body) ? interval_ - 1 : interval_;
    for (size_t i = 0; i < before; ++i)
      if (lives[i].touched > touches) lives[i].last = std::max(lives[i].last, end);
    // The arrays of one iteration share bytes with those of the next only
    // past a barrier that ends the body.
    if (lives.size() > before && !ends_with_barrier(op->body)) placeable = false;
  }
  void visit(const If* op) override {
    ++under_condition_;
    IRVisitor::visit(op);
    --under_condition_;
  }
  // A tensor-core step reads its factors and writes its destination where
  // it stands, like a nest (barriers separate it from the threads' accesses).
  void visit(const TileMma* op) override {
    if (op->step == TileMma::Step::Accumulate) touch(op->a), touch(op->b);
    if (op->step == TileMma::Step::Store) touch(op->d);
  }
  // Statements that reach arrays other than by loads and stores.
  void visit(const BlockReduce*) override { placeable = false; }
  void visit(const AsyncCopy*) override { placeable = false; }  // writes land at a later wait
  void visit(const WarpgroupProduct*) override { placeable = false; }
  void visit(const WarpgroupAttention*) override { placeable = false; }
  void visit(const MatMulBlock*) override { placeable = false; }
  void visit(const Atomic*) override { placeable = false; }

 private:
  void touch(const std::string& name) {
    if (auto it = index_.find(name); it != index_.end()) {
      lives[it->second].last = interval_;
      lives[it->second].touched = ++touches_;
    }
  }

  int64_t interval_ = 0, touches_ = 0;
  int under_condition_ = 0;
  std::map<std::string, size_t> index_;
};

// Each array at the lowest offset clear of the placed arrays whose lives
// meet its own: the largest first (small arrays then fill the gaps between
// large ones, rather than splitting the room a large one needs), in the
// order of allocation among equals.
std::map<std::string, int64_t> first_fit(const std::vector<SharedLives::Life>& lives) {
  std::vector<size_t> order(lives.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return lives[x].bytes > lives[y].bytes; });
  std::map<std::string, int64_t> offsets;
  std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end) of the placed arrays alive with this one
  for (size_t n = 0; n < order.size(); ++n) {
    const SharedLives::Life& x = lives[order[n]];
    taken.clear();
    for (size_t m = 0; m < n; ++m) {
      const SharedLives::Life& y = lives[order[m]];
      if (y.last >= x.first && x.last >= y.first) taken.emplace_back(offsets.at(y.name), offsets.at(y.name) + y.bytes);
    }
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (const auto& [begin, end] : taken) {
      if (at + x.bytes <= begin) break;
      at = std::max(at, end);
    }
    offsets[x.name] = at;
  }
  return offsets;
}

class Place : public IRMutator {
 public:
  explicit Place(const std::map<std::string, int64_t>& offsets) : offsets_(offsets) {}
  using IRMutator::visit;
  Stmt visit(const Allocate* op) override {
    auto it = offsets_.find(op->name);
    if (it == offsets_.end()) return IRMutator::visit(op);
    return make_allocate(op->name, op->type, op->space, op->span, op->capacity, it->second);
  }

 private:
  const std::map<std::string, int64_t>& offsets_;
};

}  // namespace

Kernel place_shared_arrays(const Kernel& k) {
  auto block = k.body.size() == 1 ? k.body[0].as<For>() : nullptr;
  // A block runs its next iteration in the same shared memory: only past
  // the barrier that ends its body.
  if (!block || block->loop_kind != LoopKind::GpuBlock || !ends_with_barrier(block->body)) return k;
  SharedLives lives;
  lives.include(block->body);
  if (!lives.placeable || lives.lives.empty()) return k;
  std::map<std::string, int64_t> offsets = first_fit(lives.lives);
  int64_t end_to_end = 0, placed = 0;
  for (const SharedLives::Life& l : lives.lives) {
    end_to_end += l.bytes;
    placed = std::max(placed, offsets.at(l.name) + l.bytes);
  }
  if (placed >= end_to_end) return k;
  Kernel out = Place(offsets).mutate(k);
  verify_or_throw(out, "place_shared_arrays");
  return out;
}

}  // namespace zyntax::cir
