#include "cir/passes/schedule_gpu_mma.hpp"

#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/gpu_tile_staging.hpp"
#include "cir/passes/product_form.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

// An f16 or bf16 value widened to f32, unwidened.
Expr narrow(const Expr& e) {
  auto c = e.as<Cast>();
  if (!c || c->type.dtype != DType::F32) return {};
  DType from = c->value->type.dtype;
  return c->value->type.is_scalar() && (from == DType::F16 || from == DType::BF16) ? c->value : Expr();
}

}  // namespace

std::optional<TensorCoreFactors> tensor_core_factors(const ProductForm& m, bool tf32, const MatrixUnits& units, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<TensorCoreFactors> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (m.sum->type.dtype != DType::F32) return fail("the sum is not f32");
  Expr x = narrow(m.x), y = narrow(m.y);
  if (x.defined() && y.defined() && x->type.dtype == y->type.dtype) {
    DType t = x->type.dtype;
    if (t == DType::F16 ? !units.f16 : !units.bf16) return fail(std::string("no matrix units for ") + dtype_name(t) + " factors");
    return TensorCoreFactors{x, y, t};
  }
  if (m.x->type.dtype == DType::F32 && m.y->type.dtype == DType::F32) {
    if (tf32 && !units.tf32) return fail("no matrix units for TF32 factors");
    if (tf32) return TensorCoreFactors{m.x, m.y, DType::F32};
    return fail("f32 factors without @precision(tf32)");
  }
  return fail("factors other than f16 or bf16 values widened to f32");
}

namespace {

// Matrix units take a tile step from a subgroup of 32 lanes (a warp);
// GpuTarget::verify holds any target with matrix units to that.
constexpr int kMatrixUnitSubgroup = 32;
constexpr int WARP_ROWS = 2, WARP_COLS = 4, STORE_ROWS = 32;
constexpr int STAGES = 3;  // depth steps in flight with asynchronous copies
constexpr int T = kGpuMmaThreads;
static_assert(WARP_ROWS * WARP_COLS * kMatrixUnitSubgroup == T, "a warp per part of the tile");

class Scheduler {
 public:
  // `tile`: the output tile's side, 128 or 64 (each warp then takes 64x32 or 32x16).
  Scheduler(const Kernel& k, const ProductForm& m, TensorCoreFactors f, bool async_copies, int run_bytes, int tile)
      : k_(k), m_(m), f_(std::move(f)), fresh_(k), async_copies_(async_copies), run_bytes_(run_bytes), bm_(tile), bn_(tile), ldd_(tile + 4) {
    depth_ = f_.dtype == DType::F32 ? 16 : 32;
    int pad = 16 / static_cast<int>(dtype_size(f_.dtype));  // 16 bytes
    lda_ = depth_ + pad;
    ldb_ = bn_ + pad;
  }

  Kernel run() {
    const int BM = bm_, BN = bn_;
    int64_t M = m_.rows.size(), N = m_.cols.size(), K = m_.depth.size();
    int64_t mt = (M + BM - 1) / BM, nt = (N + BN - 1) / BN;
    std::string tile = fresh_("tile%tc"), bt = fresh_("bt%tc"), rt = fresh_("rt%tc"), ct = fresh_("ct%tc");
    std::string xs = fresh_("xs%tc"), ys = fresh_("ys%tc"), ds = fresh_("ds%tc"), acc = fresh_("acc%tc"), k0 = fresh_("k0%tc");
    Block block = m_.tile_lets(tile, mt, nt, bt, rt, ct);
    TileStaging x = staging(xs, f_.x, m_.rows, rt, BM, lda_, /*depth_fastest=*/true);
    TileStaging y = staging(ys, f_.y, m_.cols, ct, BN, ldb_, /*depth_fastest=*/false);
    int x_run = async_run_length(x, m_.depth, k_, fresh_, run_bytes_), y_run = async_run_length(y, m_.depth, k_, fresh_, run_bytes_);
    bool async = async_copies_ && x_run > 0 && y_run > 0;
    // A factor's array for each stage (one when the copies are synchronous).
    auto stage_arrays = [&](const std::string& base, int64_t elements, std::vector<std::string>& names) {
      for (int s = 0; s < (async ? STAGES : 1); ++s) {
        names.push_back(async ? fresh_(base) : base);
        block.push_back(make_allocate(names.back(), Type::tensor(f_.dtype, {i64(elements)}), MemorySpace::Shared, span()));
      }
    };
    stage_arrays(xs, BM * lda_, x_stages_);
    stage_arrays(ys, depth_ * ldb_, y_stages_);
    block.push_back(make_allocate(ds, Type::tensor(DType::F32, {i64(STORE_ROWS * ldd_)}), MemorySpace::Shared, span()));
    block.push_back(make_allocate(acc, Type::tensor(DType::F32, {i64(BM), i64(BN)}), MemorySpace::Fragment, span()));
    block.push_back(make_mma_zero(acc, WARP_ROWS, WARP_COLS, span()));

    // Between barriers, or STAGES - 1 steps ahead (gpu_tile_staging's depth_steps).
    DepthStaging depth_staging{x, y, x_run, y_run, x_stages_, y_stages_, depth_, T, "t%tc"};
    Block steps = depth_steps(depth_staging, m_.depth, k0, K, fresh_, span(), [&](int stage, const Expr&) {
      return make_mma_accumulate(acc, WARP_ROWS, WARP_COLS, x_stages_[static_cast<size_t>(stage)], lda_, y_stages_[static_cast<size_t>(stage)],
                                 ldb_, depth_, span());
    });
    block.insert(block.end(), steps.begin(), steps.end());

    for (int q = 0; q < BM; q += STORE_ROWS) {
      block.push_back(make_mma_store(ds, ldd_, acc, WARP_ROWS, WARP_COLS, q, STORE_ROWS, span()));
      block.push_back(make_barrier());
      block.push_back(epilogue(ds, rt, ct, q, M, N));
      block.push_back(make_barrier());
    }

    Kernel out = k_;
    out.body = {make_for(tile, i64(0), i64(m_.batch() * mt * nt), i64(1), std::move(block), LoopKind::GpuBlock, 0, span())};
    verify_or_throw(out, "schedule_gpu_mma");
    return out;
  }

 private:
  Span span() const { return m_.store->span; }

  // A factor's tile of a depth step, rows ld apart: xs[r * lda + kk]
  // (depth fastest) or ys[kk * ldb + c].
  TileStaging staging(const std::string& array, const Expr& factor, const LoopGroup& side, const std::string& tile, int64_t width, int64_t ld,
                      bool depth_fastest) const {
    return TileStaging{.array = array, .factor = factor, .side = &side, .tile = tile, .width = width, .depth = depth_,
                       .side_stride = depth_fastest ? ld : 1, .depth_stride = depth_fastest ? 1 : ld, .depth_fastest = depth_fastest,
                       .dtype = f_.dtype, .guard = {}, .mask = {}};
  }

  // gpu_thread t: for e in t..32 * BN step T: out[..] = f(init + ds[r * ldd + c])
  // at row rt * BM + q + r, column ct * BN + c, inside the output.
  Stmt epilogue(const std::string& ds, const std::string& rt, const std::string& ct, int q, int64_t M, int64_t N) {
    const int BM = bm_, BN = bn_, LDD = ldd_;
    std::string t = fresh_("t%tc"), e = fresh_("e%tc"), r = fresh_("r%tc"), c = fresh_("c%tc"), row = fresh_("row%tc"), col = fresh_("col%tc");
    Block body = {make_let(r, index_var(e) / i64(BN)), make_let(c, mod(index_var(e), BN)), make_let(row, index_var(rt) * i64(BM) + i64(q) + index_var(r)),
                  make_let(col, index_var(ct) * i64(BN) + index_var(c))};
    Substitution at = m_.rows.at(index_var(row));
    for (auto& [name, value] : m_.cols.at(index_var(col))) at[name] = value;
    Expr sum = make_access(ds, Type::tensor(DType::F32, {i64(STORE_ROWS * LDD)}), {AxisSel::at(index_var(r) * i64(LDD) + index_var(c))});
    if (m_.init.defined()) sum = Binary::make(BinaryOp::Add, substitute(m_.init, at), sum);
    at[m_.sum->name] = sum;
    std::vector<AxisSel> axes;
    for (const AxisSel& a : m_.store->axes) axes.push_back(AxisSel::at(simplify(substitute(a.index, at))));
    body.push_back(make_if(both(less_than(index_var(row), i64(M)), less_than(index_var(col), i64(N))),
                           {make_store(m_.store->buffer, std::move(axes), substitute(m_.store->value, at), m_.store->span)}));
    Stmt loop = make_for(e, index_var(t), i64(STORE_ROWS * BN), i64(T), std::move(body), LoopKind::Serial, 0, span());
    return make_for(t, i64(0), i64(T), i64(1), {loop}, LoopKind::GpuThread, 0, span());
  }

  const Kernel& k_;
  const ProductForm& m_;
  TensorCoreFactors f_;
  FreshNames fresh_;
  bool async_copies_ = true;
  int run_bytes_;  // the longest run an asynchronous copy moves (the target's vector width)
  int bm_, bn_, ldd_;
  int depth_ = 32, lda_ = 40, ldb_ = 136;
  std::vector<std::string> x_stages_, y_stages_;  // the factors' arrays, one per stage
};

}  // namespace

std::optional<Kernel> schedule_gpu_mma(const Kernel& k, const GpuTarget& target, std::string* why_not, bool async_copies) {
  std::optional<ProductForm> m = match_product(k);
  if (!m) {
    if (why_not) *why_not = "not a matrix product";
    return std::nullopt;
  }
  if (m->guard.defined()) {
    if (why_not) *why_not = "a product with a guard (a padded convolution)";
    return std::nullopt;
  }
  if (target.subgroup_size != kMatrixUnitSubgroup) {
    if (why_not) *why_not = "matrix units need subgroups of " + std::to_string(kMatrixUnitSubgroup);
    return std::nullopt;
  }
  std::optional<TensorCoreFactors> f = tensor_core_factors(*m, k.hints.tf32, target.matrix_units, why_not);
  if (!f) return std::nullopt;
  // 128x128 tiles only where there are enough of them to fill the GPU:
  // fewer, larger tiles leave multiprocessors idle.
  bool async = async_copies && target.async_copy;
  return Scheduler(k, *m, *f, async, target.vector_bytes, takes_large_gpu_tiles(*m, target.multiprocessors) ? 128 : 64).run();
}

}  // namespace zyntax::cir
