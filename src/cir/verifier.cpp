#include "cir/verifier.hpp"

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "cir/printer.hpp"
#include "cir/visitor.hpp"

namespace zyntax::cir {

namespace {

enum class SymbolKind { Dim, Scalar, Input, Output, LoopVar, Let, Decl, Allocate };

struct Symbol {
  SymbolKind kind;
  Type type;
};

const char* kind_text(SymbolKind k) {
  switch (k) {
    case SymbolKind::Dim: return "dim";
    case SymbolKind::Scalar: return "scalar param";
    case SymbolKind::Input: return "input";
    case SymbolKind::Output: return "output";
    case SymbolKind::LoopVar: return "loop variable";
    case SymbolKind::Let: return "let";
    case SymbolKind::Decl: return "var";
    case SymbolKind::Allocate: return "allocation";
  }
  return "?";
}

std::string quoted(const Expr& e) { return "`" + print(e) + "`"; }

bool is_int_scalar(const Expr& e) { return e.defined() && is_int(e->type.dtype) && e->type.is_scalar(); }

// The first line of a statement without its opening brace, to say where a
// problem is.
std::string header(const Stmt& s) {
  std::string text = print(s);
  text = text.substr(0, text.find('\n'));
  if (text.size() >= 2 && text.compare(text.size() - 2, 2, " {") == 0) text.resize(text.size() - 2);
  return text;
}

class Verifier : public IRVisitor {
 public:
  explicit Verifier(const Kernel& k) : k_(k) {}

  std::vector<std::string> run() {
    int outputs = 0;
    for (const Param& p : k_.params) outputs += p.role == ParamRole::Output;
    if (outputs != 1) report("kernel has " + std::to_string(outputs) + " output params, expected exactly one");

    scopes_.emplace_back();
    for (const DimParam& d : k_.dims) declare(d.name, {SymbolKind::Dim, Type::scalar(DType::I64)});
    for (const Param& p : k_.params) {
      SymbolKind kind = p.role == ParamRole::Input    ? SymbolKind::Input
                        : p.role == ParamRole::Scalar ? SymbolKind::Scalar
                                                      : SymbolKind::Output;
      declare(p.name, {kind, p.type});
    }
    // Param extents and the hint are checked while only dims and params are
    // visible, so they cannot refer to anything else.
    for (const Param& p : k_.params) {
      where_text_ = "param '" + p.name + "'";
      if (p.role == ParamRole::Scalar && !p.type.is_scalar()) report("scalar param has tensor type " + print(p.type));
      check_extents(p.type);
    }
    if (k_.hints.shared_bytes.defined()) {
      where_text_ = "shared_bytes hint";
      check_int_scalar(k_.hints.shared_bytes, "shared_bytes");
      include(k_.hints.shared_bytes);
    }
    where_text_.clear();
    check_block(k_.body);
    if (!placed_.empty() && !unplaced_.empty()) {
      where_stmt_ = {};
      where_text_ = "shared arrays";
      report("shared array '" + unplaced_[0] + "' has no byte offset, but '" + placed_[0] + "' of the same kernel has one");
    }
    return problems_;
  }

  // ---------------------------------------------------------------- statements

  void visit(const For* op) override {
    for (const auto& [what, e] : {std::pair{"lo", op->lo}, std::pair{"hi", op->hi}, std::pair{"step", op->step}}) {
      check_int_scalar(e, std::string("loop ") + what);
      include(e);
    }
    if (const IntImm* step = op->step.as<IntImm>(); step && step->value <= 0)
      report("loop step " + std::to_string(step->value) + " is not positive");
    // GPU loops nest as grid, then block: thread loops stand in a block
    // loop, and neither kind nests in itself on the same axis.
    bool block = op->loop_kind == LoopKind::GpuBlock, thread = op->loop_kind == LoopKind::GpuThread;
    if ((block || thread) && (op->factor < 0 || op->factor > 2)) report("GPU loop axis " + std::to_string(op->factor) + " is not 0, 1 or 2");
    if (block && (in_gpu_thread_ > 0 || (gpu_block_axes_ >> op->factor & 1)))
      report("GPU block loop '" + op->var + "' stands in a thread loop or a block loop of its axis");
    if (thread && gpu_block_axes_ == 0) report("GPU thread loop '" + op->var + "' is not inside a GPU block loop");
    if (thread && (gpu_thread_axes_ >> op->factor & 1)) report("GPU thread loop '" + op->var + "' stands in a thread loop of its axis");
    unsigned saved_block = gpu_block_axes_, saved_thread = gpu_thread_axes_;
    if (block) gpu_block_axes_ |= 1u << op->factor;
    if (thread) gpu_thread_axes_ |= 1u << op->factor, ++in_gpu_thread_, thread_vars_.push_back(op->var);
    scopes_.emplace_back();
    declare(op->var, {SymbolKind::LoopVar, Type::scalar(op->hi.defined() ? op->hi->type.dtype : DType::I64)});
    check_block(op->body);
    pop_scope();
    if (thread) --in_gpu_thread_, thread_vars_.pop_back();
    gpu_block_axes_ = saved_block;
    gpu_thread_axes_ = saved_thread;
  }

  void visit(const Barrier*) override {
    if (in_gpu_thread_ > 0) report("barrier inside a GPU thread loop: the block's threads cannot all reach it");
  }

  void visit(const BlockReduce* op) override {
    if (gpu_block_axes_ == 0) report("block_reduce '" + op->name + "' is not inside a GPU block loop");
    if (in_gpu_thread_ > 0) report("block_reduce '" + op->name + "' inside a GPU thread loop: the block's threads cannot all reach it");
    if (!reduce_binary_op(op->op))
      report(std::string("block_reduce '") + op->name + "' folds with " + reduce_op_name(op->op) + "; only +, *, min and max");
    const Symbol* s = lookup(op->array);
    if (!s || s->kind != SymbolKind::Allocate || s->type.rank() != 1)
      report("block_reduce '" + op->name + "' reads '" + op->array + "', which is not a 1-D array");
    check_int_scalar(op->count, "block_reduce count");
    include(op->count);
    declare(op->name, {SymbolKind::Let, Type::scalar(s ? s->type.dtype : DType::F32)});
  }

  void visit(const If* op) override {
    check_condition(op->cond, "if condition");
    include(op->cond);
    check_block(op->then_body);
    check_block(op->else_body);
  }

  void visit(const Let* op) override {
    if (!op->value.defined()) return report("let '" + op->name + "' has no value");
    include(op->value);
    declare(op->name, {SymbolKind::Let, op->value->type});
  }

  void visit(const Decl* op) override {
    check_extents(op->type);
    if (op->init.defined()) {
      include(op->init);
      check_dtype(op->init, op->type.dtype, "initial value of '" + op->name + "'");
      if (op->type.is_scalar() && !op->init->type.is_scalar())
        report("the scalar variable '" + op->name + "' is initialised with a tile");
    }
    declare(op->name, {SymbolKind::Decl, op->type});
  }

  void visit(const Assign* op) override {
    const Symbol* s = lookup(op->name);
    if (!s)
      report("assignment to undefined '" + op->name + "'");
    else if (s->kind != SymbolKind::Decl)
      report("assignment to " + std::string(kind_text(s->kind)) + " '" + op->name + "'; only vars can be assigned");
    if (!op->value.defined()) return report("assignment has no value");
    include(op->value);
    if (s && s->kind == SymbolKind::Decl) {
      check_dtype(op->value, s->type.dtype, "value assigned to '" + op->name + "'");
      if (s->type.is_scalar() && !op->value->type.is_scalar())
        report("a tile is assigned to the scalar variable '" + op->name + "'");
    }
  }

  void visit(const Store* op) override {
    check_gpu_array_access(op->buffer, op->axes);
    const Symbol* s = writable_buffer(op->buffer);
    if (s) check_rank(op->buffer, *s, op->axes.size());
    check_axes(op->axes);
    if (!op->value.defined()) return report("store has no value");
    include(op->value);
    if (s) check_dtype(op->value, s->type.dtype, "value stored to '" + op->buffer + "'");
  }

  void visit(const Yield* op) override {
    if (k_.kind != KernelKind::Reduce) report("yield outside a reduce kernel");
    if (!op->value.defined())
      report("yield has no value");
    else if (!op->value->type.is_scalar())
      report("yielded value " + quoted(op->value) + " is not a scalar");
    include(op->value);
    bool arg = is_arg_reduce(k_.reduce_op);
    if (k_.kind == KernelKind::Reduce && arg && !op->index.defined())
      report(std::string("yield to an ") + reduce_op_name(k_.reduce_op) + " reduction has no index");
    if (k_.kind == KernelKind::Reduce && !arg && op->index.defined())
      report(std::string("yield has an index but the reduction ") + reduce_op_name(k_.reduce_op) +
             " is not an arg reduction");
    if (op->index.defined()) {
      check_int_scalar(op->index, "yield index");
      include(op->index);
    }
    if (const Param* out = output(); out && k_.kind == KernelKind::Reduce && op->out_index.size() != out->type.rank())
      report("yield has " + std::to_string(op->out_index.size()) + " output indices but the output has rank " +
             std::to_string(out->type.rank()));
    for (const Expr& e : op->out_index) {
      check_int_scalar(e, "output index");
      include(e);
    }
  }

  void visit(const Allocate* op) override {
    check_extents(op->type);
    declare(op->name, {SymbolKind::Allocate, op->type});
    if (op->space == MemorySpace::Local && gpu_block_axes_ != 0 && in_gpu_thread_ == 0) {
      if (op->type.rank() < 2) report("thread-private array '" + op->name + "' has no axis for the threads and one for each thread's elements");
      thread_private_.insert(op->name);
    }
    if (op->space == MemorySpace::Shared && gpu_block_axes_ != 0) {
      (op->offset >= 0 ? placed_ : unplaced_).push_back(op->name);
      block_shared_.insert(op->name);
    }
    if (op->offset >= 0) {
      if (op->space != MemorySpace::Shared || gpu_block_axes_ == 0 || in_gpu_thread_ > 0)
        report("array '" + op->name + "' is placed at a byte offset but is not a GPU block's shared array");
      if (op->offset % kSharedArrayAlignment != 0)
        report("shared array '" + op->name + "' is placed at byte " + std::to_string(op->offset) + ", not a multiple of " + std::to_string(kSharedArrayAlignment));
      if (allocation_bytes(*op) < 0) report("shared array '" + op->name + "' is placed but its size is not a constant");
    } else if (op->offset != -1) {
      report("array '" + op->name + "' has offset " + std::to_string(op->offset));
    }
    if (op->space == MemorySpace::Fragment) {
      if (gpu_block_axes_ == 0 || in_gpu_thread_ > 0) report("fragment array '" + op->name + "' is not in a GPU block loop outside its thread loops");
      if (op->type.rank() != 2 || op->type.dtype != DType::F32) report("fragment array '" + op->name + "' is not a 2-D f32 array");
      fragments_.insert(op->name);
    }
  }

  // The constant element count of an allocation (of any rank, read as its
  // elements in order), or -1.
  int64_t array_size(const Symbol* s) const {
    if (!s || s->kind != SymbolKind::Allocate || s->type.rank() == 0) return -1;
    int64_t n = 1;
    for (const Expr& e : s->type.shape) {
      const IntImm* extent = e.as<IntImm>();
      if (!extent) return -1;
      n *= extent->value;
    }
    return n;
  }

  void visit(const TileMma* op) override {
    std::string what = "tile_mma on '" + op->acc + "'";
    if (gpu_block_axes_ == 0) report(what + " is not inside a GPU block loop");
    if (in_gpu_thread_ > 0) report(what + " inside a GPU thread loop: the block's warps cannot all reach it");
    const Symbol* acc = lookup(op->acc);
    if (!acc || !fragments_.count(op->acc)) return report(what + ": '" + op->acc + "' is not a fragment array");
    const IntImm* r = acc->type.shape[0].as<IntImm>();
    const IntImm* c = acc->type.shape[1].as<IntImm>();
    if (!r || !c) return report(what + ": the fragment's shape is not constant");
    int64_t rows = r->value, cols = c->value;
    if (op->warp_rows <= 0 || op->warp_cols <= 0 || rows % (16 * op->warp_rows) || cols % (16 * op->warp_cols))
      report(what + ": " + std::to_string(rows) + "x" + std::to_string(cols) + " does not split into 16x16 pieces over " +
             std::to_string(op->warp_rows) + "x" + std::to_string(op->warp_cols) + " warps");
    // The fragment's registers are laid out over its warps once, by its first step.
    auto [layout, first] = fragment_warps_.emplace(op->acc, std::make_pair(op->warp_rows, op->warp_cols));
    if (!first && layout->second != std::make_pair(op->warp_rows, op->warp_cols))
      report(what + ": spread over " + std::to_string(op->warp_rows) + "x" + std::to_string(op->warp_cols) + " warps, but an earlier step over " +
             std::to_string(layout->second.first) + "x" + std::to_string(layout->second.second));
    // Fragment rows start 32-byte aligned: a leading dimension keeps each row 16-byte aligned.
    auto aligned = [&](const std::string& name, int ld, DType t) {
      if (ld <= 0 || ld * static_cast<int64_t>(dtype_size(t)) % 16) report(what + ": rows of '" + name + "' " + std::to_string(ld) + " elements apart are not 16-byte aligned");
    };
    if (op->step == TileMma::Step::Accumulate) {
      const Symbol* a = lookup(op->a);
      const Symbol* b = lookup(op->b);
      int64_t na = array_size(a), nb = array_size(b);
      if (na < 0 || nb < 0) return report(what + ": its factors '" + op->a + "' and '" + op->b + "' are not arrays of constant size");
      DType t = a->type.dtype;
      if (b->type.dtype != t || (t != DType::F16 && t != DType::BF16 && t != DType::F32))
        return report(what + ": its factors are " + dtype_name(t) + " and " + dtype_name(b->type.dtype) + "; both f16, bf16 or f32 (TF32)");
      int step = t == DType::F32 ? 8 : 16;
      if (op->depth <= 0 || op->depth % step) report(what + ": depth " + std::to_string(op->depth) + " is not a multiple of " + std::to_string(step));
      aligned(op->a, op->lda, t);
      aligned(op->b, op->ldb, t);
      if (op->lda < op->depth || (rows - 1) * op->lda + op->depth > na) report(what + ": '" + op->a + "' holds no " + std::to_string(rows) + "x" + std::to_string(op->depth) + " tile with rows " + std::to_string(op->lda) + " apart");
      int64_t b_rows = op->b_transposed ? cols : op->depth, b_cols = op->b_transposed ? op->depth : cols;
      if (op->ldb < b_cols || (b_rows - 1) * op->ldb + b_cols > nb)
        report(what + ": '" + op->b + "' holds no " + std::to_string(b_rows) + "x" + std::to_string(b_cols) + " tile with rows " + std::to_string(op->ldb) + " apart");
    }
    if (op->step == TileMma::Step::Store) {
      const Symbol* d = writable_buffer(op->d);
      int64_t nd = array_size(d);
      if (nd < 0 || d->type.dtype != DType::F32) return report(what + ": it stores to '" + op->d + "', which is not an f32 array of constant size");
      aligned(op->d, op->ldd, DType::F32);
      if (op->row0 < 0 || op->count <= 0 || op->row0 % 16 || op->count % 16 || op->row0 + op->count > rows)
        report(what + ": rows " + std::to_string(op->row0) + ".." + std::to_string(op->row0 + op->count) + " are not 16-row pieces of its " + std::to_string(rows));
      if (op->ldd < cols || (op->count - 1) * op->ldd + cols > nd) report(what + ": '" + op->d + "' holds no " + std::to_string(op->count) + "x" + std::to_string(cols) + " tile with rows " + std::to_string(op->ldd) + " apart");
    }
  }

  void visit(const AsyncCopy* op) override {
    if (in_gpu_thread_ == 0) report("asynchronous copy step outside a GPU thread loop: each thread takes its own steps");
    if (op->step == AsyncCopy::Step::Wait && op->pending < 0) report("async_wait for " + std::to_string(op->pending) + " pending groups");
    if (op->step != AsyncCopy::Step::Start) return;
    std::string what = "async_copy into '" + op->dst + "'";
    const Symbol* dst = writable_buffer(op->dst);
    if (dst && (!block_shared_.count(op->dst) || dst->type.rank() != 1)) report(what + ": not a 1-D shared array of a GPU block");
    const Symbol* src = lookup(op->src);
    if (!src || src->kind != SymbolKind::Input) return report(what + ": it copies from '" + op->src + "', which is not an input");
    if (op->src_index.size() != src->type.rank() || op->src_index.empty())
      report(what + ": '" + op->src + "' has rank " + std::to_string(src->type.rank()) + " but " + std::to_string(op->src_index.size()) + " indices");
    if (dst && dst->type.dtype != src->type.dtype)
      report(what + ": it copies " + dtype_name(src->type.dtype) + " elements into a " + dtype_name(dst->type.dtype) + " array");
    int64_t bytes = static_cast<int64_t>(op->count) * static_cast<int64_t>(dtype_size(src->type.dtype));
    if (op->count <= 0 || (bytes != 4 && bytes != 8 && bytes != 16))
      report(what + ": " + std::to_string(op->count) + " elements of " + dtype_name(src->type.dtype) + " are not 4, 8 or 16 bytes");
    check_int_scalar(op->dst_index, "async_copy destination index");
    for (const Expr& e : op->src_index) check_int_scalar(e, "async_copy source index");
    check_int_scalar(op->valid, "async_copy valid count");
    IRVisitor::visit(op);
  }

  // A factor of a warpgroup product or attention: an input of its dtype,
  // viewed inside it.
  void check_product_operand(const std::string& what, const ProductOperand& o, int64_t batches) {
    std::string w = what + ": factor '" + o.buffer + "'";
    const Symbol* s = lookup(o.buffer);
    if (!s || s->kind != SymbolKind::Input) return report(w + " is not an input");
    if (s->type.dtype != o.dtype)
      report(w + " is read as " + dtype_name(o.dtype) + " but the input is " + dtype_name(s->type.dtype));
    if (o.rank != 2 && o.rank != 3) return report(w + " has rank " + std::to_string(o.rank) + ", not 2 or 3");
    for (int i = 0; i < o.rank; ++i)
      if (o.dims[static_cast<size_t>(i)] < 1) return report(w + " has an axis of " + std::to_string(o.dims[static_cast<size_t>(i)]) + " elements");
    for (int i = 0; i + 1 < o.rank; ++i)
      if (o.strides[static_cast<size_t>(i)] < 0) return report(w + " has a negative stride");
    if (o.rank == 3 && o.dims[2] < batches)
      return report(w + "'s batch axis has " + std::to_string(o.dims[2]) + " elements, fewer than the statement's " + std::to_string(batches));
    // The last element of the view, against the input's constant size.
    int64_t numel = 1;
    for (const Expr& e : s->type.shape) {
      const IntImm* n = e.as<IntImm>();
      if (!n) return;
      numel *= n->value;
    }
    int64_t last = (o.dims[0] - 1) + (o.dims[1] - 1) * o.strides[0] + (o.rank == 3 ? (o.dims[2] - 1) * o.strides[1] : 0);
    if (last >= numel) report(w + " is viewed up to element " + std::to_string(last) + ", past the input's " + std::to_string(numel));
  }

  void visit(const WarpgroupProduct* op) override {
    std::string what = "warpgroup_product";
    check_warpgroup_placement(what);
    DType t = op->a.dtype;
    if (op->b.dtype != t || (t != DType::F16 && t != DType::BF16 && t != DType::F32))
      report(what + ": its factors are " + dtype_name(t) + " and " + dtype_name(op->b.dtype) + "; both f16, bf16 or f32 (TF32)");
    else if (t == DType::F32 && !op->b.k_major)
      report(what + ": a TF32 product's second factor must have the depth as its fast axis (k-major)");
    check_product_operand(what, op->a, op->batches);
    check_product_operand(what, op->b, op->batches);
    if (op->rows < 0 || op->cols < 0 || op->depth < 0 || op->batches < 0)
      report(what + ": a negative extent in " + std::to_string(op->batches) + "x" + std::to_string(op->rows) + "x" + std::to_string(op->cols) +
             " over " + std::to_string(op->depth));
    bool tiles_ok = op->tile_rows > 0 && op->tile_cols > 0 && op->tile_depth > 0;
    if (!tiles_ok)
      report(what + ": tiles of " + std::to_string(op->tile_rows) + "x" + std::to_string(op->tile_cols) + "x" + std::to_string(op->tile_depth));
    if (op->consumers < 1) report(what + ": " + std::to_string(op->consumers) + " consumer warpgroups");
    if (op->stages < 2) report(what + ": " + std::to_string(op->stages) + " stages, fewer than 2");
    if (op->group < 1) report(what + ": tiles grouped by " + std::to_string(op->group));
    if (op->cluster != 1 && op->cluster != 2) report(what + ": clusters of " + std::to_string(op->cluster) + " blocks (1 or 2)");
    if (op->cluster > 1 && !op->cluster_rank.defined()) report(what + ": clusters of " + std::to_string(op->cluster) + " blocks and no rank");
    if (op->cluster_rank.defined()) {
      if (op->cluster_rank->type.dtype != DType::I64 || !op->cluster_rank->type.is_scalar())
        report(what + " cluster rank " + quoted(op->cluster_rank) + " is not an i64 scalar (it is " + print(op->cluster_rank->type) + ")");
      include(op->cluster_rank);
    }
    check_warpgroup_stage(what, op->stage, tiles_ok && op->stages > 0 ? op->stage_bytes() : -1);
    check_tile_numbers(what, op->first_tile, op->tile_stride);
    check_warpgroup_epilogue(what, op->batch_var, op->row, op->col, op->value, op->epilogue);
  }

  void visit(const WarpgroupAttention* op) override {
    std::string what = "warpgroup_attention";
    check_warpgroup_placement(what);
    // P V rounds the weights to v's dtype, and v is the MN-major second
    // factor, which the units take only for 16-bit types.
    DType t = op->q.dtype;
    if (op->k.dtype != t || op->v.dtype != t || (t != DType::F16 && t != DType::BF16))
      report(what + ": its operands are " + dtype_name(t) + ", " + dtype_name(op->k.dtype) + " and " + dtype_name(op->v.dtype) +
             "; all f16 or all bf16");
    if (!op->q.k_major || !op->k.k_major) report(what + ": its queries and keys must have the head dimension as their fast axis (k-major)");
    if (op->v.k_major) report(what + ": its values must have the key rows as their depth (mn-major)");
    check_product_operand(what, op->q, op->batches);
    check_product_operand(what, op->k, op->batches);
    check_product_operand(what, op->v, op->batches);
    if (op->queries < 0 || op->keys < 0 || op->head_dim < 0 || op->batches < 0)
      report(what + ": a negative extent in " + std::to_string(op->batches) + "x" + std::to_string(op->queries) + "x" + std::to_string(op->keys) +
             "x" + std::to_string(op->head_dim));
    if (!std::isfinite(op->scale)) report(what + ": a scale of " + std::to_string(op->scale));
    bool tiles_ok = op->tile_rows > 0 && op->tile_keys > 0;
    if (!tiles_ok) report(what + ": tiles of " + std::to_string(op->tile_rows) + " rows by " + std::to_string(op->tile_keys) + " keys");
    if (op->consumers < 1) report(what + ": " + std::to_string(op->consumers) + " consumer warpgroups");
    else if (op->tile_rows % op->consumers) report(what + ": " + std::to_string(op->tile_rows) + " rows do not split over " + std::to_string(op->consumers) + " consumer warpgroups");
    if (op->stages < 2) report(what + ": " + std::to_string(op->stages) + " stages, fewer than 2");
    check_warpgroup_stage(what, op->stage, tiles_ok && op->stages > 0 ? op->stage_bytes() : -1);
    check_tile_numbers(what, op->first_tile, op->tile_stride);
    check_warpgroup_epilogue(what, op->batch_var, op->row, op->col, op->value, op->epilogue);
  }

  // Every thread of a GPU block reaches a warpgroup statement.
  void check_warpgroup_placement(const std::string& what) {
    if (gpu_block_axes_ == 0) report(what + " is not inside a GPU block loop");
    if (in_gpu_thread_ > 0) report(what + " inside a GPU thread loop: the block's warpgroups cannot all reach it");
  }

  // The stages: a shared array of the block, of at least `need` bytes
  // (unchecked where `need` is negative: the tiles are already reported).
  void check_warpgroup_stage(const std::string& what, const std::string& stage, int64_t need) {
    const Symbol* st = lookup(stage);
    if (!st || st->kind != SymbolKind::Allocate || !block_shared_.count(stage))
      return report(what + ": its stages '" + stage + "' are not a shared array of the GPU block");
    if (need < 0) return;
    int64_t bytes = static_cast<int64_t>(dtype_size(st->type.dtype));
    for (const Expr& e : st->type.shape) {
      const IntImm* n = e.as<IntImm>();
      bytes = n && bytes >= 0 ? bytes * n->value : -1;
    }
    if (bytes < 0) report(what + ": its stages '" + stage + "' are not of a constant size");
    else if (bytes < need)
      report(what + ": its stages '" + stage + "' have " + std::to_string(bytes) + " bytes, fewer than the " + std::to_string(need) + " it needs");
  }

  void check_tile_numbers(const std::string& what, const Expr& first_tile, const Expr& tile_stride) {
    for (const auto& [name, e] : {std::pair{"first tile", first_tile}, std::pair{"tile stride", tile_stride}}) {
      std::string w = what + " " + name;
      if (!e.defined()) {
        report(w + " is missing");
        continue;
      }
      if (e->type.dtype != DType::I64 || !e->type.is_scalar()) report(w + " " + quoted(e) + " is not an i64 scalar (it is " + print(e->type) + ")");
      include(e);
    }
  }

  // The epilogue: per element, with the element's names bound; run by
  // single threads (no block-wide steps), storing but not reading the output.
  void check_warpgroup_epilogue(const std::string& what, const std::string& batch_var, const std::string& row, const std::string& col,
                                const std::string& value, const Block& epilogue) {
    for (const std::string& n : {batch_var, row, col, value})
      if (n.empty()) report(what + " leaves an element name empty");
    if (const Param* out = output()) {
      struct Reads : IRVisitor {
        std::string name;
        bool found = false;
        void visit(const Access* a) override {
          found = found || a->buffer == name;
          IRVisitor::visit(a);
        }
      } reads;
      reads.name = out->name;
      reads.include(epilogue);
      if (reads.found) report(what + ": its epilogue reads the output '" + out->name + "'");
    }
    scopes_.emplace_back();
    declare(batch_var, {SymbolKind::Let, Type::scalar(DType::I64)});
    declare(row, {SymbolKind::Let, Type::scalar(DType::I64)});
    declare(col, {SymbolKind::Let, Type::scalar(DType::I64)});
    declare(value, {SymbolKind::Let, Type::scalar(DType::F32)});
    ++in_gpu_thread_;
    check_block(epilogue);
    --in_gpu_thread_;
    pop_scope();
  }

  // Arrays of a GPU block with access rules: a fragment is touched by
  // tile_mma statements only; a thread-private array is read and written by
  // a thread loop's iteration at its own row.
  void check_gpu_array_access(const std::string& name, const std::vector<AxisSel>& axes) {
    if (fragments_.count(name)) report("fragment array '" + name + "' is accessed other than by tile_mma statements");
    if (!thread_private_.count(name)) return;
    auto v = axes.empty() || axes[0].is_slice ? nullptr : axes[0].index.as<Var>();
    if (thread_vars_.empty() || !v || v->name != thread_vars_.back())
      report("thread-private array '" + name + "' is accessed other than by the innermost GPU thread loop's variable as its first index");
  }

  void visit(const Atomic* op) override {
    const Symbol* s = writable_buffer(op->buffer);
    if (s && op->index.size() != s->type.rank())
      report("atomic on '" + op->buffer + "' has " + std::to_string(op->index.size()) + " indices but it has rank " +
             std::to_string(s->type.rank()));
    for (const Expr& e : op->index) {
      check_int_scalar(e, "index");
      include(e);
    }
    if (!op->value.defined()) return report("atomic has no value");
    if (!op->value->type.is_scalar()) report("atomic value " + quoted(op->value) + " is not a scalar");
    include(op->value);
    if (s) check_dtype(op->value, s->type.dtype, "atomic value");
  }

  void visit(const MatMulBlock* op) override {
    if (op->rows <= 0 || op->cols <= 0)
      report("matmul_block has " + std::to_string(op->rows) + "x" + std::to_string(op->cols) + " elements");
    for (const std::string& name : {op->a, op->b}) {
      const Symbol* s = readable_buffer(name);
      if (s && s->type.dtype != DType::F32) report("matmul_block operand '" + name + "' is not f32");
    }
    const Symbol* c = writable_buffer(op->c);
    if (c && c->type.dtype != DType::F32) report("matmul_block result '" + op->c + "' is not f32");
    if (c && op->c_index.size() != c->type.rank())
      report("matmul_block result '" + op->c + "' has rank " + std::to_string(c->type.rank()) + " but " +
             std::to_string(op->c_index.size()) + " indices");
    for (const auto& [what, e] : {std::pair{"a_offset", op->a_offset}, std::pair{"a_row_stride", op->a_row_stride},
                                  std::pair{"a_k_stride", op->a_k_stride}, std::pair{"b_offset", op->b_offset}, std::pair{"ldb", op->ldb},
                                  std::pair{"kc", op->kc}, std::pair{"ldc", op->ldc}, std::pair{"m_valid", op->m_valid},
                                  std::pair{"n_valid", op->n_valid}}) {
      check_int_scalar(e, std::string("matmul_block ") + what);
      include(e);
    }
    for (const Expr& e : op->c_index) {
      check_int_scalar(e, "matmul_block index");
      include(e);
    }
    check_condition(op->accumulate, "matmul_block accumulate");
    include(op->accumulate);
    if (!op->b_rows.empty()) {
      const Symbol* t = readable_buffer(op->b_rows);
      if (t && t->type.dtype != DType::I64) report("matmul_block row table '" + op->b_rows + "' is not i64");
      if (!op->b_rows_at.defined()) {
        report("matmul_block row table '" + op->b_rows + "' has no start");
      } else {
        check_int_scalar(op->b_rows_at, "matmul_block row table start");
        include(op->b_rows_at);
      }
      if (op->b_rows_max < 0) report("matmul_block row table '" + op->b_rows + "' has a negative bound");
    }
  }

  // ---------------------------------------------------------------- expressions

  void visit(const Var* op) override {
    const Symbol* s = lookup(op->name);
    if (!s) return report("Var '" + op->name + "' is not defined");
    switch (s->kind) {
      case SymbolKind::Input:
      case SymbolKind::Output:
      case SymbolKind::Allocate:
        return report("Var '" + op->name + "' names the " + kind_text(s->kind) + " buffer '" + op->name +
                      "'; buffers are read with an access");
      case SymbolKind::LoopVar:
        if (!is_int(op->type.dtype) || !op->type.is_scalar())
          report("loop variable '" + op->name + "' is used with type " + print(op->type));
        break;
      default:
        if (op->type.dtype != s->type.dtype)
          report("Var '" + op->name + "' has dtype " + dtype_name(op->type.dtype) + " but the " + kind_text(s->kind) +
                 " has dtype " + dtype_name(s->type.dtype));
    }
    check_extents(op->type);
  }

  void visit(const Cast* op) override {
    if (!has(op->value, "cast")) return;
    if (op->type.rank() != op->value->type.rank()) report("cast " + quoted(op) + " changes the rank");
    include(op->value);
  }

  void visit(const Unary* op) override {
    if (!has(op->a, "unary operation")) return;
    DType want = op->op == UnaryOp::Not ? DType::Bool : op->a->type.dtype;
    if (op->type.dtype != want) report_dtype(op, want);
    include(op->a);
  }

  void visit(const Binary* op) override {
    if (!has(op->a, "binary operation") || !has(op->b, "binary operation")) return;
    DType a = op->a->type.dtype, b = op->b->type.dtype;
    if (a != b) {
      report("Binary operands have different dtypes " + std::string(dtype_name(a)) + " and " + dtype_name(b) + ": " +
             quoted(op));
    } else {
      DType want = is_comparison(op->op) || is_logical(op->op) ? DType::Bool : a;
      if (op->type.dtype != want) report_dtype(op, want);
    }
    include(op->a);
    include(op->b);
  }

  void visit(const Select* op) override {
    if (!has(op->cond, "select") || !has(op->t, "select") || !has(op->f, "select")) return;
    // A tile condition selects element-wise, so only the dtype is checked.
    if (op->cond->type.dtype != DType::Bool) report("select condition " + quoted(op->cond) + " is not bool");
    if (op->t->type.dtype != op->f->type.dtype)
      report("select branches have different dtypes " + std::string(dtype_name(op->t->type.dtype)) + " and " +
             dtype_name(op->f->type.dtype) + ": " + quoted(op));
    else if (op->type.dtype != op->t->type.dtype)
      report_dtype(op, op->t->type.dtype);
    IRVisitor::visit(op);
  }

  void visit(const Math* op) override {
    if (static_cast<int>(op->args.size()) != math_fn_arity(op->fn))
      return report(std::string(math_fn_name(op->fn)) + " takes " + std::to_string(math_fn_arity(op->fn)) +
                    " arguments: " + quoted(op));
    for (const Expr& a : op->args)
      if (!has(a, "math call")) return;
    DType t = op->args[0]->type.dtype;
    for (const Expr& a : op->args)
      if (a->type.dtype != t) return report("math arguments have different dtypes: " + quoted(op));
    // The scalar semantics compute these in f64 on integers; the node would
    // claim the integer type.
    if (!is_float(t) && !math_fn_keeps_int(op->fn))
      report(std::string(math_fn_name(op->fn)) + " needs float arguments: " + quoted(op));
    else if (op->type.dtype != t)
      report_dtype(op, t);
    IRVisitor::visit(op);
  }

  void visit(const Access* op) override {
    check_gpu_array_access(op->buffer, op->axes);
    if (const Symbol* s = readable_buffer(op->buffer)) check_rank(op->buffer, *s, op->axes.size());
    check_axes(op->axes);
    check_extents(op->type);
  }

  void visit(const Dot* op) override {
    if (!has(op->a, "dot") || !has(op->b, "dot")) return;
    if (op->a->type.rank() != 1 || op->b->type.rank() != 1) report("dot operands are not 1-D tiles: " + quoted(op));
    check_same_operand_dtypes(op, op->a, op->b);
    if (!op->type.is_scalar()) report("dot " + quoted(op) + " is not typed as a scalar");
    IRVisitor::visit(op);
  }

  void visit(const Reduce* op) override {
    if (!has(op->value, "reduce")) return;
    int rank = static_cast<int>(op->value->type.rank());
    if (rank == 0) report("reduce of a scalar: " + quoted(op));
    if (op->axis && (*op->axis < 0 || *op->axis >= rank))
      report("reduce axis " + std::to_string(*op->axis) + " is out of range for rank " + std::to_string(rank) + ": " +
             quoted(op));
    DType want = is_arg_reduce(op->op) ? DType::I64 : op->value->type.dtype;
    if (op->type.dtype != want) report_dtype(op, want);
    include(op->value);
  }

  void visit(const MatMul* op) override {
    if (!has(op->a, "matmul") || !has(op->b, "matmul")) return;
    for (const Expr& x : {op->a, op->b}) {
      if (x->type.rank() < 1 || x->type.rank() > 2) report("matmul operand " + quoted(x) + " is not a 1-D or 2-D tile");
    }
    check_same_operand_dtypes(op, op->a, op->b);
    IRVisitor::visit(op);
  }

  void visit(const Transpose* op) override {
    if (!has(op->value, "transpose")) return;
    if (op->type.dtype != op->value->type.dtype) report_dtype(op, op->value->type.dtype);
    include(op->value);
  }

  void visit(const Fill* op) override {
    if (!has(op->value, "fill")) return;
    if (!op->value->type.is_scalar()) report("fill value " + quoted(op->value) + " is not a scalar");
    if (op->type.dtype != op->value->type.dtype) report_dtype(op, op->value->type.dtype);
    include(op->value);
    check_extents(op->type);
  }

 private:
  void report(const std::string& problem) {
    // The statement is printed only now: most kernels have no problem.
    std::string where = where_stmt_.defined() ? "`" + header(where_stmt_) + "`" : where_text_;
    std::string msg = where.empty() ? problem : problem + " (in " + where + ")";
    if (reported_.insert(msg).second) problems_.push_back(msg);
  }

  template <class Node>
  void report_dtype(const Node* op, DType want) {
    report("node " + quoted(op) + " has dtype " + dtype_name(op->type.dtype) + ", expected " + dtype_name(want));
  }

  // Visits get raw nodes but the printer takes handles; a copy of the node
  // prints the same (only needed when reporting).
  template <class Node>
  static std::string quoted(const Node* op) {
    return cir::quoted(Expr(std::make_shared<Node>(*op)));
  }
  static std::string quoted(const Expr& e) { return cir::quoted(e); }

  bool has(const Expr& e, const char* what) {
    if (!e.defined()) report(std::string(what) + " has an undefined operand");
    return e.defined();
  }

  const Param* output() const {
    for (const Param& p : k_.params)
      if (p.role == ParamRole::Output) return &p;
    return nullptr;
  }

  void check_block(const Block& b) {
    Stmt saved = where_stmt_;
    scopes_.emplace_back();
    for (const Stmt& s : b) {
      if (!s.defined()) {
        report("undefined statement");
        continue;
      }
      where_stmt_ = s;
      include(s);
    }
    pop_scope();
    where_stmt_ = saved;
  }

  void declare(const std::string& name, Symbol sym) {
    if (!declared_.insert(name).second) return report("'" + name + "' is declared more than once");
    visible_.emplace(name, std::move(sym));
    scopes_.back().push_back(name);
  }

  void pop_scope() {
    for (const std::string& name : scopes_.back()) visible_.erase(name);
    scopes_.pop_back();
  }

  const Symbol* lookup(const std::string& name) const {
    auto it = visible_.find(name);
    return it == visible_.end() ? nullptr : &it->second;
  }

  bool is_tile_local(const Symbol& s) const {
    return (s.kind == SymbolKind::Decl || s.kind == SymbolKind::Let) && !s.type.is_scalar();
  }

  const Symbol* readable_buffer(const std::string& name) {
    const Symbol* s = lookup(name);
    if (!s) {
      report("access to undefined buffer '" + name + "'");
      return nullptr;
    }
    bool ok = s->kind == SymbolKind::Input || s->kind == SymbolKind::Output || s->kind == SymbolKind::Allocate ||
              is_tile_local(*s);
    if (!ok) {
      report("access to '" + name + "', a scalar " + kind_text(s->kind) + ", not a buffer");
      return nullptr;
    }
    return s;
  }

  const Symbol* writable_buffer(const std::string& name) {
    const Symbol* s = lookup(name);
    if (!s) {
      report("store to undefined buffer '" + name + "'");
      return nullptr;
    }
    bool ok = s->kind == SymbolKind::Output || s->kind == SymbolKind::Allocate ||
              (s->kind == SymbolKind::Decl && !s->type.is_scalar());
    if (!ok) {
      report("store to " + std::string(kind_text(s->kind)) + " '" + name + "'");
      return nullptr;
    }
    return s;
  }

  void check_rank(const std::string& buffer, const Symbol& s, size_t axes) {
    if (axes > s.type.rank())
      report("'" + buffer + "' is indexed with " + std::to_string(axes) + " axes but has rank " +
             std::to_string(s.type.rank()));
  }

  void check_axes(const std::vector<AxisSel>& axes) {
    for (const AxisSel& a : axes) {
      if (!a.is_slice) {
        check_int_scalar(a.index, "index");
      } else {
        if (a.lo.defined()) check_int_scalar(a.lo, "slice start");
        if (a.hi.defined()) check_int_scalar(a.hi, "slice end");
      }
    }
    visit_axes(axes);
  }

  void check_extents(const Type& t) {
    for (const Expr& e : t.shape) check_int_scalar(e, "extent");
    visit_type(t);
  }

  void check_int_scalar(const Expr& e, const std::string& what) {
    if (!e.defined()) return report(what + " is missing");
    if (!is_int_scalar(e)) report(what + " " + quoted(e) + " is not an integer scalar (it is " + print(e->type) + ")");
  }

  void check_condition(const Expr& e, const std::string& what) {
    if (!e.defined()) return report(what + " is missing");
    if (e->type.dtype != DType::Bool || !e->type.is_scalar())
      report(what + " " + quoted(e) + " is not a bool scalar (it is " + print(e->type) + ")");
  }

  void check_dtype(const Expr& e, DType want, const std::string& what) {
    if (e->type.dtype != want)
      report(what + " " + quoted(e) + " has dtype " + dtype_name(e->type.dtype) + ", expected " + dtype_name(want));
  }

  template <class Node>
  void check_same_operand_dtypes(const Node* op, const Expr& a, const Expr& b) {
    if (a->type.dtype != b->type.dtype)
      report("operands have different dtypes " + std::string(dtype_name(a->type.dtype)) + " and " +
             dtype_name(b->type.dtype) + ": " + quoted(op));
    else if (op->type.dtype != a->type.dtype)
      report_dtype(op, a->type.dtype);
  }

  const Kernel& k_;
  std::map<std::string, Symbol> visible_;
  std::set<std::string> declared_;  // every name ever declared: no shadowing, no reuse
  std::vector<std::vector<std::string>> scopes_;
  // Where problems are found, for messages: the statement being checked, or
  // a description outside the body.
  Stmt where_stmt_;
  std::string where_text_;
  std::vector<std::string> problems_;
  unsigned gpu_block_axes_ = 0, gpu_thread_axes_ = 0;  // GPU loop axes around the current statement
  std::vector<std::string> placed_, unplaced_;          // a GPU block's shared arrays, with and without byte offsets
  int in_gpu_thread_ = 0;
  std::vector<std::string> thread_vars_;    // the GPU thread loops' variables around the statement, innermost last
  std::set<std::string> block_shared_;      // a GPU block's shared arrays
  std::set<std::string> fragments_;         // a GPU block's matrix accumulators (tile_mma)
  std::map<std::string, std::pair<int, int>> fragment_warps_;  // ... and the warps their steps spread them over
  std::set<std::string> thread_private_;    // local arrays of a GPU block, a row per thread
  std::set<std::string> reported_;
};

}  // namespace

std::vector<std::string> verify(const Kernel& k) { return Verifier(k).run(); }

void verify_or_throw(const Kernel& k, const std::string& after_pass) {
  std::vector<std::string> problems = verify(k);
  if (problems.empty()) return;
  std::string msg = "CIR verification failed after " + after_pass + " for kernel " + k.name + ":";
  for (const std::string& p : problems) msg += "\n  " + p;
  throw std::logic_error(msg);
}

}  // namespace zyntax::cir
