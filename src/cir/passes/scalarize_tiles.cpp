#include "cir/passes/scalarize_tiles.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "cir/equal.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/printer.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

struct GiveUp {
  std::string why;
};

// Tiles larger than this many elements are left to the reference executor.
constexpr int64_t kMaxTileElements = int64_t{1} << 22;

struct Interval {
  int64_t lo, hi;  // inclusive
};

// A tile held in a local array whose extents are runtime values.
struct TileLocal {
  std::string buffer;
  DType dtype;
  std::vector<Expr> extents;   // Vars of i64 lets (or vars, for a mutable tile)
  std::vector<int64_t> caps;   // the largest each extent can be
};

Expr i64v(const std::string& name) { return Var::make(name, Type::scalar(DType::I64)); }
bool is_const(const Expr& e, int64_t v) { return e.as<IntImm>() && e.as<IntImm>()->value == v; }

// Finds tile values: any expression of tile type, slices, tile variables,
// whole-region stores, and the tile operations that give scalars.
class HasTiles : public IRVisitor {
 public:
  bool found = false;
  using IRVisitor::visit;

 protected:
  void note(const ExprNode* op) { found = found || !op->type.is_scalar(); }
  void visit(const Var* op) override { note(op); }
  void visit(const Cast* op) override { note(op); IRVisitor::visit(op); }
  void visit(const Unary* op) override { note(op); IRVisitor::visit(op); }
  void visit(const Binary* op) override { note(op); IRVisitor::visit(op); }
  void visit(const Select* op) override { note(op); IRVisitor::visit(op); }
  void visit(const Math* op) override { note(op); IRVisitor::visit(op); }
  void visit(const Fill*) override { found = true; }
  void visit(const Transpose*) override { found = true; }
  void visit(const Access* op) override {
    note(op);
    for (const AxisSel& a : op->axes) found = found || a.is_slice;
    IRVisitor::visit(op);
  }
  void visit(const Decl* op) override {
    if (!op->type.is_scalar()) found = true;
    IRVisitor::visit(op);
  }
  void visit(const Let* op) override {
    if (!op->value->type.is_scalar()) found = true;
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    if (op->axes.empty() || !op->value->type.is_scalar()) found = true;
    for (const AxisSel& a : op->axes) found = found || a.is_slice;
    IRVisitor::visit(op);
  }
  void visit(const Dot*) override { found = true; }
  void visit(const Reduce*) override { found = true; }
  void visit(const MatMul*) override { found = true; }
};

class Scalarizer {
 public:
  Scalarizer(const Kernel& k, ProductOrder order) : k_(k), order_(order) {}

  Kernel run() {
    for (const Param& p : k_.params)
      if (p.role != ParamRole::Scalar) buffer_types_[p.name] = p.type;
    Kernel out = k_;
    out.body = block(k_.body);
    return out;
  }

 private:
  [[noreturn]] static void give_up(const std::string& why) { throw GiveUp{why}; }

  std::string fresh(const std::string& base) { return base + "%" + std::to_string(counter_++); }

  // ------------------------------------------------------------ bounds

  // Pushes + and - into min/max so that `min(kv + 64, n) - kv` bounds as 64.
  static Expr distribute(const Expr& e) {
    auto b = e.as<Binary>();
    if (!b) return e;
    Expr a = distribute(b->a), c = distribute(b->b);
    if (b->op == BinaryOp::Sub || b->op == BinaryOp::Add) {
      if (auto m = a.as<Binary>(); m && (m->op == BinaryOp::Min || m->op == BinaryOp::Max))
        return Binary::make(m->op, distribute(Binary::make(b->op, m->a, c)), distribute(Binary::make(b->op, m->b, c)));
      if (auto m = c.as<Binary>(); m && (m->op == BinaryOp::Min || m->op == BinaryOp::Max) && b->op == BinaryOp::Add)
        return Binary::make(m->op, distribute(Binary::make(BinaryOp::Add, a, m->a)), distribute(Binary::make(BinaryOp::Add, a, m->b)));
    }
    if (a.same_as(b->a) && c.same_as(b->b)) return e;
    return Binary::make(b->op, a, c);
  }

  std::optional<Interval> interval(const Expr& e) const { return range_of(simplify(distribute(tighten(e)))); }

  // min(a, b) is a when a can never exceed b (and likewise for max): the
  // clamp `min(q, n)` of a loop variable q < n is just q.
  Expr tighten(const Expr& e) const {
    auto b = e.as<Binary>();
    if (!b) return e;
    Expr x = tighten(b->a), y = tighten(b->b);
    if (b->op == BinaryOp::Min || b->op == BinaryOp::Max) {
      auto rx = range_of(simplify(x)), ry = range_of(simplify(y));
      if (rx && ry) {
        if (b->op == BinaryOp::Min && rx->hi <= ry->lo) return x;
        if (b->op == BinaryOp::Min && ry->hi <= rx->lo) return y;
        if (b->op == BinaryOp::Max && rx->lo >= ry->hi) return x;
        if (b->op == BinaryOp::Max && ry->lo >= rx->hi) return y;
      }
    }
    if (x.same_as(b->a) && y.same_as(b->b)) return e;
    return Binary::make(b->op, x, y);
  }

  std::optional<Interval> range_of(const Expr& e) const {
    if (auto i = e.as<IntImm>()) return Interval{i->value, i->value};
    if (auto v = e.as<Var>()) {
      auto it = ranges_.find(v->name);
      if (it == ranges_.end()) return std::nullopt;
      return it->second;
    }
    if (auto c = e.as<Cast>(); c && is_int(c->type.dtype) && is_int(c->value->type.dtype)) return range_of(c->value);
    if (auto m = e.as<Math>(); m && is_int(m->type.dtype) && (m->fn == MathFn::Min || m->fn == MathFn::Max)) {
      auto x = range_of(m->args[0]), y = range_of(m->args[1]);
      if (!x || !y) return std::nullopt;
      if (m->fn == MathFn::Min) return Interval{std::min(x->lo, y->lo), std::min(x->hi, y->hi)};
      return Interval{std::max(x->lo, y->lo), std::max(x->hi, y->hi)};
    }
    if (auto s = e.as<Select>()) {
      auto x = range_of(s->t), y = range_of(s->f);
      if (!x || !y) return std::nullopt;
      return Interval{std::min(x->lo, y->lo), std::max(x->hi, y->hi)};
    }
    auto b = e.as<Binary>();
    if (!b || !is_int(b->type.dtype)) return std::nullopt;
    auto x = range_of(b->a), y = range_of(b->b);
    if (!x || !y) return std::nullopt;
    constexpr int64_t kBig = int64_t{1} << 40;  // far from overflow
    if (std::max({std::abs(x->lo), std::abs(x->hi), std::abs(y->lo), std::abs(y->hi)}) > kBig) return std::nullopt;
    switch (b->op) {
      case BinaryOp::Add: return Interval{x->lo + y->lo, x->hi + y->hi};
      case BinaryOp::Sub: return Interval{x->lo - y->hi, x->hi - y->lo};
      case BinaryOp::Mul: {
        int64_t p[] = {x->lo * y->lo, x->lo * y->hi, x->hi * y->lo, x->hi * y->hi};
        if (std::max(std::abs(x->hi), std::abs(x->lo)) > (1 << 20) || std::max(std::abs(y->hi), std::abs(y->lo)) > (1 << 20))
          return std::nullopt;
        return Interval{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
      }
      case BinaryOp::Div:
        if (y->lo <= 0 || y->lo != y->hi) return std::nullopt;
        return Interval{x->lo / y->lo, x->hi / y->lo};
      case BinaryOp::Min: return Interval{std::min(x->lo, y->lo), std::min(x->hi, y->hi)};
      case BinaryOp::Max: return Interval{std::max(x->lo, y->lo), std::max(x->hi, y->hi)};
      default: return std::nullopt;
    }
  }

  void set_range(const std::string& name, const Expr& value) {
    if (!value->type.is_scalar() || !is_int(value->type.dtype)) return;
    if (auto r = interval(value)) ranges_[name] = *r;
  }

  // ------------------------------------------------------------ statements

  Block block(const Block& b) {
    Block out;
    for (const Stmt& s : b) stmt(s, out);
    return out;
  }

  void stmt(const Stmt& s, Block& out) {
    switch (s->kind) {
      case StmtKind::For: {
        auto f = s.as<For>();
        Expr lo = scalar(f->lo, out), hi = scalar(f->hi, out), step = scalar(f->step, out);
        auto l = interval(lo), h = interval(hi);
        if (l && h) ranges_[f->var] = Interval{l->lo, std::max(l->lo, h->hi - 1)};
        out.push_back(make_for(f->var, lo, hi, step, block(f->body), f->loop_kind, f->factor, f->span));
        return;
      }
      case StmtKind::If: {
        auto i = s.as<If>();
        Expr c = scalar(i->cond, out);
        out.push_back(make_if(c, block(i->then_body), block(i->else_body), i->span));
        return;
      }
      case StmtKind::Let: {
        auto l = s.as<Let>();
        if (l->value->type.is_scalar()) {
          Expr v = scalar(l->value, out);
          set_range(l->name, v);
          out.push_back(make_let(l->name, v, l->span));
        } else {
          materialize(l->value, l->name, /*is_mutable=*/false, out, l->span);
        }
        return;
      }
      case StmtKind::Decl: {
        auto d = s.as<Decl>();
        if (d->type.is_scalar()) {
          out.push_back(make_decl(d->name, d->type, d->init.defined() ? scalar(d->init, out) : Expr(), d->span));
          return;
        }
        if (!d->init.defined()) give_up("a tile variable without a value");
        materialize(d->init, d->name, /*is_mutable=*/true, out, d->span, &d->type);
        return;
      }
      case StmtKind::Assign: {
        auto a = s.as<Assign>();
        auto t = tiles_.find(a->name);
        if (t == tiles_.end()) {
          out.push_back(make_assign(a->name, scalar(a->value, out), a->span));
          return;
        }
        assign_tile(t->second, a->value, out, a->span);
        return;
      }
      case StmtKind::Store: return store(*s.as<Store>(), out);
      case StmtKind::Yield: {
        auto y = s.as<Yield>();
        Expr v = scalar(y->value, out);
        Expr idx = y->index.defined() ? scalar(y->index, out) : Expr();
        std::vector<Expr> oi;
        for (const Expr& e : y->out_index) oi.push_back(scalar(e, out));
        out.push_back(make_yield(v, idx, oi, y->span));
        return;
      }
      case StmtKind::Allocate:
        buffer_types_[s.as<Allocate>()->name] = s.as<Allocate>()->type;
        out.push_back(s);
        return;
      case StmtKind::Check:
        out.push_back(make_check(scalar(s.as<Check>()->cond, out), s.as<Check>()->message, s->span));
        return;
      case StmtKind::Barrier: case StmtKind::MatMulBlock: case StmtKind::BlockReduce: case StmtKind::TileMma:
      case StmtKind::AsyncCopy: case StmtKind::WarpgroupProduct: case StmtKind::WarpgroupAttention: out.push_back(s); return;
      case StmtKind::Atomic: give_up("atomics");
    }
  }

  // ------------------------------------------------------------ tiles in arrays

  // Declares the extents (lets, or vars for a mutable tile) and the array.
  TileLocal new_tile(const std::string& name, DType dtype, const std::vector<Expr>& extents, bool is_mutable,
                     Block& out, Span span, const std::vector<Expr>* cap_shape = nullptr) {
    TileLocal t;
    t.buffer = name;
    t.dtype = dtype;
    int64_t total = 1;
    for (size_t k = 0; k < extents.size(); ++k) {
      std::string n = name + "%n" + std::to_string(k);
      Expr e = simplify(extents[k]);
      auto r = interval(cap_shape ? (*cap_shape)[k] : e);
      if (cap_shape) {  // a mutable tile: at least as large as its declared shape and its first value
        auto first = interval(e);
        if (r && first) r->hi = std::max(r->hi, first->hi);
      }
      if (!r || r->hi > kMaxTileElements) give_up("a tile whose size has no bound (" + print(e) + ")");
      int64_t cap = std::max<int64_t>(r->hi, 0);
      t.caps.push_back(cap);
      total = std::min(kMaxTileElements + 1, total * std::max<int64_t>(cap, 1));
      out.push_back(is_mutable ? make_decl(n, Type::scalar(DType::I64), e, span) : make_let(n, e, span));
      // A let keeps its value's range (a constant stays one); a var may change up to its capacity.
      auto exact = interval(e);
      ranges_[n] = !is_mutable && exact ? Interval{std::max<int64_t>(exact->lo, 0), std::min(exact->hi, cap)} : Interval{0, cap};
      t.extents.push_back(i64v(n));
    }
    if (total > kMaxTileElements) give_up("a tile of more than " + std::to_string(kMaxTileElements) + " elements");
    Type type = Type::tensor(dtype, t.extents);
    out.push_back(make_allocate(name, type, MemorySpace::Local, span, std::max<int64_t>(total, 1)));
    buffer_types_[name] = type;
    tiles_[name] = t;
    return t;
  }

  // Loops over the extents, calling body(indices).
  template <class F>
  void loops(const std::vector<Expr>& extents, const std::string& base, Block& out, Span span, F&& body) {
    std::vector<Expr> idx;
    std::vector<std::string> vars;
    for (size_t k = 0; k < extents.size(); ++k) {
      vars.push_back(fresh(base + "i"));
      idx.push_back(i64v(vars.back()));
      auto r = interval(extents[k]);
      ranges_[vars.back()] = Interval{0, r ? std::max<int64_t>(r->hi - 1, 0) : 0};
    }
    Block inner;
    body(idx, inner);
    for (size_t k = extents.size(); k-- > 0;)
      inner = {make_for(vars[k], i64(0), extents[k], i64(1), std::move(inner), LoopKind::Serial, 0, span)};
    out.insert(out.end(), inner.begin(), inner.end());
  }

  void materialize(const Expr& e, const std::string& name, bool is_mutable, Block& out, Span span,
                   const Type* declared = nullptr) {
    fill(prepare(e, out), name, is_mutable, out, span, declared);
  }

  // A new tile `name` holding the prepared value `p`.
  void fill(const Expr& p, const std::string& name, bool is_mutable, Block& out, Span span, const Type* declared = nullptr) {
    std::vector<Expr> ext = extents(p, out, span);
    std::vector<Expr> cap_shape = declared ? declared->shape : std::vector<Expr>{};
    if (declared && cap_shape.size() != ext.size()) give_up("a tile variable whose rank changes");
    TileLocal t = new_tile(name, p->type.dtype, ext, is_mutable, out, span, declared ? &cap_shape : nullptr);
    loops(t.extents, name, out, span, [&](const std::vector<Expr>& idx, Block& body) {
      body.push_back(make_store(name, at(idx), elem(p, idx, t.extents), span));
    });
  }

  // A prepared tile value as an array of its own, unless it is one. A
  // transposed value is staged the way it is laid out and read transposed
  // (attention's K^T: the copy of K's rows reads them along their length,
  // coalesced on a GPU, whose schedule pads the array's rows so that reading
  // down its columns meets each bank once).
  Expr staged(const Expr& p, Block& out, Span span) {
    auto t = p.as<Transpose>();
    if (p.as<Var>() || p->type.is_scalar() || (t && t->value.as<Var>())) return p;
    if (t) return make_transpose(staged(t->value, out, span), p->span);
    std::string name = fresh("stage");
    materialize(p, name, /*is_mutable=*/false, out, span);
    return Var::make(name, Type::tensor(p->type.dtype, tiles_.at(name).extents));
  }

  // `o = value` for a tile variable: the value goes to a fresh array first
  // (it may read `o`), unless it is another tile's array already (m =
  // m_new), then is copied into o's array with o's new extents.
  void assign_tile(TileLocal& t, const Expr& value, Block& out, Span span) {
    Expr p = prepare(value, out);
    std::string tmp;
    if (auto v = p.as<Var>(); v && v->name != t.buffer && tiles_.count(v->name)) {
      tmp = v->name;
    } else {
      tmp = fresh(t.buffer + "new");
      fill(p, tmp, false, out, span);
    }
    const TileLocal& v = tiles_.at(tmp);
    if (v.extents.size() != t.extents.size()) give_up("a tile variable whose rank changes");
    for (size_t k = 0; k < t.extents.size(); ++k) {
      // A value larger than the array: the reference executor computes this kernel.
      if (v.caps[k] > t.caps[k])
        out.push_back(make_check(Binary::make(BinaryOp::Le, v.extents[k], i64(t.caps[k])),
                                 "a tile outgrew the array reserved for it", span));
      out.push_back(make_assign(t.extents[k].as<Var>()->name, v.extents[k], span));
    }
    Type vt = buffer_types_.at(tmp);
    loops(t.extents, t.buffer, out, span, [&](const std::vector<Expr>& idx, Block& body) {
      body.push_back(make_store(t.buffer, at(idx), make_access(tmp, vt, at(idx), span), span));
    });
  }

  static std::vector<AxisSel> at(const std::vector<Expr>& idx) {
    std::vector<AxisSel> axes;
    for (const Expr& i : idx) axes.push_back(AxisSel::at(i));
    return axes;
  }

  // Stores with slices, whole-buffer stores and tile values: a loop over the
  // region, the value broadcast to it (it must broadcast, as in NumPy).
  void store(const Store& st, Block& out) {
    const Type& bt = buffer_types_.at(st.buffer);
    bool element = !st.axes.empty() && st.axes.size() == bt.rank() && st.value->type.is_scalar();
    for (const AxisSel& a : st.axes) element = element && !a.is_slice;
    if (element) {
      std::vector<AxisSel> axes;
      for (const AxisSel& a : st.axes) axes.push_back(AxisSel::at(scalar(a.index, out)));
      out.push_back(make_store(st.buffer, axes, scalar(st.value, out), st.span));
      return;
    }
    // The region: per buffer axis, an index (dropped), a slice, or the whole axis.
    struct Axis {
      bool indexed;
      Expr index, start, extent;
    };
    std::vector<Axis> axes;
    std::vector<Expr> region;
    for (size_t a = 0; a < bt.rank(); ++a) {
      Axis ax{false, {}, {}, {}};
      if (a < st.axes.size() && !st.axes[a].is_slice) {
        ax.indexed = true;
        ax.index = scalar(st.axes[a].index, out);
      } else if (a < st.axes.size()) {
        auto [start, extent] = clamp_slice(st.axes[a], bt.shape[a], out, st.span);
        ax.start = start;
        ax.extent = extent;
        region.push_back(extent);
      } else {
        ax.start = i64(0);
        ax.extent = bt.shape[a];
        region.push_back(bt.shape[a]);
      }
      axes.push_back(ax);
    }
    Expr p = st.value->type.is_scalar() ? scalar(st.value, out) : prepare(st.value, out);
    std::vector<Expr> vext = p->type.is_scalar() ? std::vector<Expr>{} : extents(p, out, st.span);
    if (vext.size() > region.size()) give_up("a tile stored into a region with fewer axes");
    for (size_t k = 0; k < vext.size(); ++k) {  // the value broadcasts to the region
      const Expr& re = region[region.size() - vext.size() + k];
      if (!provably_equal(vext[k], re) && !is_const(vext[k], 1))
        out.push_back(make_check(Binary::make(BinaryOp::Or, Binary::make(BinaryOp::Eq, vext[k], re),
                                              Binary::make(BinaryOp::Eq, vext[k], i64(1))),
                                 "the value does not fit the region it is stored into", st.span));
    }
    std::string base = fresh("st");
    loops(region, base, out, st.span, [&](const std::vector<Expr>& idx, Block& body) {
      std::vector<AxisSel> target;
      size_t r = 0;
      for (const Axis& ax : axes)
        target.push_back(AxisSel::at(ax.indexed ? ax.index : simplify(ax.start + idx[r++])));
      Expr v = p->type.is_scalar() ? p : elem(p, idx, region);
      body.push_back(make_store(st.buffer, target, v, st.span));
    });
  }

  // A slice `lo:hi` of an axis of extent n: where it starts and how long it is,
  // clamped as the reference clamps (a negative start is an error there).
  std::pair<Expr, Expr> clamp_slice(const AxisSel& s, const Expr& n, Block& out, Span span) {
    Expr lo = s.lo.defined() ? scalar(s.lo, out) : i64(0);
    auto r = interval(lo);
    if (!r || r->lo < 0) out.push_back(make_check(Binary::make(BinaryOp::Ge, lo, i64(0)), "a slice starts before 0", span));
    Expr start = simplify(min(lo, n));
    Expr stop = s.hi.defined() ? min(scalar(s.hi, out), n) : n;
    return {start, simplify(max(stop - start, i64(0)))};
  }

  // ------------------------------------------------------------ expressions

  bool provably_equal(const Expr& a, const Expr& b) const {
    if (equal(simplify(a), simplify(b))) return true;
    auto x = interval(a), y = interval(b);
    return x && y && x->lo == x->hi && y->lo == y->hi && x->lo == y->lo;
  }

  // Tile operations that are not element-wise (matmul, reductions along an
  // axis) are computed into arrays first; scalar-valued ones into variables.
  Expr prepare(const Expr& e, Block& out) {
    if (e->type.is_scalar()) return scalar(e, out);
    switch (e->kind) {
      case ExprKind::MatMul: return matmul(*e.as<MatMul>(), out);
      case ExprKind::Reduce: return reduce_axis(*e.as<Reduce>(), out);
      case ExprKind::Var:
        if (!tiles_.count(e.as<Var>()->name)) give_up("a tile value that is not in an array (" + print(e) + ")");
        return e;
      case ExprKind::Access: {
        auto a = e.as<Access>();
        std::vector<AxisSel> axes;
        for (const AxisSel& s : a->axes)
          axes.push_back(s.is_slice ? AxisSel::slice(s.lo.defined() ? scalar(s.lo, out) : Expr(),
                                                     s.hi.defined() ? scalar(s.hi, out) : Expr())
                                    : AxisSel::at(scalar(s.index, out)));
        return make_access(a->buffer, buffer_types_.at(a->buffer), axes, a->span);
      }
      case ExprKind::Cast: return Cast::make(e->type.dtype, prepare(e.as<Cast>()->value, out), e->span);
      case ExprKind::Unary: return Unary::make(e.as<Unary>()->op, prepare(e.as<Unary>()->a, out), e->span);
      case ExprKind::Binary: {
        auto b = e.as<Binary>();
        return Binary::make(b->op, prepare(b->a, out), prepare(b->b, out), e->span);
      }
      case ExprKind::Select: {
        auto s = e.as<Select>();
        return Select::make(prepare(s->cond, out), prepare(s->t, out), prepare(s->f, out), e->span);
      }
      case ExprKind::Math: {
        std::vector<Expr> args;
        for (const Expr& a : e.as<Math>()->args) args.push_back(prepare(a, out));
        return Math::make(e.as<Math>()->fn, args, e->span);
      }
      case ExprKind::Transpose: return make_transpose(prepare(e.as<Transpose>()->value, out), e->span);
      case ExprKind::Fill: {
        std::vector<Expr> shape;
        for (const Expr& d : e->type.shape) shape.push_back(scalar(d, out));
        return make_fill(scalar(e.as<Fill>()->value, out), shape, e->span);
      }
      default: give_up("tile expression " + print(e));
    }
  }

  // The extents of a prepared tile expression, as scalar expressions.
  std::vector<Expr> extents(const Expr& p, Block& out, Span span) {
    switch (p->kind) {
      case ExprKind::Var: return tiles_.at(p.as<Var>()->name).extents;
      case ExprKind::Access: {
        auto a = p.as<Access>();
        const Type& bt = buffer_types_.at(a->buffer);
        std::vector<Expr> ext;
        for (size_t k = 0; k < bt.rank(); ++k) {
          if (k < a->axes.size() && !a->axes[k].is_slice) continue;
          if (k < a->axes.size())
            ext.push_back(clamp_slice(a->axes[k], bt.shape[k], out, span).second);
          else
            ext.push_back(bt.shape[k]);
        }
        return ext;
      }
      case ExprKind::Fill: return p->type.shape;
      case ExprKind::Transpose: {
        std::vector<Expr> e = extents(p.as<Transpose>()->value, out, span);
        std::reverse(e.begin(), e.end());
        return e;
      }
      case ExprKind::Cast: return extents(p.as<Cast>()->value, out, span);
      case ExprKind::Unary: return extents(p.as<Unary>()->a, out, span);
      case ExprKind::Binary: return broadcast({p.as<Binary>()->a, p.as<Binary>()->b}, out, span, p->span);
      case ExprKind::Select: return broadcast({p.as<Select>()->cond, p.as<Select>()->t, p.as<Select>()->f}, out, span, p->span);
      case ExprKind::Math: return broadcast(p.as<Math>()->args, out, span, p->span);
      default: give_up("tile expression " + print(p));
    }
  }

  // NumPy broadcasting of the operands' extents. Extents that may differ at
  // run time get a check (the reference reports the mismatch) and the result
  // takes the larger, so that reading the smaller one fails its bounds check
  // too rather than reading a wrong element.
  std::vector<Expr> broadcast(const std::vector<Expr>& operands, Block& out, Span span, Span op_span) {
    std::vector<std::vector<Expr>> shapes;
    size_t rank = 0;
    for (const Expr& o : operands) {
      shapes.push_back(o->type.is_scalar() ? std::vector<Expr>{} : extents(o, out, span));
      rank = std::max(rank, shapes.back().size());
    }
    std::vector<Expr> result(rank);
    for (size_t k = 0; k < rank; ++k) {
      Expr r;
      for (const auto& s : shapes) {
        if (k + s.size() < rank) continue;
        Expr e = s[k + s.size() - rank];
        if (!r.defined() || is_const(r, 1)) {
          r = e;
        } else if (!is_const(e, 1) && !provably_equal(r, e)) {
          out.push_back(make_check(Binary::make(BinaryOp::Or, Binary::make(BinaryOp::Or, Binary::make(BinaryOp::Eq, r, e),
                                                                           Binary::make(BinaryOp::Eq, r, i64(1))),
                                                Binary::make(BinaryOp::Eq, e, i64(1))),
                                   "tile shapes do not broadcast", op_span));
          r = simplify(Select::make(Binary::make(BinaryOp::Eq, r, i64(1)), e,
                                    Select::make(Binary::make(BinaryOp::Eq, e, i64(1)), r, max(r, e))));
        }
      }
      result[k] = r;
    }
    return result;
  }

  // Element `idx` of a prepared tile expression whose extents are `ext`.
  Expr elem(const Expr& p, const std::vector<Expr>& idx, const std::vector<Expr>& ext) {
    switch (p->kind) {
      case ExprKind::Var: {
        const TileLocal& t = tiles_.at(p.as<Var>()->name);
        return make_access(t.buffer, buffer_types_.at(t.buffer), at(idx));
      }
      case ExprKind::Access: {
        auto a = p.as<Access>();
        const Type& bt = buffer_types_.at(a->buffer);
        std::vector<AxisSel> axes;
        size_t j = 0;
        for (size_t k = 0; k < bt.rank(); ++k) {
          if (k < a->axes.size() && !a->axes[k].is_slice) {
            axes.push_back(a->axes[k]);
          } else if (k < a->axes.size()) {
            Expr lo = a->axes[k].lo.defined() ? a->axes[k].lo : i64(0);
            axes.push_back(AxisSel::at(simplify(lo + idx[j++])));
          } else {
            axes.push_back(AxisSel::at(idx[j++]));
          }
        }
        return make_access(a->buffer, bt, axes, a->span);
      }
      case ExprKind::Fill: return p.as<Fill>()->value;
      case ExprKind::Transpose: {
        std::vector<Expr> r(idx.rbegin(), idx.rend());
        std::vector<Expr> e(ext.rbegin(), ext.rend());
        return elem(p.as<Transpose>()->value, r, e);
      }
      case ExprKind::Cast: return Cast::make(p->type.dtype, operand(p.as<Cast>()->value, idx, ext), p->span);
      case ExprKind::Unary: return Unary::make(p.as<Unary>()->op, operand(p.as<Unary>()->a, idx, ext), p->span);
      case ExprKind::Binary: {
        auto b = p.as<Binary>();
        return Binary::make(b->op, operand(b->a, idx, ext), operand(b->b, idx, ext), p->span);
      }
      case ExprKind::Select: {
        auto s = p.as<Select>();
        return Select::make(operand(s->cond, idx, ext), operand(s->t, idx, ext), operand(s->f, idx, ext), p->span);
      }
      case ExprKind::Math: {
        std::vector<Expr> args;
        for (const Expr& a : p.as<Math>()->args) args.push_back(operand(a, idx, ext));
        return Math::make(p.as<Math>()->fn, args, p->span);
      }
      default: give_up("tile expression " + print(p));
    }
  }

  // An operand of an element-wise operation at the result's index: scalars
  // as they are, tiles right-aligned, size-1 axes read at 0.
  Expr operand(const Expr& o, const std::vector<Expr>& idx, const std::vector<Expr>& ext) {
    if (o->type.is_scalar()) return o;
    Block ignored;  // extents of prepared operands add no statements
    std::vector<Expr> oe = extents(o, ignored, o->span);
    std::vector<Expr> oi;
    size_t lead = ext.size() - oe.size();
    for (size_t k = 0; k < oe.size(); ++k) {
      const Expr& i = idx[lead + k];
      if (is_const(oe[k], 1)) oi.push_back(i64(0));
      else if (provably_equal(oe[k], ext[lead + k])) oi.push_back(i);
      else oi.push_back(Select::make(Binary::make(BinaryOp::Eq, oe[k], i64(1)), i64(0), i));
    }
    return elem(o, oi, oe);
  }

  // A 2-D (or 1-D) matrix product into an array, accumulated in k order from
  // zero in the result's dtype, as the reference does.
  Expr matmul(const MatMul& m, Block& out) {
    Expr a = prepare(m.a, out), b = prepare(m.b, out);
    if (order_ == ProductOrder::DotProducts) {
      // Every element of a factor is read by a whole row or column of dot
      // products: a factor that is a view of a parameter (a transposed one
      // read down its columns) or an expression (else computed once per
      // read) is copied into an array of its own first. (A tile's array
      // read transposed stays: the GPU schedule pads its rows.)
      a = staged(a, out, m.span);
      b = staged(b, out, m.span);
    } else if (b.as<Transpose>()) {
      // Rows of products run along b's rows: a transposed b (attention's
      // Q K^T) is copied into an array the right way round first, so that
      // they are contiguous.
      std::string name = fresh("stage");
      materialize(b, name, /*is_mutable=*/false, out, m.span);
      b = Var::make(name, Type::tensor(b->type.dtype, tiles_.at(name).extents));
    }
    std::vector<Expr> ae = extents(a, out, m.span), be = extents(b, out, m.span);
    bool a_vec = ae.size() == 1, b_vec = be.size() == 1;
    Expr inner_a = ae.back(), inner_b = be[0];
    if (!provably_equal(inner_a, inner_b))
      out.push_back(make_check(Binary::make(BinaryOp::Eq, inner_a, inner_b), "matmul: inner dimensions do not match", m.span));
    std::vector<Expr> re;
    if (!a_vec) re.push_back(ae[0]);
    if (!b_vec) re.push_back(be[1]);
    std::string name = fresh("mm");
    TileLocal t = new_tile(name, m.type.dtype, re, false, out, m.span);
    DType dt = m.type.dtype;
    if (!a_vec && !b_vec && order_ == ProductOrder::RowsOfProducts) {
      // Row by row in i-k-j order: each element still sums its products in k
      // order from zero, and the j loop runs over contiguous memory.
      loops({t.extents[0]}, name, out, m.span, [&](const std::vector<Expr>& row, Block& body) {
        loops({t.extents[1]}, name, body, m.span, [&](const std::vector<Expr>& col, Block& init) {
          init.push_back(make_store(name, at({row[0], col[0]}), zero(dt), m.span));
        });
        std::string kv = fresh("k");
        Expr k = i64v(kv);
        auto ki = interval(inner_a);
        ranges_[kv] = Interval{0, ki ? std::max<int64_t>(ki->hi - 1, 0) : 0};
        Block over_k;
        loops({t.extents[1]}, name, over_k, m.span, [&](const std::vector<Expr>& col, Block& step) {
          std::vector<AxisSel> ij = at({row[0], col[0]});
          Expr prod = Binary::make(BinaryOp::Mul, elem(a, {row[0], k}, ae), elem(b, {k, col[0]}, be));
          step.push_back(make_store(name, ij, Binary::make(BinaryOp::Add, make_access(name, buffer_types_.at(name), ij), prod), m.span));
        });
        body.push_back(make_for(kv, i64(0), inner_a, i64(1), std::move(over_k), LoopKind::Serial, 0, m.span));
      });
      return Var::make(name, Type::tensor(dt, t.extents));
    }
    loops(t.extents, name, out, m.span, [&](const std::vector<Expr>& idx, Block& body) {
      std::string acc = fresh("acc");
      std::string kv = fresh("k");
      Expr k = i64v(kv);
      auto ki = interval(inner_a);
      ranges_[kv] = Interval{0, ki ? std::max<int64_t>(ki->hi - 1, 0) : 0};
      std::vector<Expr> ai = a_vec ? std::vector<Expr>{k} : std::vector<Expr>{idx[0], k};
      std::vector<Expr> bi = b_vec ? std::vector<Expr>{k} : std::vector<Expr>{k, idx[a_vec ? 0 : 1]};
      Type st = Type::scalar(dt);
      Expr x = elem(a, ai, ae), y = elem(b, bi, be), sum = Var::make(acc, st);
      // f32 and f64 terms as fused multiply-adds, one rounding each (as a
      // GPU's own matrix libraries add them up).
      Expr next = dt == DType::F32 || dt == DType::F64 ? Math::make(MathFn::Fma, {x, y, sum}, m.span)
                                                       : Binary::make(BinaryOp::Add, sum, Binary::make(BinaryOp::Mul, x, y));
      body.push_back(make_decl(acc, st, zero(dt), m.span));
      body.push_back(make_for(kv, i64(0), inner_a, i64(1), {make_assign(acc, next, m.span)}, LoopKind::Serial, 0, m.span));
      body.push_back(make_store(name, at(idx), Var::make(acc, st), m.span));
    });
    return Var::make(name, Type::tensor(dt, t.extents));
  }

  static Expr zero(DType t) {
    if (is_float(t)) return FloatImm::make(0.0, t);
    if (is_bool(t)) return BoolImm::make(false);
    return IntImm::make(0, t);
  }

  static Expr literal(const Scalar& s) {
    if (is_float(s.dtype)) return FloatImm::make(s.f, s.dtype);
    if (is_bool(s.dtype)) return BoolImm::make(s.truthy());
    return IntImm::make(s.as_int64(), s.dtype);
  }

  // The accumulation of one reduction, over elements given by `value_at`,
  // with the reference's rules (f64 sums of floats, NaN-first arg
  // reductions). Emits into `body` and returns the result.
  struct Accumulator {
    ReduceOp op;
    DType in;             // the elements' dtype
    DType acc_type;
    std::string acc, best, has;
  };

  Accumulator start(ReduceOp op, DType in, Block& out, Span span) {
    Accumulator a{op, in, in, fresh("acc"), "", ""};
    bool arg = is_arg_reduce(op);
    if (arg) {
      a.acc_type = DType::I64;
      a.best = fresh("best");
      a.has = fresh("has");
      out.push_back(make_decl(a.acc, Type::scalar(DType::I64), i64(0), span));
      out.push_back(make_decl(a.best, Type::scalar(in), zero(in), span));
      out.push_back(make_decl(a.has, Type::scalar(DType::Bool), BoolImm::make(false), span));
      return a;
    }
    a.acc_type = reduce_accumulator_dtype(op, a.acc_type);
    if (op == ReduceOp::And || op == ReduceOp::Or) a.acc_type = DType::Bool;
    out.push_back(make_decl(a.acc, Type::scalar(a.acc_type), literal(reduce_identity(op, a.acc_type)), span));
    return a;
  }

  void absorb(const Accumulator& a, const Expr& v, const Expr& flat_index, Block& body, Span span) {
    Type at = Type::scalar(a.acc_type);
    Expr acc = Var::make(a.acc, at);
    if (is_arg_reduce(a.op)) {
      Type bt = Type::scalar(a.in);
      Expr best = Var::make(a.best, bt), has = Var::make(a.has, Type::scalar(DType::Bool));
      BinaryOp cmp = a.op == ReduceOp::ArgMax ? BinaryOp::Gt : BinaryOp::Lt;
      std::string vv = fresh("v");
      body.push_back(make_let(vv, v, span));
      Expr vref = Var::make(vv, bt);
      Expr better = Binary::make(cmp, vref, best);
      if (is_float(a.in)) {  // the first NaN wins: a NaN best stays, a NaN candidate takes over
        Expr best_nan = Binary::make(BinaryOp::Ne, best, best), v_nan = Binary::make(BinaryOp::Ne, vref, vref);
        better = Binary::make(BinaryOp::And, Unary::make(UnaryOp::Not, best_nan), Binary::make(BinaryOp::Or, v_nan, better));
      }
      Expr take = Binary::make(BinaryOp::Or, Unary::make(UnaryOp::Not, has), better);
      body.push_back(make_if(take,
                             {make_assign(a.best, vref, span), make_assign(a.acc, flat_index, span),
                              make_assign(a.has, BoolImm::make(true), span)},
                             {}, span));
      return;
    }
    Expr x = v->type.dtype == a.acc_type ? v : Cast::make(a.acc_type, v);
    Expr r;
    switch (a.op) {
      case ReduceOp::Sum: r = Binary::make(BinaryOp::Add, acc, x); break;
      case ReduceOp::Product: r = Binary::make(BinaryOp::Mul, acc, x); break;
      case ReduceOp::Min: r = Binary::make(BinaryOp::Min, acc, x); break;
      case ReduceOp::Max: r = Binary::make(BinaryOp::Max, acc, x); break;
      case ReduceOp::And: r = Binary::make(BinaryOp::And, acc, x); break;
      case ReduceOp::Or: r = Binary::make(BinaryOp::Or, acc, x); break;
      default: break;
    }
    body.push_back(make_assign(a.acc, r, span));
  }

  Expr finish(const Accumulator& a, DType result) {
    Expr acc = Var::make(a.acc, Type::scalar(a.acc_type));
    return a.acc_type == result ? acc : Cast::make(result, acc);
  }

  void require_nonempty(ReduceOp op, const std::vector<Expr>& ext, Block& out, Span span) {
    if (op == ReduceOp::Sum || op == ReduceOp::Product || op == ReduceOp::And || op == ReduceOp::Or) return;
    for (const Expr& e : ext) {
      auto r = interval(e);
      if (!r || r->lo < 1)
        out.push_back(make_check(Binary::make(BinaryOp::Gt, e, i64(0)), std::string(reduce_op_name(op)) + " of an empty tile", span));
    }
  }

  // A reduction over every element (scalar) into a variable.
  Expr reduce_all(const Reduce& r, Block& out) {
    Expr x = prepare(r.value, out);
    std::vector<Expr> ext = extents(x, out, r.span);
    require_nonempty(r.op, ext, out, r.span);
    Accumulator a = start(r.op, x->type.dtype, out, r.span);
    loops(ext, "red", out, r.span, [&](const std::vector<Expr>& idx, Block& body) {
      Expr flat = i64(0);
      for (size_t k = 0; k < idx.size(); ++k) flat = simplify(flat * ext[k] + idx[k]);
      absorb(a, elem(x, idx, ext), flat, body, r.span);
    });
    std::string result = fresh("red");
    out.push_back(make_let(result, finish(a, r.type.dtype), r.span));
    return Var::make(result, r.type);
  }

  // A reduction along one axis (row_max, row_sum, ...) into an array.
  Expr reduce_axis(const Reduce& r, Block& out) {
    Expr x = prepare(r.value, out);
    std::vector<Expr> ext = extents(x, out, r.span);
    int axis = *r.axis;
    std::vector<Expr> re;
    for (size_t k = 0; k < ext.size(); ++k) {
      if (static_cast<int>(k) != axis) re.push_back(ext[k]);
      else if (r.keepdims) re.push_back(i64(1));
    }
    require_nonempty(r.op, {ext[static_cast<size_t>(axis)]}, out, r.span);
    std::string name = fresh("red");
    TileLocal t = new_tile(name, r.type.dtype, re, false, out, r.span);
    loops(t.extents, name, out, r.span, [&](const std::vector<Expr>& idx, Block& body) {
      Accumulator a = start(r.op, x->type.dtype, body, r.span);
      std::string kv = fresh("k");
      auto ki = interval(ext[static_cast<size_t>(axis)]);
      ranges_[kv] = Interval{0, ki ? std::max<int64_t>(ki->hi - 1, 0) : 0};
      std::vector<Expr> xi;
      size_t j = 0;
      for (size_t k = 0; k < ext.size(); ++k) {
        if (static_cast<int>(k) == axis) {
          xi.push_back(i64v(kv));
          if (r.keepdims) ++j;
        } else {
          xi.push_back(idx[j++]);
        }
      }
      Block inner;
      absorb(a, elem(x, xi, ext), i64v(kv), inner, r.span);
      body.push_back(make_for(kv, i64(0), ext[static_cast<size_t>(axis)], i64(1), inner, LoopKind::Serial, 0, r.span));
      body.push_back(make_store(name, at(idx), finish(a, r.type.dtype), r.span));
    });
    return Var::make(name, Type::tensor(r.type.dtype, t.extents));
  }

  Expr dot(const Dot& d, Block& out) {
    Expr a = prepare(d.a, out), b = prepare(d.b, out);
    std::vector<Expr> ae = extents(a, out, d.span), be = extents(b, out, d.span);
    if (!provably_equal(ae[0], be[0]))
      out.push_back(make_check(Binary::make(BinaryOp::Eq, ae[0], be[0]), "dot: the tiles differ in length", d.span));
    DType dt = d.type.dtype;
    Type st = Type::scalar(dt);
    std::string acc = fresh("dot");
    out.push_back(make_decl(acc, st, zero(dt), d.span));
    loops({ae[0]}, acc, out, d.span, [&](const std::vector<Expr>& idx, Block& body) {
      Expr prod = Binary::make(BinaryOp::Mul, elem(a, idx, ae), elem(b, idx, be));
      body.push_back(make_assign(acc, Binary::make(BinaryOp::Add, Var::make(acc, st), prod), d.span));
    });
    return Var::make(acc, st);
  }

  static bool has_tile_ops(const Expr& e) {
    HasTiles h;
    h.include(e);
    return h.found;
  }

  // A scalar expression with its tile sub-expressions computed first.
  Expr scalar(const Expr& e, Block& out) {
    if (!e.defined()) return e;
    switch (e->kind) {
      case ExprKind::Dot: return dot(*e.as<Dot>(), out);
      case ExprKind::Reduce:
        if (e->type.is_scalar()) return reduce_all(*e.as<Reduce>(), out);
        break;
      case ExprKind::MatMul: give_up("a matrix product with a scalar result");
      case ExprKind::Access: {
        auto a = e.as<Access>();
        std::vector<AxisSel> axes;
        for (const AxisSel& s : a->axes) {
          if (s.is_slice) give_up("a slice in a scalar access");
          axes.push_back(AxisSel::at(scalar(s.index, out)));
        }
        return make_access(a->buffer, buffer_types_.at(a->buffer), axes, a->span);
      }
      case ExprKind::Cast: return Cast::make(e->type.dtype, scalar(e.as<Cast>()->value, out), e->span);
      case ExprKind::Unary: return Unary::make(e.as<Unary>()->op, scalar(e.as<Unary>()->a, out), e->span);
      case ExprKind::Binary: {
        auto b = e.as<Binary>();
        // Computing a tile operation early would change what `and`/`or` skip.
        if ((b->op == BinaryOp::And || b->op == BinaryOp::Or) && has_tile_ops(b->b))
          give_up("a tile operation on the right of and/or");
        return Binary::make(b->op, scalar(b->a, out), scalar(b->b, out), e->span);
      }
      case ExprKind::Select: {
        auto s = e.as<Select>();
        if (has_tile_ops(s->t) || has_tile_ops(s->f)) give_up("a tile operation in a branch of where()");
        return Select::make(scalar(s->cond, out), scalar(s->t, out), scalar(s->f, out), e->span);
      }
      case ExprKind::Math: {
        std::vector<Expr> args;
        for (const Expr& a : e.as<Math>()->args) args.push_back(scalar(a, out));
        return Math::make(e.as<Math>()->fn, args, e->span);
      }
      default: break;
    }
    if (!e->type.is_scalar()) give_up("a tile where a single value is needed (" + print(e) + ")");
    return e;
  }

  const Kernel& k_;
  ProductOrder order_;
  std::map<std::string, Type> buffer_types_;
  std::map<std::string, TileLocal> tiles_;
  std::map<std::string, Interval> ranges_;
  int counter_ = 0;
};

}  // namespace

bool has_tiles(const Kernel& k) {
  HasTiles h;
  for (const Stmt& s : k.body) h.include(s);
  return h.found;
}

std::optional<Kernel> scalarize_tiles(const Kernel& k, std::string* why, ProductOrder order) {
  try {
    Kernel out = simplify(Scalarizer(k, order).run());
    verify_or_throw(out, "scalarize_tiles");
    return out;
  } catch (const GiveUp& g) {
    if (why) *why = g.why;
    return std::nullopt;
  }
}

}  // namespace zyntax::cir
