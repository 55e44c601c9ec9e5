#include "cir/passes/gpu_tile_products.hpp"

#include <cmath>

#include "cir/passes/element_maps.hpp"
#include "cir/visitor.hpp"
#include "support/dtype.hpp"

namespace zyntax::cir {

namespace {

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

// A sum's start that adds nothing: +0.0 (0.0 + x is x, -0.0 aside).
bool is_float_zero(const Expr& e) {
  auto f = e.as<FloatImm>();
  return f && f->value == 0.0 && !std::signbit(f->value);
}

// `e` is array[first, second] of an f32 array, both plain indices.
const Access* f32_element(const Expr& e, const std::string& first, const std::string& second) {
  auto a = e.as<Access>();
  if (!a || a->type.dtype != DType::F32 || a->axes.size() != 2 || a->axes[0].is_slice || a->axes[1].is_slice) return nullptr;
  return is_var(a->axes[0].index, first) && is_var(a->axes[1].index, second) ? a : nullptr;
}

// The constant extents of a 2-D type, or nothing.
std::optional<std::pair<int64_t, int64_t>> constant_extents(const Type& t) {
  if (t.shape.size() != 2) return std::nullopt;
  auto r = t.shape[0].as<IntImm>();
  auto c = t.shape[1].as<IntImm>();
  if (!r || !c) return std::nullopt;
  return std::pair{r->value, c->value};
}

// The warp grid over an R x C fragment: as many of the block's warps as
// split it into whole 16 x 16 pieces, most rows first.
std::pair<int, int> warp_grid(int64_t rows, int64_t cols, int warps) {
  for (int wr = warps; wr >= 1; wr /= 2) {
    if ((rows / kMatrixPieceRows) % wr) continue;
    for (int wc = warps / wr; wc >= 1; wc /= 2)
      if ((cols / kMatrixPieceCols) % wc == 0) return {wr, wc};
  }
  return {1, 1};
}

class Tf32Values : public IRVisitor {
 public:
  explicit Tf32Values(std::string array) : array_(std::move(array)) {}
  bool exact = true;

  using IRVisitor::visit;

 protected:
  void visit(const Store* op) override {
    if (op->buffer == array_ && !exact_value(op->value)) exact = false;
    IRVisitor::visit(op);
  }
  void visit(const Atomic* op) override {
    if (op->buffer == array_) exact = false;
    IRVisitor::visit(op);
  }
  void visit(const TileMma* op) override {
    if (op->step == TileMma::Step::Store && op->d == array_) exact = false;
  }
  void visit(const AsyncCopy* op) override {
    if (op->dst == array_) exact = false;
  }

 private:
  static bool exact_value(const Expr& e) {
    if (auto c = e.as<Cast>()) {
      DType from = c->value->type.dtype;
      return c->type.dtype == DType::F32 && (from == DType::F16 || from == DType::BF16);
    }
    if (auto f = e.as<FloatImm>()) {
      auto v = static_cast<float>(f->value);
      return std::isinf(v) || round_to_tf32(v) == v;
    }
    return false;
  }

  std::string array_;
};

}  // namespace

std::optional<TileProductFactors> tile_product_factors(const DotProductNest& n) {
  for (const For* loop : {n.rows, n.cols, n.terms})
    if (!is_zero(loop->lo)) return std::nullopt;
  if (n.acc->type.dtype != DType::F32) return std::nullopt;
  // The two factors of the term added to the sum.
  Expr x, y;
  const Expr& v = n.fold->value;
  if (auto m = v.as<Math>(); m && m->fn == MathFn::Fma && m->args.size() == 3 && is_var(m->args[2], n.acc->name)) {
    x = m->args[0], y = m->args[1];
  } else if (auto add = v.as<Binary>(); add && add->op == BinaryOp::Add && is_var(add->a, n.acc->name)) {
    auto mul = add->b.as<Binary>();
    if (!mul || mul->op != BinaryOp::Mul) return std::nullopt;
    x = mul->a, y = mul->b;
  } else {
    return std::nullopt;
  }
  const std::string &i = n.rows->var, &j = n.cols->var, &k = n.terms->var;
  for (int swap = 0; swap < 2; ++swap, std::swap(x, y)) {
    const Access* a = f32_element(x, i, k);
    if (!a) continue;
    if (const Access* b = f32_element(y, k, j)) return TileProductFactors{a->buffer, b->buffer, false};
    if (const Access* b = f32_element(y, j, k)) return TileProductFactors{a->buffer, b->buffer, true};
  }
  return std::nullopt;
}

bool holds_tf32_values(const Kernel& k, const std::string& array) {
  Tf32Values v(array);
  v.include(k.body);
  return v.exact;
}

Type matrix_factor_layout(const Type& tile, int64_t most_rows, int64_t most_cols) {
  Type t = tile;
  int64_t pad = 16 / static_cast<int64_t>(dtype_size(tile.dtype));
  t.shape = {i64(round_up(most_rows, kMatrixPieceRows)), i64(round_up(most_cols, kMatrixPieceCols) + pad)};
  return t;
}

std::optional<TileProductSteps> tile_product_on_matrix_units(const DotProductNest& n, const TileProductFactors& f, const TileProductShape& shape,
                                                             int warps, FreshNames& fresh) {
  int64_t R = round_up(shape.rows, kMatrixPieceRows), C = round_up(shape.cols, kMatrixPieceCols);
  int64_t D = round_up(shape.depth, kMatrixPieceDepthTf32);
  auto a = constant_extents(shape.a), b = constant_extents(shape.b);
  if (!a || !b || R <= 0 || C <= 0 || D <= 0) return std::nullopt;
  auto [a_rows, lda] = *a;
  auto [b_rows, ldb] = *b;
  // Each factor holds the pieces the units read: R x D of a, D x C of b (C x D transposed).
  if (a_rows < R || lda < D || lda % 4) return std::nullopt;
  if (f.b_transposed ? (b_rows < C || ldb < D) : (b_rows < D || ldb < C)) return std::nullopt;
  if (ldb % 4) return std::nullopt;

  Span span = n.store->span;
  TileProductSteps steps;
  Expr zero = FloatImm::make(0.0, DType::F32);
  Expr depth = n.terms->hi;
  if (!shape.depth_always_whole) {
    // a[i, k] and b's element at depth k zero for k in depth..D, every row the units read.
    auto tail = [&](const std::string& array, int64_t rows, bool depth_first) {
      std::string r = fresh(array + "%r"), k = fresh(array + "%k");
      AxisSel ri = AxisSel::at(index_var(r)), ki = AxisSel::at(index_var(k));
      Stmt store = make_store(array, depth_first ? std::vector{ki, ri} : std::vector{ri, ki}, zero, span);
      if (depth_first)  // b's depth rows, a warp along each
        return make_for(k, depth, i64(D), i64(1), {make_for(r, i64(0), i64(rows), i64(1), {store}, LoopKind::Serial, 0, span)}, LoopKind::Serial, 0, span);
      return make_for(r, i64(0), i64(rows), i64(1), {make_for(k, depth, i64(D), i64(1), {store}, LoopKind::Serial, 0, span)}, LoopKind::Serial, 0, span);
    };
    steps.zero_tails.push_back(tail(f.a, R, false));
    steps.zero_tails.push_back(tail(f.b, C, !f.b_transposed));
  }

  auto [wr, wc] = warp_grid(R, C, warps);
  std::string acc = fresh("mma%acc"), staged = fresh("mma%out");
  int64_t ldd = C + 16 / static_cast<int64_t>(dtype_size(DType::F32));
  Type staged_type = Type::tensor(DType::F32, {i64(R), i64(ldd)});
  steps.matrix_steps = {
      make_allocate(staged, staged_type, MemorySpace::Shared, span),
      make_allocate(acc, Type::tensor(DType::F32, {i64(R), i64(C)}), MemorySpace::Fragment, span),
      make_mma_zero(acc, wr, wc, span),
      make_mma_accumulate(acc, wr, wc, f.a, static_cast<int>(lda), f.b, static_cast<int>(ldb), static_cast<int>(D), span, f.b_transposed,
                           f.a_exact, f.b_exact),
      make_mma_store(staged, static_cast<int>(ldd), acc, wr, wc, 0, static_cast<int>(R), span),
  };

  // The nest's epilogue, its sum read from the staging array.
  Expr sum = make_access(staged, staged_type, {AxisSel::at(index_var(n.rows->var)), AxisSel::at(index_var(n.cols->var))}, span);
  if (!is_float_zero(n.acc->init)) sum = n.acc->init + sum;
  Block cols_body = {make_decl(n.acc->name, n.acc->type, sum, n.acc->span), Stmt(n.cols->body[2])};
  Stmt cols = make_for(n.cols->var, n.cols->lo, n.cols->hi, n.cols->step, std::move(cols_body), LoopKind::Serial, 0, n.cols->span);
  steps.epilogue = make_for(n.rows->var, n.rows->lo, n.rows->hi, n.rows->step, {cols}, LoopKind::Serial, 0, n.rows->span);
  return steps;
}

}  // namespace zyntax::cir
