#include "codegen/llvm/kernel_abi.hpp"

#include "cir/visitor.hpp"
#include "support/scalar.hpp"
#include "support/trip_count.hpp"

namespace zyntax::codegen {

namespace {

std::optional<DType> yielded_dtype(const cir::Block& b) {
  for (const cir::Stmt& s : b) {
    if (auto y = s.as<cir::Yield>()) return y->value->type.dtype;
    if (auto f = s.as<cir::For>())
      if (auto t = yielded_dtype(f->body)) return t;
    if (auto i = s.as<cir::If>()) {
      if (auto t = yielded_dtype(i->then_body)) return t;
      if (auto t = yielded_dtype(i->else_body)) return t;
    }
  }
  return std::nullopt;
}

// The tensor maps of every warpgroup product and attention of a kernel, in
// the order of the walk, each with the statement that reads it.
class TensorMapFinder : public cir::IRVisitor {
 public:
  std::vector<std::pair<const cir::StmtNode*, TensorMapParam>> found;
  using cir::IRVisitor::visit;
  void visit(const cir::WarpgroupProduct* op) override {
    found.push_back({op, {op->a, product_operand_box(op->a, op->tile_rows, op->tile_depth)}});
    // In clusters a K-major B tile comes in one box per block (warpgroup_product.cpp).
    int b_side = op->b.k_major ? op->tile_cols / op->cluster : op->tile_cols;
    found.push_back({op, {op->b, product_operand_box(op->b, b_side, op->tile_depth)}});
    cir::IRVisitor::visit(op);
  }
  // Queries and keys in steps of the head dimension (one swizzled row),
  // values in chunks of it by the key tile.
  void visit(const cir::WarpgroupAttention* op) override {
    constexpr int step = cir::WarpgroupAttention::kHeadStep;
    found.push_back({op, {op->q, product_operand_box(op->q, op->tile_rows, step)}});
    found.push_back({op, {op->k, product_operand_box(op->k, op->tile_keys, step)}});
    found.push_back({op, {op->v, product_operand_box(op->v, step, op->tile_keys)}});
    cir::IRVisitor::visit(op);
  }
};

}  // namespace

std::array<uint32_t, 3> product_operand_box(const cir::ProductOperand& operand, int side_tile, int depth_tile) {
  if (operand.k_major) return {static_cast<uint32_t>(depth_tile), static_cast<uint32_t>(side_tile), 1};
  // 128 bytes of side indices (one swizzle row) per copy; the emitter issues
  // side_tile / that many copies.
  return {static_cast<uint32_t>(128 / dtype_size(operand.dtype)), static_cast<uint32_t>(depth_tile), 1};
}

std::vector<TensorMapParam> tensor_map_params(const cir::Kernel& k) {
  TensorMapFinder finder;
  finder.include(k.body);
  std::vector<TensorMapParam> params;
  for (const auto& [node, param] : finder.found) params.push_back(param);
  return params;
}

size_t tensor_maps_before(const cir::Kernel& k, const cir::StmtNode* node) {
  TensorMapFinder finder;
  finder.include(k.body);
  size_t before = 0;
  while (before < finder.found.size() && finder.found[before].first != node) ++before;
  return before;
}

ReduceBuffers reduce_buffers(const cir::Kernel& k) {
  ReduceBuffers r;
  DType out = k.output().type.dtype;
  r.acc_dtype = reduce_accumulator_dtype(k.reduce_op, out);
  r.arg = is_arg_reduce(k.reduce_op);
  if (r.arg) {
    r.acc_dtype = DType::I64;
    r.best_dtype = yielded_dtype(k.body).value_or(DType::F32);
  }
  return r;
}

size_t argument_slots(const cir::Kernel& k) {
  size_t reduce = k.kind == cir::KernelKind::Reduce ? (reduce_buffers(k).arg ? 3 : 1) : 0;
  return k.params.size() + k.dims.size() + reduce;
}

std::optional<OuterLoop> outer_parallel_loop(const cir::Kernel& k) {
  if (k.body.size() != 1) return std::nullopt;
  auto f = k.body[0].as<cir::For>();
  if (!f || f->loop_kind != cir::LoopKind::Parallel) return std::nullopt;
  auto lo = f->lo.as<cir::IntImm>(), hi = f->hi.as<cir::IntImm>(), step = f->step.as<cir::IntImm>();
  if (!lo || !hi || !step || step->value <= 0) return std::nullopt;
  OuterLoop o;
  o.lo = lo->value;
  o.step = step->value;
  o.trips = trip_count(lo->value, hi->value, step->value);
  return o;
}

}  // namespace zyntax::codegen
