#include "cir/passes/map_in_place.hpp"

#include <optional>
#include <set>
#include <string>

#include "cir/mutator.hpp"
#include "cir/passes/element_maps.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

// Reads and writes of one array made of another.
class RenameArray : public IRMutator {
 public:
  RenameArray(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  using IRMutator::visit;

 protected:
  Expr visit(const Access* op) override {
    Expr e = IRMutator::visit(op);
    if (op->buffer != from_) return e;
    const Access* a = e.as<Access>();
    return Expr(std::make_shared<Access>(to_, a->axes, a->type, a->span));
  }
  Stmt visit(const Store* op) override {
    Stmt s = IRMutator::visit(op);
    if (op->buffer != from_) return s;
    const Store* st = s.as<Store>();
    return make_store(to_, st->axes, st->value, st->span);
  }

 private:
  std::string from_, to_;
};

const Allocate* local_array(const Stmt& s) {
  auto a = s.as<Allocate>();
  return a && a->space == MemorySpace::Local && a->type.shape.size() == 2 ? a : nullptr;
}

class InPlace : public ExtentAwareMutator {
 public:
  using ExtentAwareMutator::ExtentAwareMutator;
  using IRMutator::mutate;

  Block mutate(const Block& in) override {
    Block b = IRMutator::mutate(in);
    for (size_t m = 0; m < b.size(); ++m)
      if (std::optional<Block> done = in_place_at(b, m)) b = std::move(*done);
    return b;
  }

 private:
  // The block with the map at `m` written over its source, where it can be.
  std::optional<Block> in_place_at(const Block& b, size_t m) const {
    std::optional<ElementMap> map = element_map(b[m]);
    if (!map) return std::nullopt;
    const std::string& target = map->store->buffer;
    SameExtent same = same_extent(b, m);
    std::optional<size_t> t;
    for (size_t i = 0; i < m; ++i)
      if (const Allocate* a = local_array(b[i]); a && a->name == target) t = i;
    if (!t || reads(map->store->value).count(target)) return std::nullopt;
    for (size_t i = *t + 1; i < m; ++i)
      if (reads(b[i]).count(target) || writes(b[i]).count(target)) return std::nullopt;
    const Allocate& into = *b[*t].as<Allocate>();
    std::set<std::string> read = reads(map->store->value);
    for (size_t s = 0; s < *t; ++s) {
      const Allocate* source = local_array(b[s]);
      // (Shapes read at two allocations: equal only if nothing between can change them.)
      if (!source || !read.count(source->name) || source->type.dtype != into.type.dtype || source->capacity < into.capacity ||
          !unchanging(source->type.shape[0]) || !unchanging(source->type.shape[1]) || !unchanging(into.type.shape[0]) ||
          !unchanging(into.type.shape[1]) || !same(source->type.shape[0], into.type.shape[0]) || !same(source->type.shape[1], into.type.shape[1]) ||
          !same(map->rows->hi, source->type.shape[0]) || !same(map->cols->hi, source->type.shape[1]) ||
          !reads_only_element(map->store->value, source->name, *map, same))
        continue;
      bool read_after = false;
      for (size_t i = m + 1; i < b.size() && !read_after; ++i) read_after = reads(b[i]).count(source->name) > 0;
      if (read_after) continue;
      Block out(b.begin(), b.begin() + *t);
      RenameArray rename(target, source->name);
      for (size_t i = *t + 1; i < b.size(); ++i) out.push_back(rename.mutate(b[i]));
      return out;
    }
    return std::nullopt;
  }
};

}  // namespace

Kernel map_in_place(const Kernel& k) {
  Kernel out = InPlace(k).mutate(k);
  verify_or_throw(out, "map_in_place");
  return out;
}

}  // namespace zyntax::cir
