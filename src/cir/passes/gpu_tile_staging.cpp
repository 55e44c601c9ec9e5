#include "cir/passes/gpu_tile_staging.hpp"

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

}  // namespace zyntax::cir
