#include "cir/passes/schedule_gpu_tiles.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cir/equal.hpp"
#include "cir/equal_everywhere.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/gpu_register_blocks.hpp"
#include "cir/passes/gpu_row_invariants.hpp"
#include "cir/passes/gpu_split_folds.hpp"
#include "cir/passes/gpu_tile_products.hpp"
#include "cir/passes/place_shared_arrays.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// What a loop nest holds: allocations (then it is a loop of the block, not
// a nest), statements no nest may hold, stores, every access of each array,
// and the vars it assigns.
class NestContents : public IRVisitor {
 public:
  explicit NestContents(const Stmt& s) { include(s); }

  bool allocates = false, scheduled = false;
  std::map<std::string, std::vector<const std::vector<AxisSel>*>> accesses;  // by array, stores and reads
  std::set<std::string> stored, assigned;

  using IRVisitor::visit;

 protected:
  void visit(const Allocate*) override { allocates = true; }
  void visit(const Yield*) override { scheduled = true; }
  void visit(const Atomic*) override { scheduled = true; }
  void visit(const Barrier*) override { scheduled = true; }
  void visit(const BlockReduce*) override { scheduled = true; }
  void visit(const MatMulBlock*) override { scheduled = true; }
  void visit(const TileMma*) override { scheduled = true; }
  void visit(const AsyncCopy*) override { scheduled = true; }
  void visit(const For* op) override {
    if (op->loop_kind != LoopKind::Serial) scheduled = true;
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    stored.insert(op->buffer);
    accesses[op->buffer].push_back(&op->axes);
    IRVisitor::visit(op);
  }
  void visit(const Access* op) override {
    accesses[op->buffer].push_back(&op->axes);
    IRVisitor::visit(op);
  }
  void visit(const Assign* op) override {
    assigned.insert(op->name);
    IRVisitor::visit(op);
  }
};

bool same_index(const std::vector<AxisSel>& a, const std::vector<AxisSel>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].is_slice || b[i].is_slice || !equal(a[i].index, b[i].index)) return false;
  return true;
}

// Whether the iterations of `nest` over `vars` (its own variable, and that
// of the loop directly inside) are independent: no var from outside
// assigned, and each array stored to accessed at one index only, which has
// for each of `vars` an axis moving with it alone (so two iterations never
// reach one element).
bool independent(const For& nest, const NestContents& c, const std::vector<std::string>& vars) {
  std::set<std::string> inside = declared_in(nest);
  for (const std::string& v : c.assigned)
    if (!inside.count(v)) return false;
  for (const std::string& array : c.stored) {
    const auto& all = c.accesses.at(array);
    for (const std::vector<AxisSel>* axes : all)
      if (!same_index(*all[0], *axes)) return false;
    for (const std::string& v : vars) {
      bool moves = false;
      for (const AxisSel& a : *all[0]) moves = moves || loop_coefficient(a.index, v, inside).value_or(0) != 0;
      if (!moves) return false;
    }
  }
  return true;
}

int64_t next_power_of_two(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

class TileScheduler {
 public:
  // `tf32_units`: the block's matrix units take TF32 factors; `factors`:
  // the tiles laid out for them (matrix_factor_layout).
  TileScheduler(const Kernel& k, int threads, int subgroup, bool tf32_units, std::set<std::string> factors)
      : k_(k), threads_(threads), subgroup_(subgroup), tf32_units_(tf32_units), factors_(std::move(factors)), fresh_(k), lets_(resolved_lets(k)) {}

  // The tiles a tile product would read on the matrix units, were they laid
  // out for them.
  const std::set<std::string>& wanted_factors() const { return wanted_; }

  std::optional<Kernel> run(std::string* why_not) {
    auto outer = k_.body.size() == 1 ? k_.body[0].as<For>() : nullptr;
    std::optional<Block> body;
    if (!outer || outer->loop_kind != LoopKind::Parallel) why_ = "the kernel is not one parallel loop";
    else if (threads_ <= 0 || threads_ % subgroup_ != 0) why_ = "blocks of whole subgroups only";
    else {
      loops_.push_back(outer);
      body = block(outer->body, {});
    }
    if (body && tiles_.empty()) body.reset(), why_ = "no tile arrays";
    if (!body) {
      if (why_not) *why_not = why_;
      return std::nullopt;
    }
    // The next iteration the block runs writes the same shared arrays.
    end_with_barrier(*body);
    Kernel out = k_;
    out.body = {make_for(outer->var, outer->lo, outer->hi, outer->step, std::move(*body), LoopKind::GpuBlock, 0, outer->span)};
    verify_or_throw(out, "schedule_gpu_tiles");
    return place_shared_arrays(out);
  }

 private:
  // A block of statements every thread runs; `constants` are the lets of
  // enclosing blocks bound to integer literals.
  std::optional<Block> block(const Block& in, std::map<std::string, int64_t> constants) {
    Block out;
    for (const Stmt& s : in) {
      if (!why_.empty()) return std::nullopt;
      switch (s->kind) {
        case StmtKind::Let: {
          auto l = s.as<Let>();
          if (auto c = l->value.as<IntImm>()) constants[l->name] = c->value;
          everyone(out, s);
          break;
        }
        case StmtKind::Decl:
          if (!s.as<Decl>()->type.is_scalar()) return give_up("a tile var");
          everyone(out, s);
          break;
        case StmtKind::Assign:
        case StmtKind::Check: everyone(out, s); break;
        case StmtKind::Allocate: {
          auto a = s.as<Allocate>();
          if (a->space != MemorySpace::Local || a->capacity <= 0) return give_up("an array that is not a tile of constant capacity");
          out.push_back(shared_tile(*a, constants));
          break;
        }
        case StmtKind::Store:
        case StmtKind::If: {
          NestContents c(s);
          if (c.allocates || c.scheduled) return give_up("a condition around tiles");
          if (c.stored.empty()) everyone(out, s);
          else if (!c.assigned.empty()) return give_up("a statement that both stores and assigns a var");
          else storing(out, c, make_for(fresh_("once%t"), i64(0), i64(1), i64(1), {s}, LoopKind::GpuThread, 0, s->span));
          break;
        }
        case StmtKind::For: {
          const For& f = *s.as<For>();
          NestContents c(s);
          if (c.allocates) {
            if (f.loop_kind != LoopKind::Serial) return give_up("a loop over tiles that is not serial");
            // A loop of the block (over key blocks, say): every thread runs
            // it, its nests shared out in turn. What was read before it may
            // be overwritten inside, and each iteration's reads come before
            // the next one's writes.
            if (!read_.empty()) barrier(out);
            loops_.push_back(&f);
            std::optional<Block> body = block(f.body, constants);
            loops_.pop_back();
            if (!body) return std::nullopt;
            end_with_barrier(*body);
            out.push_back(make_for(f.var, f.lo, f.hi, f.step, std::move(*body), LoopKind::Serial, 0, f.span));
            break;
          }
          if (c.scheduled) return give_up("a loop already scheduled");
          if (c.stored.empty()) {
            everyone(out, s);  // a fold into vars: every thread computes the same values
            break;
          }
          for (const std::string& v : c.assigned)
            if (!declared_in(f).count(v)) return give_up("a loop that both stores and assigns a var from outside");
          if (on_matrix_units(out, f, constants) || split_among_threads(out, f, c, constants)) break;
          nest_over_threads(out, s, constants);
          break;
        }
        default: return give_up(std::string("a statement the tile schedule does not place"));
      }
    }
    if (!why_.empty()) return std::nullopt;
    return out;
  }

  // The nest over its threads: two loops as a grid of rows by columns, a warp
  // along a row; else its one loop, a row per thread; else in the first thread.
  Stmt shared_out(const Stmt& nest, const NestContents& c, const std::map<std::string, int64_t>& constants) {
    const For& f = *nest.as<For>();
    const For* inner = f.body.size() == 1 ? f.body[0].as<For>() : nullptr;
    std::set<std::string> declared = declared_in(f);
    declared.erase(inner ? inner->var : "");
    if (inner && inner->loop_kind == LoopKind::Serial && !reads_any(inner->lo, declared) && !reads_any(inner->hi, declared) &&
        !reads_any(inner->step, declared) && independent(f, c, {f.var, inner->var})) {
      std::optional<int64_t> row_trips = trips(f, constants), col_trips = trips(*inner, constants);
      // A tile product of at least 16 by 16 outputs: a block of them per
      // thread, in registers, as many as the largest tile needs.
      if (std::optional<DotProductNest> dots = dot_product_nest(f);
          dots && threads_ % kRegisterColumns == 0 && row_trips.value_or(16) >= 16 && col_trips.value_or(16) >= 16) {
        auto block_of = [&](const For& loop, int64_t threads_along) {
          std::optional<int64_t> most = largest_everywhere(simplify(loop.hi - loop.lo), loops_, lets_);
          if (!most) return kRegisterBlock;
          return std::clamp<int64_t>((*most + threads_along - 1) / threads_along, 1, kRegisterBlock);
        };
        return register_blocked(*dots, threads_, fresh_, block_of(f, threads_ / kRegisterColumns), block_of(*inner, kRegisterColumns));
      }
      int64_t columns = subgroup_;
      if (col_trips) columns = std::min<int64_t>(subgroup_, next_power_of_two(std::max<int64_t>(*col_trips, 1)));
      int64_t rows = threads_ / columns;
      std::string t = fresh_(f.var + "%t");
      std::string row = fresh_(t + "%row"), col = fresh_(t + "%col");
      Stmt cols = make_for(inner->var, simplify(inner->lo + index_var(col) * inner->step), inner->hi, simplify(i64(columns) * inner->step),
                           inner->body, LoopKind::Serial, 0, inner->span);
      Stmt rows_loop = make_for(f.var, simplify(f.lo + index_var(row) * f.step), f.hi, simplify(i64(rows) * f.step), {cols}, LoopKind::Serial, 0, f.span);
      Block body = {make_let(row, simplify(index_var(t) / i64(columns)), f.span), make_let(col, mod(index_var(t), columns), f.span), rows_loop};
      return make_for(t, i64(0), i64(threads_), i64(1), std::move(body), LoopKind::GpuThread, 0, f.span);
    }
    if (independent(f, c, {f.var})) return strided_thread_loop(f, f.body, fresh_(f.var + "%t"), threads_, i64(0), i64(threads_));
    return make_for(fresh_("once%t"), i64(0), i64(1), i64(1), {nest}, LoopKind::GpuThread, 0, f.span);
  }

  // A tile product of shared tiles on the block's matrix units
  // (gpu_tile_products), where the units take its factors (TF32: exact
  // values, or by the kernel's permission) and the tiles are laid out for
  // them; else false, having noted the tiles it wants so laid out.
  bool on_matrix_units(Block& out, const For& nest, const std::map<std::string, int64_t>& constants) {
    if (!tf32_units_ || threads_ % 32 != 0) return false;
    std::optional<DotProductNest> dots = dot_product_nest(nest);
    std::optional<TileProductFactors> f = dots ? tile_product_factors(*dots) : std::nullopt;
    if (!f || !tiles_.count(f->a) || !tiles_.count(f->b)) return false;
    f->a_exact = holds_tf32_values(k_, f->a);
    f->b_exact = holds_tf32_values(k_, f->b);
    if (!k_.hints.tf32 && !(f->a_exact && f->b_exact)) return false;
    auto most = [&](const For& loop) { return largest_everywhere(simplify(loop.hi - loop.lo), loops_, lets_); };
    std::optional<int64_t> rows = most(*dots->rows), cols = most(*dots->cols), depth = most(*dots->terms);
    if (!rows || !cols || !depth || *rows < kMatrixPieceRows || *cols < kMatrixPieceCols || *depth < 1) return false;
    if (!factors_.count(f->a) || !factors_.count(f->b)) {
      wanted_.insert(f->a);
      wanted_.insert(f->b);
      return false;
    }
    TileProductShape shape{*rows, *cols, *depth, false, tile_types_.at(f->a), tile_types_.at(f->b)};
    std::optional<int64_t> whole = value(dots->terms->hi, constants);
    shape.depth_always_whole = whole && *whole == *depth && *depth % kMatrixPieceDepthTf32 == 0;
    std::optional<TileProductSteps> steps = tile_product_on_matrix_units(*dots, *f, shape, threads_ / 32, fresh_);
    if (!steps) return false;
    for (const Stmt& zero : steps->zero_tails) {
      NestContents c(zero);
      storing(out, c, shared_out(zero, c, constants));
    }
    // The factors' last writes are behind a barrier (storing ends with one).
    for (const Stmt& s : steps->matrix_steps) out.push_back(s);
    barrier(out);
    nest_over_threads(out, steps->epilogue, constants);
    return true;
  }

  // A nest that stores, shared out over the threads, its costly row
  // invariants first computed once per row (gpu_row_invariants).
  void nest_over_threads(Block& out, const Stmt& nest, const std::map<std::string, int64_t>& constants) {
    NestContents c(nest);
    const For& f = *nest.as<For>();
    std::optional<int64_t> rows = largest_everywhere(simplify(f.hi - f.lo), loops_, lets_);
    std::set<std::string> changing = c.stored;
    changing.insert(c.assigned.begin(), c.assigned.end());
    std::optional<RowInvariants> hoisted = rows ? hoist_row_invariants(f, changing, *rows, fresh_) : std::nullopt;
    if (!hoisted) return storing(out, c, shared_out(nest, c, constants));
    for (const Stmt& column : hoisted->columns) out.push_back(column);
    for (const Stmt& fill : hoisted->fills) {
      NestContents fc(fill);
      storing(out, fc, shared_out(fill, fc, constants));
    }
    NestContents hc(hoisted->nest);
    storing(out, hc, shared_out(hoisted->nest, hc, constants));
  }

  // A nest of folds with fewer outputs than threads, each output's terms
  // split over several threads (gpu_split_folds), where its iterations are
  // independent.
  bool split_among_threads(Block& out, const For& nest, const NestContents& c, const std::map<std::string, int64_t>& constants) {
    std::optional<DotProductNest> dots = dot_product_nest(nest);
    if (!dots || !independent(nest, c, {dots->rows->var, dots->cols->var})) return false;
    auto most = [&](const For& loop) { return largest_everywhere(simplify(loop.hi - loop.lo), loops_, lets_); };
    std::optional<int64_t> rows = most(*dots->rows), cols = most(*dots->cols), terms = most(*dots->terms);
    if (!rows || !cols || !terms) return false;
    std::optional<SplitFold> split = split_fold(*dots, *rows, *cols, *terms, threads_, fresh_);
    if (!split) return false;
    out.push_back(split->partials);
    NestContents partials(split->threads);
    storing(out, partials, split->threads);
    NestContents combine(split->combine);
    storing(out, combine, shared_out(split->combine, combine, constants));
    return true;
  }

  // A local tile as the block's shared array. A row length that is an even
  // constant gets a column of padding: then the rows start in different
  // banks, and a warp reading down a column does not wait on one bank. A
  // matrix-unit factor takes that layout instead, at its largest extents.
  Stmt shared_tile(const Allocate& a, const std::map<std::string, int64_t>& constants) {
    tiles_.insert(a.name);
    Type type = a.type;
    int64_t capacity = a.capacity;
    bool for_matrix_units = false;
    if (factors_.count(a.name) && type.shape.size() == 2) {
      std::optional<int64_t> rows = largest_everywhere(type.shape[0], loops_, lets_), cols = largest_everywhere(type.shape[1], loops_, lets_);
      if (rows && cols) {
        type = matrix_factor_layout(type, *rows, *cols);
        capacity = 0;  // its shape is constant
        for_matrix_units = true;
      }
    }
    if (!for_matrix_units && type.shape.size() == 2) {
      std::optional<int64_t> row = value(type.shape[1], constants);
      if (row && *row > 0 && *row % 2 == 0 && capacity % *row == 0) {
        type.shape[1] = i64(*row + 1);
        capacity = capacity / *row * (*row + 1);
      }
    }
    tile_types_[a.name] = type;
    return make_allocate(a.name, type, MemorySpace::Shared, a.span, capacity);
  }

  // A statement every thread runs alike: what it reads of the block's
  // arrays must not be overwritten before a barrier.
  void everyone(Block& out, const Stmt& s) {
    for (const std::string& name : reads(s))
      if (tiles_.count(name) || name == k_.output().name) read_.insert(name);
    out.push_back(s);
  }

  // A statement whose threads store: after a barrier where it overwrites
  // what every thread read, and followed by one, as its stores are read next.
  void storing(Block& out, const NestContents& c, Stmt s) {
    for (const std::string& name : c.stored)
      if (read_.count(name)) {
        barrier(out);
        break;
      }
    out.push_back(std::move(s));
    barrier(out);
  }

  void barrier(Block& out) {
    out.push_back(make_barrier());
    read_.clear();
  }

  void end_with_barrier(Block& b) {
    if (b.empty() || b.back()->kind != StmtKind::Barrier) barrier(b);
  }

  // How many iterations `f` runs, when its bounds are constants.
  static std::optional<int64_t> trips(const For& f, const std::map<std::string, int64_t>& constants) {
    std::optional<int64_t> lo = value(f.lo, constants), hi = value(f.hi, constants), step = value(f.step, constants);
    if (!lo || !hi || !step || *step <= 0) return std::nullopt;
    return std::max<int64_t>((*hi - *lo + *step - 1) / *step, 0);
  }

  static std::optional<int64_t> value(const Expr& e, const std::map<std::string, int64_t>& constants) {
    if (auto c = e.as<IntImm>()) return c->value;
    if (auto v = e.as<Var>(); v && constants.count(v->name)) return constants.at(v->name);
    return std::nullopt;
  }

  std::optional<Block> give_up(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return std::nullopt;
  }

  const Kernel& k_;
  int threads_;
  int subgroup_;  // threads of a subgroup (a warp): a row's columns take one at most
  bool tf32_units_;
  std::set<std::string> factors_, wanted_;  // tiles laid out for the matrix units; tiles products want so
  FreshNames fresh_;
  std::string why_;
  std::set<std::string> tiles_;  // the shared arrays made of tiles
  std::map<std::string, Type> tile_types_;  // their shared layouts
  std::set<std::string> read_;   // the block's arrays read by every thread since the last barrier
  Substitution lets_;              // the kernel's lets bound once, for the tiles' largest extents
  std::vector<const For*> loops_;  // the block loop and the serial loops of the block around
};

}  // namespace

std::optional<Kernel> schedule_gpu_tiles(const Kernel& k, const GpuTarget& target, int threads, std::string* why_not, bool matrix_units) {
  // A tile a product wants on the matrix units is laid out for them when
  // allocated, before the product is met: once the products are known, the
  // kernel is scheduled again with their tiles so laid out.
  bool tf32 = matrix_units && target.matrix_units.tf32 && target.subgroup_size == 32;
  std::set<std::string> factors;
  for (;;) {
    TileScheduler scheduler(k, threads, target.subgroup_size, tf32, factors);
    std::optional<Kernel> out = scheduler.run(why_not);
    size_t known = factors.size();
    factors.insert(scheduler.wanted_factors().begin(), scheduler.wanted_factors().end());
    if (!out || factors.size() == known) return out;
  }
}

}  // namespace zyntax::cir
