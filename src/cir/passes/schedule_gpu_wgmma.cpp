#include "cir/passes/schedule_gpu_wgmma.hpp"

#include <algorithm>

#include "cir/affine.hpp"
#include "cir/passes/gpu_loops.hpp"
#include "cir/passes/product_form.hpp"
#include "cir/passes/schedule_gpu_mma.hpp"
#include "cir/passes/simplify.hpp"
#include "cir/verifier.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

constexpr int kStages = 4, kConsumers = 2, kGroup = 8;
constexpr int kRulesCluster = 1;  // blocks per cluster by the rules
constexpr int64_t kCopyAlignment = 16;     // bytes: the copy engine's strides
constexpr int64_t kMaxStride = int64_t{1} << 40;  // bytes

using Fail = std::optional<Kernel>;

// A factor's view (ir.hpp's ProductOperand) from its expression: an input
// read at a linear index of the side's, the depth's and the batch's flat
// indices, or nothing (and why).
std::optional<ProductOperand> operand_view(const Kernel& k, const Expr& factor, DType dtype, const LoopGroup& side, const LoopGroup& depth,
                                           const LoopGroup& batch, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<ProductOperand> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  const std::string s = "side%wg", d = "depth%wg", b = "batch%wg";
  Substitution at = side.at(index_var(s));
  for (auto& [n, v] : depth.at(index_var(d))) at[n] = v;
  for (auto& [n, v] : batch.at(index_var(b))) at[n] = v;
  Expr e = simplify(substitute(factor, at));
  const Access* a = e.as<Access>();
  const Param* p = a ? k.find_param(a->buffer) : nullptr;
  if (!p || p->role != ParamRole::Input || p->type.dtype != dtype) return fail("a factor that is not an input read directly");
  if (a->axes.size() != p->type.rank() || p->type.rank() == 0) return fail("a factor read at fewer indices than its rank");
  // The flat index, row-major over the input's constant shape.
  std::vector<int64_t> shape;
  for (const Expr& x : p->type.shape) {
    std::optional<int64_t> v = constant_value(x);
    if (!v) return fail("a factor of a shape not known");
    shape.push_back(*v);
  }
  Expr flat = i64(0);
  for (size_t i = 0; i < a->axes.size(); ++i) {
    if (a->axes[i].is_slice) return fail("a factor read through a slice");
    flat = flat * i64(shape[i]) + a->axes[i].index;
  }
  Affine form = linearize(simplify(flat));
  if (form.constant != 0) return fail("a factor read from an offset into its input");
  int64_t cs = 0, cd = 0, cb = 0;
  for (const auto& [text, term] : form.terms) {
    auto v = term.expr.as<Var>();
    auto coeff = static_cast<int64_t>(term.coeff);
    if (!v || coeff <= 0) return fail("a factor read at an index not linear in the tile's rows, columns and depth");
    if (v->name == s) cs = coeff;
    else if (v->name == d) cd = coeff;
    else if (v->name == b) cb = coeff;
    else return fail("a factor read at an index not linear in the tile's rows, columns and depth");
  }
  ProductOperand o;
  o.buffer = a->buffer;
  o.dtype = dtype;
  int64_t size = static_cast<int64_t>(dtype_size(dtype));
  if (cd == 1) {
    o.k_major = true;
    o.dims = {depth.size(), side.size(), batch.size()};
    o.strides = {cs, cb};
  } else if (cs == 1) {
    o.k_major = false;
    o.dims = {side.size(), depth.size(), batch.size()};
    o.strides = {cd, cb};
  } else {
    return fail("a factor whose fast axis is neither the depth nor the tile's side");
  }
  // Round the unused stride of a one-long axis up to a legal one.
  if (o.dims[1] == 1) o.strides[0] = (o.dims[0] * size + kCopyAlignment - 1) / kCopyAlignment * kCopyAlignment / size;
  if (o.strides[0] <= 0) return fail("a factor read at the same place along a whole axis");
  o.rank = batch.size() > 1 && cb > 0 ? 3 : 2;
  if (o.rank == 2) o.strides[1] = 0;
  for (int i = 0; i + 1 < o.rank; ++i) {
    int64_t bytes = o.strides[static_cast<size_t>(i)] * size;
    if (bytes % kCopyAlignment != 0 || bytes >= kMaxStride)
      return fail("a factor whose rows are " + std::to_string(bytes) + " bytes apart (the copy engine needs multiples of 16)");
  }
  if (o.dims[0] * size < kCopyAlignment) return fail("a factor whose fast axis is shorter than 16 bytes");
  int64_t last = (o.dims[0] - 1) + (o.dims[1] - 1) * o.strides[0] + (o.rank == 3 ? (o.dims[2] - 1) * o.strides[1] : 0);
  int64_t numel = 1;
  for (int64_t x : shape) numel *= x;
  if (last >= numel) return fail("a factor's view past the end of its input");
  return o;
}

// The loops before the row loops: the batch, as one flat index.
LoopGroup batch_group(const ProductForm& m) {
  LoopGroup g;
  for (size_t i = 0; i < m.rows_at; ++i) g.loops.push_back({m.loops[i]->var, *constant_value(m.loops[i]->lo), m.extent(*m.loops[i])});
  return g;
}

}  // namespace

int warpgroup_product_cluster(const Kernel& k) {
  struct Find : IRVisitor {
    int cluster = 1;
    using IRVisitor::visit;
    void visit(const WarpgroupProduct* op) override { cluster = std::max(cluster, op->cluster); }
  } find;
  find.include(k.body);
  return find.cluster;
}

std::optional<Kernel> schedule_gpu_wgmma(const Kernel& k, const GpuTarget& target, std::string* why_not, int cluster) {
  auto fail = [&](std::string w) -> Fail {
    if (why_not) *why_not = std::move(w);
    return std::nullopt;
  };
  if (!target.warpgroup_mma || !target.tensor_copies) return fail("no warpgroup matrix units or tensor copies on " + target.arch);
  if (target.max_threads_per_block < kWarpgroupProductThreads) return fail("blocks of fewer than 384 threads");
  std::optional<ProductForm> m = match_product(k);
  if (!m) return fail("not a matrix product");
  if (m->guard.defined()) return fail("a product with a guard (a padded convolution)");
  std::optional<TensorCoreFactors> f = tensor_core_factors(*m, k.hints.tf32, target.matrix_units, why_not);
  if (!f) return std::nullopt;
  bool tf32 = f->dtype == DType::F32;
  LoopGroup batch = batch_group(*m);
  std::optional<ProductOperand> a = operand_view(k, f->x, f->dtype, m->rows, m->depth, batch, why_not);
  if (!a) return std::nullopt;
  std::optional<ProductOperand> b = operand_view(k, f->y, f->dtype, m->cols, m->depth, batch, why_not);
  if (!b) return std::nullopt;
  // TF32 wgmma reads its second factor from shared memory K-major only; its
  // first may come from registers, loaded from a tile of any major. A
  // product whose second factor is MN-major (b[k, n], the common layout) is
  // computed transposed: out^T = b^T a^T, b's tile in registers, a's K-major.
  bool transposed = false;
  if (tf32 && !b->k_major) {
    if (!a->k_major) return fail("TF32 factors neither of which has the depth as its fast axis");
    std::swap(a, b);
    transposed = true;
  }
  const LoopGroup& rows = transposed ? m->cols : m->rows;
  const LoopGroup& cols = transposed ? m->rows : m->cols;

  FreshNames fresh(k);
  Span span = m->store->span;
  WarpgroupProduct p(span);
  p.a = *a;
  p.b = *b;
  p.rows = rows.size();
  p.cols = cols.size();
  p.depth = m->depth.size();
  p.batches = batch.size();
  p.tile_rows = 128;
  p.tile_depth = tf32 ? 32 : 64;  // 128 bytes: one swizzled row
  p.stages = kStages;
  p.consumers = kConsumers;
  p.group = kGroup;
  // 128 x 256 tiles where there are enough to fill the multiprocessors.
  p.tile_cols = 256;
  if (p.tiles() < target.multiprocessors) p.tile_cols = 128;
  if (p.stage_bytes() > target.shared_memory_max) return fail("the stages need more shared memory than a block may have");
  // Pairs of blocks share B's tiles where the tuner asks (not yet by the
  // rules: pairs have not been timed against single blocks on a GPU).
  p.cluster = cluster != 0 ? cluster : kRulesCluster;
  if (p.cluster > 1 && !target.block_clusters) return fail("clusters of " + std::to_string(p.cluster) + " blocks on " + target.arch);
  if (p.cluster > 1 && target.multiprocessors < p.cluster) p.cluster = 1;
  int64_t clusters = std::max<int64_t>(1, std::min<int64_t>(p.turns(), target.multiprocessors / p.cluster));
  int64_t blocks = clusters * p.cluster;

  std::string blk = fresh("blk%wg");
  p.stage = fresh("stage%wg");
  p.batch_var = fresh("b%wg");
  p.row = fresh("row%wg");
  p.col = fresh("col%wg");
  p.value = fresh("value%wg");
  // A cluster's blocks are consecutive along x: block / cluster is the
  // cluster, block % cluster the place in it.
  p.first_tile = p.cluster > 1 ? index_var(blk) / i64(p.cluster) : index_var(blk);
  p.tile_stride = i64(clusters);
  if (p.cluster > 1) p.cluster_rank = Binary::make(BinaryOp::Mod, index_var(blk), i64(p.cluster));

  // The epilogue: the store of one element, inside the output.
  Substitution at = rows.at(index_var(p.row));
  for (auto& [n, v] : cols.at(index_var(p.col))) at[n] = v;
  for (auto& [n, v] : batch.at(index_var(p.batch_var))) at[n] = v;
  Expr sum = Var::make(p.value, Type::scalar(DType::F32));
  if (m->init.defined()) sum = Binary::make(BinaryOp::Add, substitute(m->init, at), sum);
  at[m->sum->name] = sum;
  std::vector<AxisSel> axes;
  for (const AxisSel& x : m->store->axes) axes.push_back(AxisSel::at(simplify(substitute(x.index, at))));
  p.epilogue = {make_if(both(less_than(index_var(p.row), i64(p.rows)), less_than(index_var(p.col), i64(p.cols))),
                        {make_store(m->store->buffer, std::move(axes), substitute(m->store->value, at), m->store->span)})};

  Block body = {make_allocate(p.stage, Type::tensor(DType::U8, {i64(p.stage_bytes())}), MemorySpace::Shared, span),
                make_warpgroup_product(p)};
  Kernel out = k;
  out.body = {make_for(blk, i64(0), i64(blocks), i64(1), std::move(body), LoopKind::GpuBlock, 0, span)};
  verify_or_throw(out, "schedule_gpu_wgmma");
  return out;
}

}  // namespace zyntax::cir
