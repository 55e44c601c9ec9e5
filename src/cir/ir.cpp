#include "cir/ir.hpp"

#include <algorithm>
#include <stdexcept>

namespace zyntax::cir {

Expr IntImm::make(int64_t v, DType t, Span s) { return Expr(std::make_shared<IntImm>(v, t, s)); }
Expr FloatImm::make(double v, DType t, Span s) {
  return Expr(std::make_shared<FloatImm>(round_to_float_type(v, t), t, s));
}
Expr BoolImm::make(bool v, Span s) { return Expr(std::make_shared<BoolImm>(v, s)); }
Expr Var::make(std::string name, Type t, Span s) { return Expr(std::make_shared<Var>(std::move(name), std::move(t), s)); }

Expr Cast::make(DType to, Expr v, Span s) {
  Type t = v->type;
  t.dtype = to;
  return Expr(std::make_shared<Cast>(std::move(v), std::move(t), s));
}

Expr Unary::make(UnaryOp op, Expr a, Span s) {
  Type t = a->type;
  if (op == UnaryOp::Not) t.dtype = DType::Bool;
  return Expr(std::make_shared<Unary>(op, std::move(a), std::move(t), s));
}

// NumPy broadcasting on symbolic extents: a 1 gives way to the other side;
// otherwise the extents must agree (checked when the values are known).
static std::vector<Expr> broadcast_shape(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<Expr> out(n);
  for (size_t i = 0; i < n; ++i) {
    Expr x = i + a.size() >= n ? a[i + a.size() - n] : Expr();
    Expr y = i + b.size() >= n ? b[i + b.size() - n] : Expr();
    auto is_one = [](const Expr& e) { return e.defined() && e.as<IntImm>() && e.as<IntImm>()->value == 1; };
    out[i] = (!x.defined() || (is_one(x) && y.defined())) ? y : x;
  }
  return out;
}

Expr Binary::make(BinaryOp op, Expr a, Expr b, Span s) {
  Type t;
  t.dtype = (is_comparison(op) || is_logical(op)) ? DType::Bool : a->type.dtype;
  t.shape = broadcast_shape(a->type.shape, b->type.shape);
  return Expr(std::make_shared<Binary>(op, std::move(a), std::move(b), std::move(t), s));
}

Expr Select::make(Expr c, Expr t, Expr f, Span s) {
  Type ty;
  ty.dtype = t->type.dtype;
  ty.shape = broadcast_shape(broadcast_shape(c->type.shape, t->type.shape), f->type.shape);
  return Expr(std::make_shared<Select>(std::move(c), std::move(t), std::move(f), std::move(ty), s));
}

Expr Math::make(MathFn fn, std::vector<Expr> args, Span s) {
  Type t;
  t.dtype = args.at(0)->type.dtype;
  for (const Expr& a : args) t.shape = broadcast_shape(t.shape, a->type.shape);
  return Expr(std::make_shared<Math>(fn, std::move(args), std::move(t), s));
}

Expr make_access(std::string buffer, const Type& buffer_type, std::vector<AxisSel> axes, Span s) {
  Type t;
  t.dtype = buffer_type.dtype;
  for (size_t i = 0; i < buffer_type.rank(); ++i) {
    if (i >= axes.size()) {
      t.shape.push_back(buffer_type.shape[i]);
    } else if (axes[i].is_slice) {
      // A slice is clamped to the axis: min(hi, extent) - lo.
      Expr lo = axes[i].lo.defined() ? axes[i].lo : i64(0);
      Expr hi = axes[i].hi.defined() ? min(axes[i].hi, buffer_type.shape[i]) : buffer_type.shape[i];
      t.shape.push_back(hi - lo);
    }
  }
  return Expr(std::make_shared<Access>(std::move(buffer), std::move(axes), std::move(t), s));
}

Expr make_dot(Expr a, Expr b, Span s) {
  Type t = Type::scalar(a->type.dtype);
  return Expr(std::make_shared<Dot>(std::move(a), std::move(b), std::move(t), s));
}

Expr make_reduce(ReduceOp op, Expr value, std::optional<int> axis, bool keepdims, Span s) {
  Type t;
  t.dtype = is_arg_reduce(op) ? DType::I64 : value->type.dtype;
  const auto& shape = value->type.shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool reduced = !axis || static_cast<int>(i) == *axis;
    if (!reduced)
      t.shape.push_back(shape[i]);
    else if (keepdims)
      t.shape.push_back(i64(1));
  }
  return Expr(std::make_shared<Reduce>(op, std::move(value), axis, keepdims, std::move(t), s));
}

Expr make_matmul(Expr a, Expr b, Span s) {
  Type t;
  t.dtype = a->type.dtype;
  const auto& x = a->type.shape;
  const auto& y = b->type.shape;
  if (x.size() == 2 && y.size() == 2) t.shape = {x[0], y[1]};
  else if (x.size() == 2 && y.size() == 1) t.shape = {x[0]};
  else if (x.size() == 1 && y.size() == 2) t.shape = {y[1]};
  return Expr(std::make_shared<MatMul>(std::move(a), std::move(b), std::move(t), s));
}

Expr make_transpose(Expr v, Span s) {
  Type t = v->type;
  std::reverse(t.shape.begin(), t.shape.end());
  return Expr(std::make_shared<Transpose>(std::move(v), std::move(t), s));
}

Expr make_fill(Expr value, std::vector<Expr> shape, Span s) {
  Type t = Type::tensor(value->type.dtype, std::move(shape));
  return Expr(std::make_shared<Fill>(std::move(value), std::move(t), s));
}

// ---------------------------------------------------------------- statements

Stmt make_for(std::string var, Expr lo, Expr hi, Expr step, Block body, LoopKind kind, int factor, Span s) {
  return Stmt(std::make_shared<For>(std::move(var), std::move(lo), std::move(hi), std::move(step), kind, factor, std::move(body), s));
}
Stmt make_if(Expr cond, Block then_body, Block else_body, Span s) {
  return Stmt(std::make_shared<If>(std::move(cond), std::move(then_body), std::move(else_body), s));
}
Stmt make_let(std::string name, Expr value, Span s) { return Stmt(std::make_shared<Let>(std::move(name), std::move(value), s)); }
Stmt make_decl(std::string name, Type type, Expr init, Span s) {
  return Stmt(std::make_shared<Decl>(std::move(name), std::move(type), std::move(init), s));
}
Stmt make_assign(std::string name, Expr value, Span s) { return Stmt(std::make_shared<Assign>(std::move(name), std::move(value), s)); }
Stmt make_store(std::string buffer, std::vector<AxisSel> axes, Expr value, Span s) {
  return Stmt(std::make_shared<Store>(std::move(buffer), std::move(axes), std::move(value), s));
}
Stmt make_yield(Expr value, Expr index, std::vector<Expr> out_index, Span s) {
  return Stmt(std::make_shared<Yield>(std::move(value), std::move(index), std::move(out_index), s));
}
Stmt make_allocate(std::string name, Type type, MemorySpace space, Span s, int64_t capacity, int64_t offset) {
  return Stmt(std::make_shared<Allocate>(std::move(name), std::move(type), space, capacity, offset, s));
}

int64_t allocation_bytes(const Allocate& a) {
  int64_t n = static_cast<int64_t>(dtype_size(a.type.dtype));
  if (a.capacity > 0) return __builtin_mul_overflow(n, a.capacity, &n) ? -1 : n;
  for (const Expr& d : a.type.shape) {
    auto c = d.as<IntImm>();
    if (!c || c->value < 0 || __builtin_mul_overflow(n, c->value, &n)) return -1;
  }
  return n;
}

int64_t shared_footprint(int64_t bytes) { return (bytes + kSharedArrayAlignment - 1) / kSharedArrayAlignment * kSharedArrayAlignment; }

Stmt make_barrier(FenceScope scope, Span s) { return Stmt(std::make_shared<Barrier>(scope, s)); }
Stmt make_atomic(AtomicOp op, std::string buffer, std::vector<Expr> index, Expr value, FenceScope scope, Span s) {
  return Stmt(std::make_shared<Atomic>(op, std::move(buffer), std::move(index), std::move(value), scope, s));
}
Stmt make_block_reduce(std::string name, ReduceOp op, std::string array, Expr count, Span s) {
  return Stmt(std::make_shared<BlockReduce>(std::move(name), op, std::move(array), std::move(count), s));
}
Stmt make_check(Expr cond, std::string message, Span s) {
  return Stmt(std::make_shared<Check>(std::move(cond), std::move(message), s));
}
Stmt make_mma_zero(std::string acc, int warp_rows, int warp_cols, Span s) {
  return Stmt(std::make_shared<TileMma>(TileMma::Step::Zero, std::move(acc), warp_rows, warp_cols, s));
}
Stmt make_mma_accumulate(std::string acc, int warp_rows, int warp_cols, std::string a, int lda, std::string b, int ldb, int depth, Span s,
                         bool b_transposed, bool a_exact, bool b_exact) {
  auto m = std::make_shared<TileMma>(TileMma::Step::Accumulate, std::move(acc), warp_rows, warp_cols, s);
  m->a = std::move(a);
  m->lda = lda;
  m->b = std::move(b);
  m->ldb = ldb;
  m->depth = depth;
  m->b_transposed = b_transposed;
  m->a_exact = a_exact;
  m->b_exact = b_exact;
  return Stmt(m);
}
Stmt make_mma_store(std::string d, int ldd, std::string acc, int warp_rows, int warp_cols, int row0, int count, Span s) {
  auto m = std::make_shared<TileMma>(TileMma::Step::Store, std::move(acc), warp_rows, warp_cols, s);
  m->d = std::move(d);
  m->ldd = ldd;
  m->row0 = row0;
  m->count = count;
  return Stmt(m);
}
Stmt make_async_copy(std::string dst, Expr dst_index, std::string src, std::vector<Expr> src_index, int count, Expr valid, Span s) {
  auto c = std::make_shared<AsyncCopy>(AsyncCopy::Step::Start, s);
  c->dst = std::move(dst);
  c->dst_index = std::move(dst_index);
  c->src = std::move(src);
  c->src_index = std::move(src_index);
  c->count = count;
  c->valid = std::move(valid);
  return Stmt(c);
}
Stmt make_warpgroup_product(const WarpgroupProduct& p) { return Stmt(std::make_shared<WarpgroupProduct>(p)); }
Stmt make_warpgroup_attention(const WarpgroupAttention& a) { return Stmt(std::make_shared<WarpgroupAttention>(a)); }

Stmt make_async_commit(Span s) { return Stmt(std::make_shared<AsyncCopy>(AsyncCopy::Step::Commit, s)); }
Stmt make_async_wait(int pending, Span s) {
  auto c = std::make_shared<AsyncCopy>(AsyncCopy::Step::Wait, s);
  c->pending = pending;
  return Stmt(c);
}
Stmt make_matmul_block(int rows, int cols, std::string a, Expr a_offset, Expr a_row_stride, Expr a_k_stride, std::string b, Expr b_offset,
                       Expr ldb, Expr kc, std::string c, std::vector<Expr> c_index, Expr ldc, Expr m_valid, Expr n_valid, Expr accumulate,
                       Span s, RowTable b_rows) {
  auto m = std::make_shared<MatMulBlock>(rows, cols, std::move(a), std::move(a_offset), std::move(a_row_stride), std::move(a_k_stride),
                                         std::move(b), std::move(b_offset), std::move(ldb), std::move(kc), std::move(c), std::move(c_index),
                                         std::move(ldc), std::move(m_valid), std::move(n_valid), std::move(accumulate), s);
  m->b_rows = std::move(b_rows.table);
  m->b_rows_at = std::move(b_rows.at);
  m->b_rows_max = b_rows.max;
  return Stmt(m);
}

const char* loop_kind_name(LoopKind k) {
  switch (k) {
    case LoopKind::Serial: return "serial";
    case LoopKind::Parallel: return "parallel";
    case LoopKind::Vectorized: return "vectorized";
    case LoopKind::Unrolled: return "unrolled";
    case LoopKind::GpuBlock: return "gpu_block";
    case LoopKind::GpuThread: return "gpu_thread";
  }
  return "?";
}

// ---------------------------------------------------------------- kernels

namespace {
struct KindName {
  const char* name;
  KernelKind kind;
};
const KindName kKernelKinds[] = {
    {"elementwise", KernelKind::Elementwise},   {"reduce", KernelKind::Reduce},
    {"matmul", KernelKind::MatMul},             {"batched_matmul", KernelKind::BatchedMatMul},
    {"conv2d", KernelKind::Conv2d},             {"conv2d_depthwise", KernelKind::Conv2dDepthwise},
    {"attention", KernelKind::Attention},       {"flash_attention", KernelKind::FlashAttention},
    {"fused", KernelKind::Fused},
};
}  // namespace

const char* kernel_kind_name(KernelKind k) {
  for (const KindName& n : kKernelKinds)
    if (n.kind == k) return n.name;
  return "?";
}

std::optional<KernelKind> parse_kernel_kind(std::string_view name) {
  for (const KindName& n : kKernelKinds)
    if (name == n.name) return n.kind;
  return std::nullopt;
}

const Param* Kernel::find_param(const std::string& n) const {
  for (const Param& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

const Param& Kernel::output() const {
  for (const Param& p : params)
    if (p.role == ParamRole::Output) return p;
  throw std::logic_error("kernel " + name + " has no output");
}

// ---------------------------------------------------------------- i64 arithmetic

Expr operator+(Expr a, Expr b) { return Binary::make(BinaryOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Binary::make(BinaryOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Binary::make(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return Binary::make(BinaryOp::Div, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return Binary::make(BinaryOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return Binary::make(BinaryOp::Max, std::move(a), std::move(b)); }

std::vector<Expr> chain_operands(const Expr& e, BinaryOp op) {
  auto b = e.as<Binary>();
  if (!b || b->op != op) return {e};
  std::vector<Expr> out = chain_operands(b->a, op), rest = chain_operands(b->b, op);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace zyntax::cir
