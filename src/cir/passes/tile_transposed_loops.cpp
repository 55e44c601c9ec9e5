#include "cir/passes/tile_transposed_loops.hpp"

#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

// What the inner loop's body reads and writes along `a` and `b`.
struct Strides : IRVisitor {
  const std::string &a, &b;
  bool writes_along_b = false;  // a store's last axis reads b
  bool reads_across_b = false;  // a read has b in another axis and a in its last
  bool other = false;           // anything this pass does not reorder (loops, atomics, ...)
  Strides(const std::string& outer, const std::string& inner) : a(outer), b(inner) {}

  static bool reads(const Expr& e, const std::string& v) { return e.defined() && reads_any(e, {v}); }
  void visit(const Access* op) override {
    if (!op->axes.empty() && !op->axes.back().is_slice && reads(op->axes.back().index, a)) {
      for (size_t d = 0; d + 1 < op->axes.size(); ++d)
        if (reads(op->axes[d].index, b)) reads_across_b = true;
    }
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    if (!op->axes.empty() && !op->axes.back().is_slice && reads(op->axes.back().index, b)) writes_along_b = true;
    IRVisitor::visit(op);
  }
  void visit(const For*) override { other = true; }
  void visit(const Atomic*) override { other = true; }
  void visit(const MatMulBlock*) override { other = true; }
};

std::optional<int64_t> trips(const For& f) {
  auto lo = f.lo.as<IntImm>(), hi = f.hi.as<IntImm>(), step = f.step.as<IntImm>();
  if (!lo || !hi || !step || step->value != 1) return std::nullopt;
  return hi->value - lo->value;
}

class Tiler {
 public:
  explicit Tiler(int64_t tile) : T_(tile) {}

  Block block(const Block& b) {
    Block out;
    for (const Stmt& s : b) {
      auto f = s.as<For>();
      if (!f) {
        out.push_back(s);
        continue;
      }
      if (std::optional<Stmt> tiled = tile(*f)) {
        out.push_back(*tiled);
        continue;
      }
      out.push_back(make_for(f->var, f->lo, f->hi, f->step, block(f->body), f->loop_kind, f->factor, f->span));
    }
    return out;
  }

 private:
  std::optional<Stmt> tile(const For& outer) {
    if (outer.loop_kind != LoopKind::Parallel || outer.body.size() != 1) return std::nullopt;
    auto inner = outer.body[0].as<For>();
    if (!inner || inner->loop_kind != LoopKind::Parallel) return std::nullopt;
    std::optional<int64_t> A = trips(outer), B = trips(*inner);
    // A loop shorter than two tiles gains nothing from them.
    if (!A || !B || *A < 2 * T_ || *B < 2 * T_) return std::nullopt;
    Strides s(outer.var, inner->var);
    s.include(inner->body);
    if (s.other || !s.writes_along_b || !s.reads_across_b) return std::nullopt;

    std::string at = outer.var + "%t", bt = inner->var + "%t";
    auto index = [](const std::string& v) { return Var::make(v, Type::scalar(DType::I64)); };
    Expr a0 = outer.lo + index(at) * i64(T_), b0 = inner->lo + index(bt) * i64(T_);
    Stmt over_b = make_for(inner->var, b0, min(b0 + i64(T_), inner->hi), inner->step, inner->body, inner->loop_kind, inner->factor,
                           inner->span);
    Stmt over_a = make_for(outer.var, a0, min(a0 + i64(T_), outer.hi), outer.step, {over_b}, LoopKind::Serial, 0, outer.span);
    Stmt tiles_b = make_for(bt, i64(0), i64((*B + T_ - 1) / T_), i64(1), {over_a}, LoopKind::Serial, 0, inner->span);
    return make_for(at, i64(0), i64((*A + T_ - 1) / T_), i64(1), {tiles_b}, LoopKind::Parallel, 0, outer.span);
  }

  int64_t T_;
};

}  // namespace

Kernel tile_transposed_loops(const Kernel& k, int64_t tile) {
  Kernel out = k;
  out.body = Tiler(tile).block(k.body);
  out = simplify(out);
  verify_or_throw(out, "tile_transposed_loops");
  return out;
}

}  // namespace zyntax::cir
