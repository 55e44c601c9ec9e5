#include "cir/passes/interchange_reductions.hpp"

#include "cir/affine.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// Arrays larger than this stay as they are (the accumulators live on the stack).
constexpr int64_t kMaxAccumulatorBytes = 64 << 10;

// One loop of the reduction nest, its range with the nest's lets inlined.
struct NestLoop {
  const For* loop;
  Expr lo, hi, step;
};

// What a running value is updated by: `s = s op term` under loops, possibly
// inside one `if guard`, with the lets on the way inlined into the range of
// each inner loop, the guard and the term.
struct ReductionNest {
  std::vector<NestLoop> loops;  // outermost first
  Expr guard;                   // undefined when there is none
  const Assign* assign = nullptr;
  BinaryOp op = BinaryOp::Add;
  Expr term;
};

// The lets at the front of a block go into `lets`; returns the statement
// after them when it is the last one.
const Stmt* after_lets(const Block& b, Substitution& lets) {
  if (b.empty()) return nullptr;
  for (size_t i = 0; i + 1 < b.size(); ++i) {
    auto l = b[i].as<Let>();
    if (!l) return nullptr;
    lets[l->name] = substitute(l->value, lets);
  }
  return &b.back();
}

std::optional<ReductionNest> match_nest(const Stmt& first, const std::string& s) {
  ReductionNest n;
  Substitution lets;
  // Inlining drops a let nobody reads, and with it an access the reference
  // would check: such nests stay as they are.
  std::set<std::string> read = reads(first);
  const Stmt* cur = &first;
  while (auto f = cur->as<For>()) {
    n.loops.push_back({f, substitute(f->lo, lets), substitute(f->hi, lets), substitute(f->step, lets)});
    cur = after_lets(f->body, lets);
    if (!cur) return std::nullopt;
  }
  if (n.loops.empty()) return std::nullopt;
  if (auto i = cur->as<If>()) {
    if (!i->else_body.empty()) return std::nullopt;
    n.guard = substitute(i->cond, lets);
    cur = after_lets(i->then_body, lets);
    if (!cur) return std::nullopt;
  }
  auto assign = cur->as<Assign>();
  if (!assign || assign->name != s) return std::nullopt;
  auto op = assign->value.as<Binary>();
  if (!op || (op->op != BinaryOp::Add && op->op != BinaryOp::Mul && op->op != BinaryOp::Min && op->op != BinaryOp::Max))
    return std::nullopt;
  auto self = op->a.as<Var>();
  if (!self || self->name != s) return std::nullopt;
  for (const auto& [name, value] : lets)
    if (!read.count(name)) return std::nullopt;
  n.assign = assign;
  n.op = op->op;
  n.term = substitute(op->b, lets);
  return n;
}

// A loop that unrolls whole: constant bounds, at most this many trips.
constexpr int64_t kMaxUnrolledTrips = 8;

bool short_constant_range(const NestLoop& l) {
  auto lo = l.lo.as<IntImm>(), hi = l.hi.as<IntImm>(), step = l.step.as<IntImm>();
  return lo && hi && step && step->value == 1 && hi->value - lo->value <= kMaxUnrolledTrips;
}

// A plain reduction over fewer columns than this stays as it is (see rewrite).
constexpr int64_t kMinColumns = 4;

// Below this many columns an accumulator row stays in registers anyway.
constexpr int64_t kMinJammedTrips = 16;

// Whether every access of `term` that reads `j` reads it in its last axis
// alone, with a coefficient of at most kMaxStride: then j innermost walks
// adjacent elements, or every second one (a depthwise convolution of stride
// 2), which vectorise. A term that reads j along another axis (a row sum's
// x[j, k]) keeps its own loop innermost, where it already runs along a row
// and vectorises as a running sum; turned inside out it strode across rows
// on one thread (4096x1000: 17x slower than PyTorch's row sum).
constexpr uint64_t kMaxStride = 4;

bool runs_along(const Expr& term, const std::string& j) {
  struct Accesses : IRVisitor {
    const std::string& j;
    bool ok = true;
    explicit Accesses(const std::string& v) : j(v) {}
    void visit(const Access* op) override {
      for (size_t d = 0; d < op->axes.size(); ++d) {
        const AxisSel& a = op->axes[d];
        for (const Expr& e : {a.index, a.lo, a.hi}) {
          if (!e.defined() || !reads_any(e, {j})) continue;
          if (d + 1 != op->axes.size() || a.is_slice || !is_i64_scalar(e)) {
            ok = false;
            continue;
          }
          Affine f = linearize(e);
          auto t = f.terms.find(j);
          bool unit = t != f.terms.end() && t->second.coeff >= 1 && t->second.coeff <= kMaxStride && t->second.expr.as<Var>();
          for (const auto& [name, other] : f.terms)
            if (name != j && reads_any(other.expr, {j})) unit = false;
          if (!unit) ok = false;
        }
      }
      IRVisitor::visit(op);
    }
  } accesses(j);
  accesses.include(term);
  return accesses.ok;
}

class Interchange {
 public:
  Interchange(int jam, int64_t tasks) : jam_(jam), tasks_(std::max<int64_t>(tasks, 1)) {}

  Block block(const Block& b) {
    Block out;
    for (const Stmt& s : b) {
      if (auto f = s.as<For>()) {
        if (rewrite(*f, out)) continue;
        bool outer = in_task_;
        in_task_ = in_task_ || f->loop_kind == LoopKind::Parallel;
        Block body = block(f->body);
        in_task_ = outer;
        out.push_back(make_for(f->var, f->lo, f->hi, f->step, std::move(body), f->loop_kind, f->factor, f->span));
      } else if (auto i = s.as<If>()) {
        out.push_back(make_if(i->cond, block(i->then_body), block(i->else_body), i->span));
      } else {
        out.push_back(s);
      }
    }
    return out;
  }

 private:
  std::string fresh(const std::string& base) { return base + "%" + std::to_string(counter_++); }

  // The most iterations j's range can have: its extent, or for a block of
  // it (lo..min(lo + W, N), as widen_task_loop makes), W.
  static std::optional<int64_t> most_trips(const For& f) {
    if (auto e = constant_value(simplify(f.hi - f.lo))) return *e;
    if (auto m = f.hi.as<Binary>(); m && m->op == BinaryOp::Min) {
      std::optional<int64_t> a = constant_value(simplify(m->a - f.lo)), b = constant_value(simplify(m->b - f.lo));
      if (a && b) return std::min(*a, *b);
      return a ? a : b;
    }
    return std::nullopt;
  }

  // for j: { var s = init; <reduction nest updating s>; store ... s ... }
  bool rewrite(const For& f, Block& out) {
    if (f.loop_kind == LoopKind::Parallel && !in_task_) return rewrite_in_blocks(f, out);
    auto step = f.step.as<IntImm>();
    std::optional<int64_t> trips = most_trips(f);
    if (!step || step->value != 1 || !trips || *trips <= 0) return false;
    if (f.body.size() != 3 || !f.body[0].as<Decl>() || !f.body[2].as<Store>()) return rewrite_sequence(f, *trips, out);
    auto decl = f.body[0].as<Decl>();
    auto store = f.body[2].as<Store>();
    if (!decl->type.is_scalar() || !decl->init.defined()) return false;
    if (*trips * static_cast<int64_t>(dtype_size(decl->type.dtype)) > kMaxAccumulatorBytes) return false;
    std::optional<ReductionNest> nest = match_nest(f.body[1], decl->name);
    if (!nest) return rewrite_sequence(f, *trips, out);  // max(s, term) as written, or a loop that also stores
    // A plain loop over fewer than kMinColumns columns (a matrix times one,
    // two or three vectors): too few to vectorise across j, while the
    // reduction's own loop vectorises as it stands (a running sum
    // reassociates); turned inside out, each term would go through memory
    // one at a time (a 1000x1000 matrix times a vector ran at 0.13x
    // oneDNN's speed, times three vectors at 0.41x).
    if (*trips < kMinColumns && nest->loops.size() == 1 && !nest->guard.defined()) return false;
    const std::string& j = f.var;
    const std::string& s = decl->name;
    if (!runs_along(nest->term, j)) return false;
    // The nest's ranges must not depend on j, and the guard and the term must
    // not read the running value or what the loop writes.
    std::set<std::string> written = {store->buffer, s};
    for (const NestLoop& l : nest->loops)
      for (const Expr& e : {l.lo, l.hi, l.step})
        if (reads_any(e, {j, s})) return false;
    // acc[j - lo]: a block's accumulators start at its first column.
    bool at_zero = constant_value(f.lo) == std::optional<int64_t>(0);
    if (reads_any(nest->term, written) || reads_any(decl->init, written)) return false;
    if (nest->guard.defined() && reads_any(nest->guard, written)) return false;

    std::string acc = fresh(s + "acc");
    Type acc_type = Type::tensor(decl->type.dtype, {at_zero ? f.hi : i64(*trips)});
    auto at = [&](const std::string& jv) {
      Expr v = Var::make(jv, Type::scalar(DType::I64));
      return AxisSel::at(at_zero ? v : v - f.lo);
    };
    auto acc_of = [&](const std::string& jv) { return make_access(acc, acc_type, {at(jv)}); };
    auto over_j = [&](const std::string& jv, Block body) {
      return make_for(jv, f.lo, f.hi, f.step, std::move(body), LoopKind::Serial, 0, f.span);
    };
    auto rename_j = [&](const std::string& jv) { return Substitution{{j, Var::make(jv, Type::scalar(DType::I64))}}; };

    out.push_back(make_allocate(acc, acc_type, MemorySpace::Local, f.span));
    std::string j0 = fresh(j);
    out.push_back(over_j(j0, {make_store(acc, {at(j0)}, substitute(decl->init, rename_j(j0)), decl->span)}));

    // Each acc[j] still takes its terms in the nest's order, skipping the
    // same ones: the result is the reference's, bit for bit.
    std::string j1 = fresh(j);
    Stmt update = make_store(acc, {at(j1)}, Binary::make(nest->op, acc_of(j1), substitute(nest->term, rename_j(j1))),
                             nest->assign->span);
    if (nest->guard.defined()) update = make_if(substitute(nest->guard, rename_j(j1)), {update}, {}, update->span);
    // Where j goes: innermost, unless the guard tests j and the innermost
    // loop of the nest is short (a convolution window's row): then just
    // above it, so that loop unrolls, and where its range is whole (away from
    // the padding) j runs over plain loads.
    size_t j_depth = nest->loops.size();
    if (nest->guard.defined() && reads_any(nest->guard, {j}) && short_constant_range(nest->loops.back())) --j_depth;
    auto wrap = [](const NestLoop& l, Block b) {
      return make_for(l.loop->var, l.lo, l.hi, l.step, std::move(b), l.loop->loop_kind, l.loop->factor, l.loop->span);
    };
    Block body;
    size_t outer = j_depth;
    if (jam_ > 1 && !nest->guard.defined() && j_depth == nest->loops.size() && constant_value(nest->loops.back().step) == 1 &&
        *trips >= kMinJammedTrips) {
      // for j: acc[j] = value(acc[j], j's substitution), over a j of its own.
      auto update_over_j = [&](const auto& value) {
        std::string jv = fresh(j);
        return over_j(jv, {make_store(acc, {at(jv)}, value(acc_of(jv), rename_j(jv)), nest->assign->span)});
      };
      body = jammed(nest->loops.back(), *nest, update_over_j);
      --outer;
    } else {
      Stmt inner = update;
      for (size_t d = nest->loops.size(); d-- > j_depth;) inner = wrap(nest->loops[d], {inner});
      body = {over_j(j1, {inner})};
    }
    for (size_t d = outer; d-- > 0;) body = {wrap(nest->loops[d], std::move(body))};
    for (Stmt& b : body) out.push_back(std::move(b));

    std::string j2 = fresh(j);
    Substitution finish = rename_j(j2);
    finish[s] = acc_of(j2);
    out.push_back(over_j(j2, substitute(Block{f.body[2]}, finish)));
    return true;
  }

  // for j: a sequence of running values, each declared, reduced by a nest
  // and read by what follows, and loops that store (and may also reduce
  // a value, as reuse_row_values leaves a softmax's exponentials), then
  // stores: a softmax down each column. Every statement is turned inside
  // out in order: each value an array over j, each loop with j innermost,
  // so that every phase walks rows, not columns. Each value still takes
  // its terms in its loop's order: the same bits.
  //
  //   for j:                          local m[J], s[J]
  //     var m = -inf                  for j: m[j] = -inf
  //     for i: m = max(m, x[i, j])    for i: for j: m[j] = max(m[j], x[i, j])
  //     var s = 0                →    for j: s[j] = 0
  //     for i: s += e(x[i, j], m)     for i: for j: s[j] += e(x[i, j], m[j])
  //     for i: out[i, j] = g(m, s)    for i: for j: out[i, j] = g(m[j], s[j])
  //
  // What a phase reads of a buffer the loop stores must be its own
  // column (last index j), stored by an earlier phase: every phase runs
  // for all the block's columns before the next.
  bool rewrite_sequence(const For& f, int64_t trips, Block& out) {
    const std::string& j = f.var;
    bool at_zero = constant_value(f.lo) == std::optional<int64_t>(0);
    std::set<std::string> values, written, stored;  // values turned into arrays; buffers the loop stores; stored so far
    struct Stores : IRVisitor {
      std::set<std::string>& names;
      bool other = false;
      explicit Stores(std::set<std::string>& n) : names(n) {}
      void visit(const Store* op) override { names.insert(op->buffer), IRVisitor::visit(op); }
      void visit(const Atomic*) override { other = true; }
      void visit(const MatMulBlock*) override { other = true; }
      void visit(const Allocate*) override { other = true; }
    } stores(written);
    for (const Stmt& st : f.body) {
      stores.include(st);
      if (auto d = st.as<Decl>()) {
        if (!d->type.is_scalar() || !d->init.defined()) return false;
        values.insert(d->name);
      } else if (auto l = st.as<Let>()) {
        if (!l->value->type.is_scalar()) return false;
        values.insert(l->name);
      } else if (!st.as<Store>() && !st.as<For>()) {
        return false;
      }
    }
    // Fewer than kMinColumns columns: as a plain reduction's, left as they are.
    if (trips < kMinColumns || stores.other || values.empty() || static_cast<int64_t>(values.size()) * trips * 8 > kMaxAccumulatorBytes)
      return false;
    // Reads of stored buffers: the element's own column, stored before.
    auto own_column = [&](const Expr& e) {
      struct Reads : IRVisitor {
        const std::set<std::string>& written;
        const std::set<std::string>& stored;
        const std::string& j;
        bool ok = true;
        Reads(const std::set<std::string>& w, const std::set<std::string>& s, const std::string& v) : written(w), stored(s), j(v) {}
        void visit(const Access* op) override {
          if (written.count(op->buffer)) {
            auto last = op->axes.empty() || op->axes.back().is_slice ? nullptr : op->axes.back().index.as<Var>();
            if (!stored.count(op->buffer) || !last || last->name != j) ok = false;
          }
          IRVisitor::visit(op);
        }
      } reads(written, stored, j);
      reads.include(e);
      return reads.ok;
    };
    auto legal = [&](const Expr& e) { return !e.defined() || (runs_along(e, j) && own_column(e)); };
    auto free_range = [&](const Expr& lo, const Expr& hi, const Expr& step) {
      for (const Expr& e : {lo, hi, step})
        if (reads_any(e, {j}) || reads_any(e, values) || reads_any(e, written)) return false;
      return true;
    };
    std::map<std::string, std::string> array_of;
    std::map<std::string, Type> array_type;
    Expr length = at_zero ? f.hi : i64(trips);
    const int names = counter_;
    auto fail = [&] {
      counter_ = names;
      return false;
    };
    auto index = [&](const std::string& jv) {
      Expr v = Var::make(jv, Type::scalar(DType::I64));
      return AxisSel::at(at_zero ? v : v - f.lo);
    };
    // e with j as jv and each value turned array read at jv.
    auto at_j = [&](const Expr& e, const std::string& jv) {
      Substitution sub = {{j, Var::make(jv, Type::scalar(DType::I64))}};
      for (const auto& [name, array] : array_of) sub[name] = make_access(array, array_type.at(name), {index(jv)});
      return substitute(e, sub);
    };
    auto over_j = [&](const std::string& jv, Block b) {
      return make_for(jv, f.lo, f.hi, f.step, std::move(b), LoopKind::Serial, 0, f.span);
    };
    Block body;
    // One statement at column jv: a store, a let, or an update of a value.
    auto statement = [&](const Stmt& st, const std::string& jv, std::set<std::string>& stored_here) -> std::optional<Stmt> {
      if (auto store = st.as<Store>()) {
        std::vector<AxisSel> axes;
        for (const AxisSel& a : store->axes) {
          if (a.is_slice || !legal(a.index)) return std::nullopt;
          axes.push_back(AxisSel::at(at_j(a.index, jv)));
        }
        auto last = store->axes.empty() ? nullptr : store->axes.back().index.as<Var>();
        if (!legal(store->value) || !last || last->name != j) return std::nullopt;  // each column its own elements
        stored_here.insert(store->buffer);
        return make_store(store->buffer, axes, at_j(store->value, jv), store->span);
      }
      if (auto l = st.as<Let>()) {
        if (!legal(l->value)) return std::nullopt;
        return make_let(l->name, at_j(l->value, jv), l->span);
      }
      if (auto a = st.as<Assign>()) {
        // v = v op term, or v = max(v, term) / min(v, term) as written.
        if (!array_of.count(a->name)) return std::nullopt;
        auto is_self = [&](const Expr& e) { auto v = e.as<Var>(); return v && v->name == a->name; };
        auto term_ok = [&](const Expr& t) { return !reads_any(t, {a->name}) && legal(t); };
        Expr current = make_access(array_of.at(a->name), array_type.at(a->name), {index(jv)});
        Expr value;
        if (auto op = a->value.as<Binary>()) {
          bool fold = op->op == BinaryOp::Add || op->op == BinaryOp::Mul || op->op == BinaryOp::Min || op->op == BinaryOp::Max;
          if (!fold || !is_self(op->a) || !term_ok(op->b)) return std::nullopt;
          value = Binary::make(op->op, current, at_j(op->b, jv));
        } else if (auto m = a->value.as<Math>()) {
          if ((m->fn != MathFn::Min && m->fn != MathFn::Max) || m->args.size() != 2 || !is_self(m->args[0]) || !term_ok(m->args[1]))
            return std::nullopt;
          value = Math::make(m->fn, {current, at_j(m->args[1], jv)});
        } else {
          return std::nullopt;
        }
        return make_store(array_of.at(a->name), {index(jv)}, value, a->span);
      }
      return std::nullopt;
    };
    // A running value's declaration or a let: an array over j, filled with
    // its first value (read before the name is bound to the array).
    auto to_array = [&](const std::string& name, DType dtype, const Expr& first, Span span) {
      std::string jv = fresh(j), array = fresh(name + "acc");
      Expr value = at_j(first, jv);
      array_of[name] = array;
      array_type[name] = Type::tensor(dtype, {length});
      body.push_back(make_allocate(array, array_type[name], MemorySpace::Local, f.span));
      body.push_back(over_j(jv, {make_store(array, {index(jv)}, value, span)}));
    };
    // A nest reducing one of the values declared so far.
    auto nest_of = [&](const Stmt& st) -> std::optional<ReductionNest> {
      for (const auto& [name, array] : array_of)
        if (std::optional<ReductionNest> n = match_nest(st, name)) return n;
      return std::nullopt;
    };
    for (const Stmt& st : f.body) {
      if (auto d = st.as<Decl>()) {
        if (!legal(d->init)) return fail();
        to_array(d->name, d->type.dtype, d->init, d->span);
      } else if (auto l = st.as<Let>()) {
        if (!legal(l->value)) return fail();
        to_array(l->name, l->value->type.dtype, l->value, l->span);
      } else if (st.as<Store>()) {
        std::string jv = fresh(j);
        std::set<std::string> here;
        std::optional<Stmt> s1 = statement(st, jv, here);
        if (!s1) return fail();
        body.push_back(over_j(jv, {*s1}));
        stored.insert(here.begin(), here.end());
      } else if (std::optional<ReductionNest> nest = nest_of(st)) {
        // A nest reducing a declared value (lets and a guard allowed).
        const std::string& target = nest->assign->name;
        if (!legal(nest->term) || (nest->guard.defined() && !legal(nest->guard)) || reads_any(nest->term, {target})) return fail();
        for (const NestLoop& nl : nest->loops)
          if (!free_range(nl.lo, nl.hi, nl.step)) return fail();
        std::string jv = fresh(j);
        const std::string& acc = array_of.at(target);
        Expr current = make_access(acc, array_type.at(target), {index(jv)});
        Stmt update = make_store(acc, {index(jv)}, Binary::make(nest->op, current, at_j(nest->term, jv)), nest->assign->span);
        if (nest->guard.defined()) update = make_if(at_j(nest->guard, jv), {update}, {}, update->span);
        Block inner = {over_j(jv, {update})};
        for (size_t d = nest->loops.size(); d-- > 0;) {
          const NestLoop& nl = nest->loops[d];
          inner = {make_for(nl.loop->var, nl.lo, nl.hi, nl.step, std::move(inner), LoopKind::Serial, 0, nl.loop->span)};
        }
        for (Stmt& b : inner) body.push_back(std::move(b));
      } else {
        // A loop (one level) of lets, stores and updates: j goes inside it.
        auto loop = st.as<For>();
        if (!free_range(loop->lo, loop->hi, loop->step)) return fail();
        std::string jv = fresh(j);
        std::set<std::string> here;
        Block inner;
        for (const Stmt& b : loop->body) {
          std::optional<Stmt> t = statement(b, jv, here);
          if (!t) return fail();
          inner.push_back(*t);
        }
        body.push_back(make_for(loop->var, loop->lo, loop->hi, loop->step, {over_j(jv, inner)}, LoopKind::Serial, 0, loop->span));
        stored.insert(here.begin(), here.end());
      }
    }
    for (Stmt& b : body) out.push_back(std::move(b));
    return true;
  }

  // The task loop itself, the outermost parallel loop (a column sum's
  // columns; one inside it is a task's part, as widen_task_loop makes):
  // turned inside out whole, it would run on one thread. Its columns split
  // into a block per task instead, each block a serial loop turned inside
  // out over accumulators of its own:
  //
  //   parallel for j in lo..hi:      parallel for t in 0..T:
  //     <reduction>             →      let j0 = lo + t * W
  //                                    for j in j0..min(j0 + W, hi): <reduction>, turned
  bool rewrite_in_blocks(const For& f, Block& out) {
    std::optional<int64_t> lo = constant_value(f.lo), hi = constant_value(f.hi);
    if (!lo || !hi || *hi <= *lo || constant_value(f.step) != std::optional<int64_t>(1)) return false;
    // Whole 64-byte lines per block, one block per task.
    const int64_t trips = *hi - *lo, width = std::min(trips, (trips + tasks_ * 16 - 1) / (tasks_ * 16) * 16);
    const int names = counter_;  // a nest left as it is takes no names
    std::string t = fresh(f.var + "t"), j0 = fresh(f.var + "0");
    Expr first = Var::make(j0, Type::scalar(DType::I64));
    Stmt block = make_for(f.var, first, min(first + i64(width), f.hi), f.step, f.body, LoopKind::Serial, 0, f.span);
    Block task = {make_let(j0, f.lo + Var::make(t, Type::scalar(DType::I64)) * i64(width), f.span)};
    bool outer = in_task_;
    in_task_ = true;
    bool turned = rewrite(*block.as<For>(), task);
    in_task_ = outer;
    if (!turned) {
      counter_ = names;
      return false;
    }
    out.push_back(make_for(t, i64(0), i64((trips + width - 1) / width), i64(1), std::move(task), LoopKind::Parallel, 0, f.span));
    return true;
  }

  // The innermost reduction loop k (step 1) around `for j: acc[j] = acc[j] op term(k, j)`,
  // unrolled by jam_ and jammed into the j loop:
  //
  //   for k in lo..end step U:                      (end = lo + (hi - lo) / U * U)
  //     for j: acc[j] = ((acc[j] op term(k, j)) op term(k + 1, j)) ... op term(k + U - 1, j)
  //   for k in end..hi:
  //     for j: acc[j] = acc[j] op term(k, j)
  //
  // Each acc[j] is loaded and stored once per U terms instead of once per
  // term (a matrix-vector product was bound by those loads and stores, not
  // by memory), and still takes its terms in k order: the same bits.
  template <class UpdateOverJ>
  Block jammed(const NestLoop& kl, const ReductionNest& nest, const UpdateOverJ& update_over_j) {
    const std::string& k = kl.loop->var;
    Expr end = kl.lo + max(kl.hi - kl.lo, i64(0)) / i64(jam_) * i64(jam_);
    std::string kv = fresh(k);
    Expr k_at = Var::make(kv, Type::scalar(DType::I64));
    Stmt unrolled = make_for(kv, kl.lo, end, i64(jam_), {update_over_j([&](Expr value, const Substitution& at_j) {
                               Expr term = substitute(nest.term, at_j);
                               for (int u = 0; u < jam_; ++u) value = Binary::make(nest.op, value, substitute(term, {{k, k_at + i64(u)}}));
                               return value;
                             })},
                             LoopKind::Serial, 0, kl.loop->span);
    Stmt rest = make_for(k, end, kl.hi, kl.step, {update_over_j([&](const Expr& value, const Substitution& at_j) {
                           return Binary::make(nest.op, value, substitute(nest.term, at_j));
                         })},
                         LoopKind::Serial, 0, kl.loop->span);
    return {unrolled, rest};
  }

  int jam_;
  int64_t tasks_;
  bool in_task_ = false;  // inside the outermost parallel loop
  int counter_ = 0;
};

}  // namespace

Kernel interchange_reductions(const Kernel& k, int jam, int64_t tasks) {
  Kernel out = k;
  out.body = Interchange(jam, tasks).block(k.body);
  out = simplify(out);
  verify_or_throw(out, "interchange_reductions");
  return out;
}

}  // namespace zyntax::cir
