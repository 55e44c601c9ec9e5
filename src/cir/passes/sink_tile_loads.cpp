#include "cir/passes/sink_tile_loads.hpp"

#include <set>
#include <string>

#include "cir/mutator.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

class Sink : public IRMutator {
 public:
  using IRMutator::mutate;
  using IRMutator::visit;

  Block mutate(const Block& in) override {
    Block b = IRMutator::mutate(in);
    // Last tile first: moving one changes no position before it.
    for (size_t a = b.size(); a-- > 0;) {
      if (a + 1 >= b.size()) continue;
      auto tile = b[a].as<Allocate>();
      if (!tile || tile->space != MemorySpace::Local || b[a + 1]->kind != StmtKind::For) continue;
      // The fill: writes the tile alone (and binds its own loop variables).
      const Stmt& fill = b[a + 1];
      std::set<std::string> own = binds(fill), fill_reads = reads(b[a]);  // the tile's shape too
      for (const std::string& n : reads(fill))
        if (!own.count(n)) fill_reads.insert(n);
      bool only_tile = writes(fill).count(tile->name) > 0;
      for (const std::string& w : writes(fill)) only_tile &= w == tile->name || own.count(w);
      if (!only_tile) continue;
      // Past every statement that neither touches the tile nor writes what the fill reads.
      size_t to = a + 2;
      for (; to < b.size(); ++to) {
        std::set<std::string> r = reads(b[to]), w = writes(b[to]);
        if (r.count(tile->name) || w.count(tile->name)) break;
        bool clash = false;
        for (const std::string& n : w) clash |= fill_reads.count(n) > 0;
        if (clash) break;
      }
      // Not past the end of the block (no reader: nothing gained), nor in place.
      if (to == b.size() || to == a + 2) continue;
      Block out;
      for (size_t i = 0; i < b.size(); ++i) {
        if (i == a || i == a + 1) continue;
        if (i == to) {
          out.push_back(b[a]);
          out.push_back(b[a + 1]);
        }
        out.push_back(b[i]);
      }
      b = std::move(out);
    }
    return b;
  }
};

}  // namespace

Kernel sink_tile_loads(const Kernel& k) {
  Kernel out = Sink().mutate(k);
  verify_or_throw(out, "sink_tile_loads");
  return out;
}

}  // namespace zyntax::cir
