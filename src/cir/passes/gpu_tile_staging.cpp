#include "cir/passes/gpu_tile_staging.hpp"

#include "cir/affine.hpp"
#include "cir/passes/element_maps.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/reads.hpp"
#include "cir/substitute.hpp"

namespace zyntax::cir {

Stmt stage_factor_tile(const TileStaging& st, const LoopGroup& depth, const std::string& k0, int64_t K, int64_t threads, FreshNames& fresh,
                       Span span) {
  std::string t = fresh("t%st"), n = fresh("n%st"), s = fresh("s%st"), d = fresh("d%st");
  Block body = {make_let(s, st.depth_fastest ? index_var(n) / i64(st.depth) : mod(index_var(n), st.width)),
                make_let(d, st.depth_fastest ? mod(index_var(n), st.depth) : index_var(n) / i64(st.width))};
  Expr index = index_var(st.tile) * i64(st.width) + index_var(s), step = index_var(k0) + index_var(d);
  Substitution at = st.side->at(index);
  for (auto& [name, value] : depth.at(step)) at[name] = value;
  std::vector<AxisSel> to = {AxisSel::at(index_var(s) * i64(st.side_stride) + index_var(d) * i64(st.depth_stride))};
  Block value = {make_store(st.array, to, substitute(st.factor, at), span)};
  Block zero = {make_store(st.array, to, FloatImm::make(0.0, st.dtype), span)};
  if (st.guard.defined()) {
    Expr holds = substitute(st.guard, at);
    value = {make_if(holds, value, zero), make_store(st.mask, to, holds, span)};
    zero.push_back(make_store(st.mask, to, BoolImm::make(false), span));
  }
  body.push_back(make_if(both(less_than(index, i64(st.side->size())), less_than(step, i64(K))), value, zero));
  Stmt loop = make_for(n, index_var(t), i64(st.width * st.depth), i64(threads), std::move(body), LoopKind::Serial, 0, span);
  return make_for(t, i64(0), i64(threads), i64(1), {loop}, LoopKind::GpuThread, 0, span);
}

namespace {

// The factor at side index `tile * width + s` and depth step `k_start + d`.
Expr factor_at(const TileStaging& st, const LoopGroup& depth, const Expr& s, const Expr& k_start, const Expr& d) {
  Substitution at = st.side->at(index_var(st.tile) * i64(st.width) + s);
  for (auto& [name, value] : depth.at(k_start + d)) at[name] = value;
  return simplify(substitute(st.factor, at));
}

}  // namespace

int async_run_length(const TileStaging& st, const LoopGroup& depth, const Kernel& k, FreshNames& fresh, int max_bytes) {
  if (st.guard.defined()) return 0;
  std::string s = fresh("s%run"), d = fresh("d%run"), k0 = fresh("k0%run");
  Expr e = factor_at(st, depth, index_var(s), index_var(k0), index_var(d));
  const Access* a = e.as<Access>();
  const Param* p = a ? k.find_param(a->buffer) : nullptr;
  if (!p || p->role != ParamRole::Input || p->type.dtype != st.dtype || a->axes.empty() || a->axes.size() != p->type.rank()) return 0;
  const IntImm* last_extent = p->type.shape.back().as<IntImm>();
  if (!last_extent) return 0;
  const std::string& fast = st.depth_fastest ? d : s;
  int64_t slow_stride = st.depth_fastest ? st.side_stride : st.depth_stride;
  if ((st.depth_fastest ? st.depth_stride : st.side_stride) != 1) return 0;
  for (size_t i = 0; i < a->axes.size(); ++i) {
    const AxisSel& sel = a->axes[i];
    if (sel.is_slice) return 0;
    if (i + 1 < a->axes.size() && reads(sel.index).count(fast)) return 0;
  }
  // The last index: fast + (terms not reading it, each a multiple of the run).
  Affine last = linearize(a->axes.back().index);
  std::vector<uint64_t> multiples = {last.constant, static_cast<uint64_t>(last_extent->value), static_cast<uint64_t>(slow_stride),
                                     static_cast<uint64_t>(st.width), static_cast<uint64_t>(st.depth)};
  bool has_fast = false;
  for (const auto& [text, term] : last.terms) {
    if (is_var(term.expr, fast)) {
      if (term.coeff != 1) return 0;
      has_fast = true;
      continue;
    }
    if (reads(term.expr).count(fast)) return 0;
    if (!is_var(term.expr, k0)) multiples.push_back(term.coeff);  // k0 steps by whole depths
  }
  if (!has_fast) return 0;
  int64_t size = static_cast<int64_t>(dtype_size(st.dtype));
  for (int64_t bytes = max_bytes; bytes >= 4; bytes /= 2) {
    if (bytes < size) break;
    auto run = static_cast<uint64_t>(bytes / size);
    bool fits = true;
    for (uint64_t m : multiples) fits = fits && m % run == 0;
    if (fits) return static_cast<int>(run);
  }
  return 0;
}

Stmt async_stage_factor_tile(const TileStaging& st, int run, const LoopGroup& depth, const Expr& k_start, int64_t K, const std::string& thread,
                             int64_t threads, FreshNames& fresh, Span span) {
  std::string n = fresh("n%as"), s = fresh("s%as"), d = fresh("d%as");
  int64_t lines = st.depth_fastest ? st.depth / run : st.width / run;  // runs along the fast direction
  Block body = {make_let(s, st.depth_fastest ? index_var(n) / i64(lines) : mod(index_var(n), lines) * i64(run)),
                make_let(d, st.depth_fastest ? mod(index_var(n), lines) * i64(run) : index_var(n) / i64(lines))};
  Expr index = index_var(st.tile) * i64(st.width) + index_var(s), step = k_start + index_var(d);
  Expr factor = factor_at(st, depth, index_var(s), k_start, index_var(d));
  const Access* a = factor.as<Access>();
  std::vector<Expr> from;
  for (const AxisSel& sel : a->axes) from.push_back(sel.index);
  // Elements read: the run's part before the depth's (or the side's) end,
  // none where the other coordinate is past its end.
  auto part = [&](Expr left) { return min(max(std::move(left), i64(0)), i64(run)); };
  Expr valid = st.depth_fastest ? Select::make(less_than(index, i64(st.side->size())), part(i64(K) - step), i64(0))
                                : Select::make(less_than(step, i64(K)), part(i64(st.side->size()) - index), i64(0));
  body.push_back(make_async_copy(st.array, simplify(index_var(s) * i64(st.side_stride) + index_var(d) * i64(st.depth_stride)), a->buffer,
                                 std::move(from), run, simplify(valid), span));
  return make_for(n, index_var(thread), i64(st.width * st.depth / run), i64(threads), std::move(body), LoopKind::Serial, 0, span);
}

namespace {

// gpu_thread t: the asynchronous copies of both tiles of the depth step at
// `k_start` into stage `stage` (none past K), then the commit of their group.
Stmt async_copy_step(const DepthStaging& p, int stage, const LoopGroup& depth, const Expr& k_start, int64_t K, FreshNames& fresh, Span span) {
  std::string t = fresh(p.thread_base);
  TileStaging x = p.x, y = p.y;
  x.array = p.x_stages[static_cast<size_t>(stage)];
  y.array = p.y_stages[static_cast<size_t>(stage)];
  Block in_k = {async_stage_factor_tile(x, p.x_run, depth, k_start, K, t, p.threads, fresh, span),
                async_stage_factor_tile(y, p.y_run, depth, k_start, K, t, p.threads, fresh, span)};
  Expr inside = simplify(less_than(k_start, i64(K)));
  const BoolImm* always = inside.as<BoolImm>();
  Block body = always && always->value ? std::move(in_k) : Block{make_if(inside, std::move(in_k))};
  body.push_back(make_async_commit(span));
  return make_for(t, i64(0), i64(p.threads), i64(1), std::move(body), LoopKind::GpuThread, 0, span);
}

}  // namespace

Block depth_steps(const DepthStaging& p, const LoopGroup& depth, const std::string& k0, int64_t K, FreshNames& fresh, Span span,
                  const std::function<Stmt(int stage, const Expr& k_start)>& compute) {
  const int stages = static_cast<int>(p.x_stages.size());
  if (stages == 1) {
    Block step = {stage_factor_tile(p.x, depth, k0, K, p.threads, fresh, span), stage_factor_tile(p.y, depth, k0, K, p.threads, fresh, span),
                  make_barrier(), compute(0, index_var(k0)), make_barrier()};
    return {make_for(k0, i64(0), i64(K), i64(p.step), std::move(step), LoopKind::Serial, 0, span)};
  }
  Block out;
  for (int s = 0; s + 1 < stages; ++s) out.push_back(async_copy_step(p, s, depth, i64(s * p.step), K, fresh, span));
  Block steps;
  for (int j = 0; j < stages; ++j) {
    std::string t = fresh(p.thread_base);
    Expr k_start = index_var(k0) + i64(j * p.step);
    Block step = {make_for(t, i64(0), i64(p.threads), i64(1), {make_async_wait(stages - 2, span)}, LoopKind::GpuThread, 0, span), make_barrier(),
                  async_copy_step(p, (j + stages - 1) % stages, depth, index_var(k0) + i64((j + stages - 1) * p.step), K, fresh, span),
                  compute(j, k_start)};
    if (j == 0) steps.insert(steps.end(), step.begin(), step.end());
    else steps.push_back(make_if(less_than(k_start, i64(K)), std::move(step)));
  }
  out.push_back(make_for(k0, i64(0), i64(K), i64(stages * p.step), std::move(steps), LoopKind::Serial, 0, span));
  return out;
}

}  // namespace zyntax::cir
