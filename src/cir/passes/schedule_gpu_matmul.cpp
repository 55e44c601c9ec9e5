#include "cir/passes/schedule_gpu_matmul.hpp"

#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/gpu_tile_staging.hpp"
#include "cir/passes/product_form.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

namespace {

constexpr int64_t T = kGpuMatmulThreads;
constexpr int kStages = 3;  // depth steps in flight with asynchronous copies

// A block's tile of the output (bm x bn), the depth of a step (bk), and the
// block of it each thread owns (tm x tn): 16 x 16 threads either way.
struct Tiles {
  int64_t bm, bn, bk, tm, tn;
};
constexpr Tiles kLarge{128, 128, 8, 8, 8};  // 64 accumulators; per depth index 8 reads of xs (paired over two) and 2 vectors of ys per 64 FMAs
constexpr Tiles kSmall{64, 64, 16, 4, 4};   // products under 128 rows or columns
static_assert((kLarge.bm / kLarge.tm) * (kLarge.bn / kLarge.tn) == T && (kSmall.bm / kSmall.tm) * (kSmall.bn / kSmall.tn) == T,
              "a thread per block of the tile");
static_assert(kLarge.tn % 4 == 0 && kSmall.tn % 4 == 0, "a thread's columns come in runs of 4");

Expr f32(double v) { return FloatImm::make(v, DType::F32); }

class Scheduler {
 public:
  Scheduler(const Kernel& k, const ProductForm& m, const Tiles& tiles, const GpuTarget& target)
      : k_(k), m_(m), target_(target), fresh_(k), BM(tiles.bm), BN(tiles.bn), BK(tiles.bk), TM(tiles.tm), TN(tiles.tn), TY(BM / TM), TX(BN / TN) {}

  Kernel run() {
    int64_t M = m_.rows.size(), N = m_.cols.size(), K = m_.depth.size();
    int64_t mt = (M + BM - 1) / BM, nt = (N + BN - 1) / BN;
    std::string tile = fresh_("tile%mm"), bt = fresh_("bt%mm"), rt = fresh_("rt%mm"), ct = fresh_("ct%mm");
    std::string xs = fresh_("xs%mm"), ys = fresh_("ys%mm"), acc = fresh_("acc%mm"), k0 = fresh_("k0%mm");
    Block block = m_.tile_lets(tile, mt, nt, bt, rt, ct);
    // A guarded product (a padded convolution) keeps, beside its guarded
    // factor, whether each term is added at all.
    std::string gs = m_.guard.defined() ? fresh_("gs%mm") : "";
    x_ = staging(xs, m_.x, m_.rows, rt, BM, LDX, 1, /*depth_fastest=*/true, m_.guard_on_x ? gs : "");
    y_ = staging(ys, m_.y, m_.cols, ct, BN, 1, BN, /*depth_fastest=*/false, m_.guard_on_x ? "" : gs);
    int x_run = async_run_length(x_, m_.depth, k_, fresh_, target_.vector_bytes);
    int y_run = async_run_length(y_, m_.depth, k_, fresh_, target_.vector_bytes);
    bool async = target_.async_copy && x_run > 0 && y_run > 0;
    for (int s = 0; s < (async ? kStages : 1); ++s) {
      x_stages_.push_back(async ? fresh_(xs) : xs);
      y_stages_.push_back(async ? fresh_(ys) : ys);
      block.push_back(make_allocate(x_stages_.back(), Type::tensor(DType::F32, {i64(BM * LDX)}), MemorySpace::Shared, span()));
      block.push_back(make_allocate(y_stages_.back(), Type::tensor(DType::F32, {i64(BK * BN)}), MemorySpace::Shared, span()));
    }
    block.push_back(make_allocate(acc, Type::tensor(DType::F32, {i64(T), i64(TM * TN)}), MemorySpace::Local, span()));
    if (m_.guard.defined())
      block.push_back(make_allocate(gs, Type::tensor(DType::Bool, {i64(m_.guard_on_x ? BM * LDX : BK * BN)}), MemorySpace::Shared, span()));

    // The accumulators start where the sum does.
    block.push_back(per_element(rt, ct, M, N, [&](const std::string& t, const Expr& e, const Substitution& at) {
      Expr init = m_.init.defined() ? substitute(m_.init, at) : f32(0.0);
      return Block{make_store(acc, {AxisSel::at(index_var(t)), AxisSel::at(e)}, init, span())};
    }));

    // Between barriers, or two steps ahead into three stages (gpu_tile_staging's depth_steps).
    DepthStaging depth_staging{x_, y_, x_run, y_run, x_stages_, y_stages_, BK, T, "t%mm"};
    Block steps = depth_steps(depth_staging, m_.depth, k0, K, fresh_, span(), [&](int stage, const Expr& k_start) {
      return products(x_stages_[static_cast<size_t>(stage)], y_stages_[static_cast<size_t>(stage)], gs, acc, k_start, K);
    });
    block.insert(block.end(), steps.begin(), steps.end());

    // out[..] = f(sum) with the sum the accumulator.
    block.push_back(per_element(rt, ct, M, N, [&](const std::string& t, const Expr& e, Substitution at) {
      at[m_.sum->name] = make_access(acc, Type::tensor(DType::F32, {i64(T), i64(TM * TN)}), {AxisSel::at(index_var(t)), AxisSel::at(e)});
      std::vector<AxisSel> axes;
      for (const AxisSel& a : m_.store->axes) axes.push_back(AxisSel::at(simplify(substitute(a.index, at))));
      return Block{make_store(m_.store->buffer, std::move(axes), substitute(m_.store->value, at), m_.store->span)};
    }));

    Kernel out = k_;
    out.body = {make_for(tile, i64(0), i64(m_.batch() * mt * nt), i64(1), std::move(block), LoopKind::GpuBlock, 0, span())};
    verify_or_throw(out, "schedule_gpu_matmul");
    return out;
  }

 private:
  Span span() const { return m_.store->span; }

  // gpu_thread t: for e in 0..TM*TN: (row, col) of the thread's element e; if
  // inside the output, `body` at that element's loop values.
  template <class Body>
  Stmt per_element(const std::string& rt, const std::string& ct, int64_t M, int64_t N, Body body) {
    std::string t = fresh_("t%mm"), e = fresh_("e%mm"), row = fresh_("row%mm"), col = fresh_("col%mm");
    Block inner = {make_let(row, index_var(rt) * i64(BM) + index_var(t) / i64(TX) + (index_var(e) / i64(TN)) * i64(TY)),
                   make_let(col, index_var(ct) * i64(BN) + column(index_var(t), mod(index_var(e), TN)))};
    Substitution at = m_.rows.at(index_var(row));
    for (auto& [name, value] : m_.cols.at(index_var(col))) at[name] = value;
    inner.push_back(make_if(both(less_than(index_var(row), i64(M)), less_than(index_var(col), i64(N))), body(t, index_var(e), at)));
    Stmt elements = make_for(e, i64(0), i64(TM * TN), i64(1), std::move(inner), LoopKind::Unrolled, TM * TN, span());
    return make_for(t, i64(0), i64(T), i64(1), {elements}, LoopKind::GpuThread, 0, span());
  }

  // The tile column of thread t's b-th column: runs of kRun adjacent
  // columns, a thread's runs TX * kRun apart, so that its reads of a row of
  // ys are 16-byte vectors (and its stores of the output too), a warp's
  // together consecutive.
  static constexpr int64_t kRun = 4;
  Expr column(const Expr& t, const Expr& b) const {
    return (b / i64(kRun)) * i64(TX * kRun) + mod(t, TX) * i64(kRun) + mod(b, kRun);
  }

  // A factor's tile of a depth step: element (side s, depth d) at
  // array[s * side_stride + d * depth_stride] (and the guard in `mask`, laid
  // out alike, for the guarded factor).
  TileStaging staging(const std::string& array, const Expr& factor, const LoopGroup& side, const std::string& tile, int64_t width,
                      int64_t side_stride, int64_t depth_stride, bool depth_fastest, const std::string& mask) const {
    TileStaging st{.array = array, .factor = factor, .side = &side, .tile = tile, .width = width, .depth = BK, .side_stride = side_stride,
                   .depth_stride = depth_stride, .depth_fastest = depth_fastest, .dtype = DType::F32, .guard = {}, .mask = {}};
    if (!mask.empty()) {
      st.guard = m_.guard;
      st.mask = mask;
    }
    return st;
  }

  // gpu_thread t: for kk below min(BK, K - k0): for a, b: acc[t, a*TN + b] = fma(xs[..], ys[..], acc[t, a*TN + b])
  // (where the guard held, with one).
  Stmt products(const std::string& xs, const std::string& ys, const std::string& gs, const std::string& acc, const Expr& k_start,
                int64_t K) {
    std::string t = fresh_("t%mm");
    Type xs_type = Type::tensor(DType::F32, {i64(BM * LDX)}), ys_type = Type::tensor(DType::F32, {i64(BK * BN)});
    Type acc_type = Type::tensor(DType::F32, {i64(T), i64(TM * TN)});
    int unroll = static_cast<int>(BK);
    // for kk below `depth`: for a, b: the update (loops named afresh each time).
    auto steps = [&](const Expr& depth, LoopKind kind) {
      std::string kk = fresh_("kk%mm"), a = fresh_("a%mm"), b = fresh_("b%mm");
      std::vector<AxisSel> cell = {AxisSel::at(index_var(t)), AxisSel::at(index_var(a) * i64(TN) + index_var(b))};
      Expr x = make_access(xs, xs_type, {AxisSel::at((index_var(t) / i64(TX) + index_var(a) * i64(TY)) * i64(LDX) + index_var(kk))});
      Expr y = make_access(ys, ys_type, {AxisSel::at(index_var(kk) * i64(BN) + column(index_var(t), index_var(b)))});
      Expr sum = Math::make(MathFn::Fma, {x, y, make_access(acc, acc_type, cell)});
      if (!gs.empty()) {
        const Access& guarded = *(m_.guard_on_x ? x : y).as<Access>();
        Expr added = make_access(gs, Type::tensor(DType::Bool, {i64(m_.guard_on_x ? BM * LDX : BK * BN)}), guarded.axes);
        sum = Select::make(added, sum, make_access(acc, acc_type, cell));
      }
      Stmt update = make_store(acc, cell, sum, span());
      Stmt over_b = make_for(b, i64(0), i64(TN), i64(1), {update}, LoopKind::Unrolled, static_cast<int>(TN), span());
      Stmt over_a = make_for(a, i64(0), i64(TM), i64(1), {over_b}, LoopKind::Unrolled, static_cast<int>(TM), span());
      return make_for(kk, i64(0), depth, i64(1), {over_a}, kind, kind == LoopKind::Unrolled ? unroll : 0, span());
    };
    // A whole step unrolled (its shared reads at constant offsets) where the
    // copies are synchronous. With three stages in flight, a whole step
    // unrolled has its reads hoisted into twice the registers (255 rather
    // than 128 a thread on sm_90: one block a multiprocessor, not two);
    // two depth indices at a time keep 128 and let the next one's shared
    // reads start under the current one's multiply-adds (on an H100 at
    // 4096: 35 TFLOP/s against 29 a depth index at a time, 33 four at a
    // time, 32 the whole step). The last step of a ragged depth is a loop.
    LoopKind whole = LoopKind::Unrolled;
    if (x_stages_.size() > 1) unroll = 2;
    // The steps are made one statement at a time: each names its loops
    // afresh, and the names must not hang on the compiler's order of
    // evaluating arguments.
    Stmt over_k = steps(i64(BK), whole);
    if (K % BK != 0) {
      Stmt ragged = steps(i64(K) - k_start, LoopKind::Serial);
      over_k = make_if(less_than(k_start + i64(BK), i64(K + 1)), {over_k}, {ragged}, span());
    }
    return make_for(t, i64(0), i64(T), i64(1), {over_k}, LoopKind::GpuThread, 0, span());
  }

  const Kernel& k_;
  const ProductForm& m_;
  const GpuTarget& target_;
  FreshNames fresh_;
  const int64_t BM, BN, BK, TM, TN, TY, TX;
  const int64_t LDX = BK + 4;  // X's rows in shared memory, depth contiguous, 16 bytes of padding
  TileStaging x_, y_;
  std::vector<std::string> x_stages_, y_stages_;  // the factors' arrays, one per stage
};

}  // namespace

bool takes_large_gpu_tiles(const ProductForm& m, int64_t large_tiles) {
  int64_t M = m.rows.size(), N = m.cols.size();
  int64_t tiles = m.batch() * ((M + kLarge.bm - 1) / kLarge.bm) * ((N + kLarge.bn - 1) / kLarge.bn);
  return M >= kLarge.bm && N >= kLarge.bn && tiles >= large_tiles;
}

std::optional<Kernel> schedule_gpu_matmul(const Kernel& k, const GpuTarget& target, std::string* why_not, int tiles) {
  auto fail = [&](std::string why) -> std::optional<Kernel> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  std::optional<ProductForm> m = match_product(k);
  if (!m) return fail("not a matrix product");
  if (m->sum->type.dtype != DType::F32 || m->x->type.dtype != DType::F32 || m->y->type.dtype != DType::F32)
    return fail("a product not in f32");
  bool large = takes_large_gpu_tiles(*m, target.multiprocessors);
  if (tiles == 1) large = false;
  if (tiles == 2) large = takes_large_gpu_tiles(*m, 0);  // large each way, however few tiles
  return Scheduler(k, *m, large ? kLarge : kSmall, target).run();
}

}  // namespace zyntax::cir
