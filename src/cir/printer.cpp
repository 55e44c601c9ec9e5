#include "cir/printer.hpp"

#include <string_view>

namespace zyntax::cir {

namespace {

// Binding strength, loosest first. Unary operators bind tighter than any
// binary one; calls, literals and names never need parentheses.
enum Prec : int { kOr = 1, kAnd, kCompare, kAdd, kMul, kPow, kUnary, kAtom };

int binary_prec(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or: return kOr;
    case BinaryOp::And: return kAnd;
    case BinaryOp::Add:
    case BinaryOp::Sub: return kAdd;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod: return kMul;
    case BinaryOp::Pow: return kPow;
    default: return kCompare;
  }
}

// Comparisons would read as chains and `**` associates to the right in the
// surface language, so an operand of equal strength is parenthesised on
// either side; the other operators associate to the left.
bool left_assoc(BinaryOp op) { return op != BinaryOp::Pow && !is_comparison(op); }

struct Text {
  std::string s;
  int prec;
};

Text format(const Expr& e);

std::string operand(const Expr& e, int min_prec) {
  Text t = format(e);
  return t.prec < min_prec ? "(" + t.s + ")" : t.s;
}

std::string join(const std::vector<Expr>& es) {
  std::string s;
  for (size_t i = 0; i < es.size(); ++i) {
    if (i) s += ", ";
    s += print(es[i]);
  }
  return s;
}

std::string call(std::string_view name, const std::vector<Expr>& args) {
  return std::string(name) + "(" + join(args) + ")";
}

std::string axes_text(const std::string& buffer, const std::vector<AxisSel>& axes) {
  std::string s = buffer + "[";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i) s += ", ";
    const AxisSel& a = axes[i];
    if (!a.is_slice) {
      s += print(a.index);
      continue;
    }
    if (a.lo.defined()) s += print(a.lo);
    s += ':';
    if (a.hi.defined()) s += print(a.hi);
  }
  return s + "]";
}

const char* gpu_index_name(GpuIndexKind k) {
  switch (k) {
    case GpuIndexKind::ThreadIdx: return "thread_idx";
    case GpuIndexKind::BlockIdx: return "block_idx";
    case GpuIndexKind::BlockDim: return "block_dim";
    case GpuIndexKind::GridDim: return "grid_dim";
  }
  return "?";
}

const char* axis_letter(int axis) {
  static const char* kLetters[] = {"x", "y", "z"};
  return axis >= 0 && axis < 3 ? kLetters[axis] : "?";
}

// A literal that starts with '-' binds like a unary minus.
Text literal(std::string s) {
  int prec = !s.empty() && s[0] == '-' ? kUnary : kAtom;
  return {std::move(s), prec};
}

Text format(const Expr& e) {
  if (!e.defined()) return {"<undefined>", kAtom};
  DType dt = e->type.dtype;
  switch (e->kind) {
    case ExprKind::IntImm: {
      int64_t v = e.as<IntImm>()->value;
      if (dt == DType::I64) return literal(std::to_string(v));
      return {std::string(dtype_name(dt)) + "(" + Scalar::from_int(v, dt).str() + ")", kAtom};
    }
    case ExprKind::FloatImm: {
      std::string v = Scalar::of_float(e.as<FloatImm>()->value, dt).str();
      if (dt == DType::F32) return literal(v);
      return {std::string(dtype_name(dt)) + "(" + v + ")", kAtom};
    }
    case ExprKind::BoolImm: return {e.as<BoolImm>()->value ? "true" : "false", kAtom};
    case ExprKind::Var: return {e.as<Var>()->name, kAtom};
    case ExprKind::Cast: return {call(dtype_name(dt), {e.as<Cast>()->value}), kAtom};
    case ExprKind::Unary: {
      auto op = e.as<Unary>();
      return {unary_op_symbol(op->op) + operand(op->a, kUnary + 1), kUnary};
    }
    case ExprKind::Binary: {
      auto op = e.as<Binary>();
      if (op->op == BinaryOp::Min || op->op == BinaryOp::Max)
        return {call(binary_op_symbol(op->op), {op->a, op->b}), kAtom};
      int p = binary_prec(op->op);
      std::string s = operand(op->a, left_assoc(op->op) ? p : p + 1);
      s += ' ';
      s += binary_op_symbol(op->op);
      s += ' ';
      s += operand(op->b, p + 1);
      return {s, p};
    }
    case ExprKind::Select: {
      auto op = e.as<Select>();
      return {call("select", {op->cond, op->t, op->f}), kAtom};
    }
    case ExprKind::Math: {
      auto op = e.as<Math>();
      return {call(math_fn_name(op->fn), op->args), kAtom};
    }
    case ExprKind::Access: {
      auto op = e.as<Access>();
      return {axes_text(op->buffer, op->axes), kAtom};
    }
    case ExprKind::Dot: {
      auto op = e.as<Dot>();
      return {call("dot", {op->a, op->b}), kAtom};
    }
    case ExprKind::Reduce: {
      auto op = e.as<Reduce>();
      std::string s = std::string("reduce(") + reduce_op_name(op->op) + ", " + print(op->value);
      if (op->axis) s += ", axis=" + std::to_string(*op->axis);
      if (op->keepdims) s += ", keepdims";
      return {s + ")", kAtom};
    }
    case ExprKind::MatMul: {
      auto op = e.as<MatMul>();
      return {operand(op->a, kMul) + " @ " + operand(op->b, kMul + 1), kMul};
    }
    case ExprKind::Transpose: return {call("transpose", {e.as<Transpose>()->value}), kAtom};
    case ExprKind::Fill: {
      auto op = e.as<Fill>();
      return {"fill(" + print(op->value) + ", [" + join(op->type.shape) + "])", kAtom};
    }
    case ExprKind::GpuIndex: {
      auto op = e.as<GpuIndex>();
      return {std::string(gpu_index_name(op->index_kind)) + "." + axis_letter(op->axis), kAtom};
    }
  }
  return {"?", kAtom};
}

const char* scope_name(FenceScope s) {
  switch (s) {
    case FenceScope::Block: return "block";
    case FenceScope::Device: return "device";
    case FenceScope::System: return "system";
  }
  return "?";
}

const char* atomic_name(AtomicOp op) {
  switch (op) {
    case AtomicOp::Add: return "atomic_add";
    case AtomicOp::Min: return "atomic_min";
    case AtomicOp::Max: return "atomic_max";
    case AtomicOp::And: return "atomic_and";
    case AtomicOp::Or: return "atomic_or";
    case AtomicOp::Exchange: return "atomic_exchange";
  }
  return "?";
}

std::string loop_prefix(const For& op) {
  switch (op.loop_kind) {
    case LoopKind::Serial: return "";
    case LoopKind::Parallel: return "parallel ";
    case LoopKind::Vectorized:
    case LoopKind::Unrolled: {
      std::string s = loop_kind_name(op.loop_kind);
      if (op.factor > 0) s += "(" + std::to_string(op.factor) + ")";
      return s + " ";
    }
    case LoopKind::GpuBlock:
    case LoopKind::GpuThread: return std::string(loop_kind_name(op.loop_kind)) + "." + axis_letter(op.factor) + " ";
  }
  return "";
}

bool is_one(const Expr& e) {
  const IntImm* imm = e.as<IntImm>();
  return imm && imm->value == 1;
}

// mma_zero acc, mma acc += a[ld 40] . b[ld 136] over 32, mma_store d[ld 132] = acc[0:32];
// each with the warp grid.
std::string tile_mma_text(const TileMma& m) {
  std::string warps = " warps " + std::to_string(m.warp_rows) + "x" + std::to_string(m.warp_cols);
  switch (m.step) {
    case TileMma::Step::Zero: return "mma_zero " + m.acc + warps;
    case TileMma::Step::Accumulate:
      return "mma " + m.acc + " += " + m.a + "[ld " + std::to_string(m.lda) + (m.a_exact ? ", exact" : "") + "] . " + m.b +
             (m.b_transposed ? "^T" : "") + "[ld " + std::to_string(m.ldb) + (m.b_exact ? ", exact" : "") + "] over " +
             std::to_string(m.depth) + warps;
    case TileMma::Step::Store:
      return "mma_store " + m.d + "[ld " + std::to_string(m.ldd) + "] = " + m.acc + "[" + std::to_string(m.row0) + ":" +
             std::to_string(m.row0 + m.count) + "]" + warps;
  }
  return "";
}

// async_copy xs[i] <- x[r, k] count 8 valid v, async_commit, async_wait 1.
std::string async_copy_text(const AsyncCopy& c) {
  switch (c.step) {
    case AsyncCopy::Step::Start: {
      std::vector<AxisSel> from;
      for (const Expr& e : c.src_index) from.push_back(AxisSel::at(e));
      return "async_copy " + axes_text(c.dst, {AxisSel::at(c.dst_index)}) + " <- " + axes_text(c.src, from) + " count " + std::to_string(c.count) +
             " valid " + print(c.valid);
    }
    case AsyncCopy::Step::Commit: return "async_commit";
    case AsyncCopy::Step::Wait: return "async_wait " + std::to_string(c.pending);
  }
  return "";
}

// A=x[k-major bf16 rank 2 dims (64, 128, 1) strides (64, 0)]: every field of
// the view (the printed text is what kernels are hashed by).
std::string product_operand_text(const ProductOperand& o) {
  return o.buffer + "[" + (o.k_major ? "k-major " : "mn-major ") + dtype_name(o.dtype) + " rank " + std::to_string(o.rank) + " dims (" +
         std::to_string(o.dims[0]) + ", " + std::to_string(o.dims[1]) + ", " + std::to_string(o.dims[2]) + ") strides (" +
         std::to_string(o.strides[0]) + ", " + std::to_string(o.strides[1]) + ")]";
}

// warpgroup_product 3x100x200 over 70 tiles blk.. step 4 tile 128x256x64
// stages 4 consumers 2 group 8 [cluster 2 rank r] stage s a=... b=... -> (b, row, col, value) {
std::string warpgroup_product_text(const WarpgroupProduct& p) {
  return "warpgroup_product " + std::to_string(p.batches) + "x" + std::to_string(p.rows) + "x" + std::to_string(p.cols) + " over " +
         std::to_string(p.depth) + " tiles " + print(p.first_tile) + ".. step " + print(p.tile_stride) + " tile " +
         std::to_string(p.tile_rows) + "x" + std::to_string(p.tile_cols) + "x" + std::to_string(p.tile_depth) + " stages " +
         std::to_string(p.stages) + " consumers " + std::to_string(p.consumers) + " group " + std::to_string(p.group) +
         (p.cluster > 1 ? " cluster " + std::to_string(p.cluster) + " rank " + print(p.cluster_rank) : "") + " stage " + p.stage +
         " a=" + product_operand_text(p.a) + " b=" + product_operand_text(p.b) + " -> (" + p.batch_var + ", " + p.row + ", " + p.col + ", " +
         p.value + ") {";
}

// warpgroup_attention 2x130x130x64 scale 0.125 causal tiles blk.. step 3
// tile 128x128 stages 2 consumers 2 stage s q=... k=... v=... -> (b, row, col, value) {
// (batches x queries x keys x head_dim; the scale exactly, as a double).
std::string warpgroup_attention_text(const WarpgroupAttention& a) {
  return "warpgroup_attention " + std::to_string(a.batches) + "x" + std::to_string(a.queries) + "x" + std::to_string(a.keys) + "x" +
         std::to_string(a.head_dim) + " scale " + Scalar::of_float(a.scale, DType::F64).str() + (a.causal ? " causal" : "") + " tiles " +
         print(a.first_tile) + ".. step " + print(a.tile_stride) + " tile " + std::to_string(a.tile_rows) + "x" + std::to_string(a.tile_keys) +
         " stages " + std::to_string(a.stages) + " consumers " + std::to_string(a.consumers) + " stage " + a.stage + " q=" +
         product_operand_text(a.q) + " k=" + product_operand_text(a.k) + " v=" + product_operand_text(a.v) + " -> (" + a.batch_var + ", " +
         a.row + ", " + a.col + ", " + a.value + ") {";
}

class StmtPrinter {
 public:
  std::string out;

  void block(const Block& b, int indent) {
    for (const Stmt& s : b) stmt(s, indent);
  }

  void stmt(const Stmt& s, int indent) {
    if (!s.defined()) return line(indent, "<undefined>");
    switch (s->kind) {
      case StmtKind::For: {
        auto op = s.as<For>();
        std::string h = loop_prefix(*op) + "for " + op->var + " in " + print(op->lo) + ".." + print(op->hi);
        if (op->step.defined() && !is_one(op->step)) h += " step " + print(op->step);
        line(indent, h + " {");
        block(op->body, indent + 1);
        return line(indent, "}");
      }
      case StmtKind::If: {
        auto op = s.as<If>();
        line(indent, "if " + print(op->cond) + " {");
        block(op->then_body, indent + 1);
        if (!op->else_body.empty()) {
          line(indent, "} else {");
          block(op->else_body, indent + 1);
        }
        return line(indent, "}");
      }
      case StmtKind::Let: {
        auto op = s.as<Let>();
        std::string type = op->value.defined() ? ": " + print(op->value->type) : "";
        return line(indent, "let " + op->name + type + " = " + print(op->value));
      }
      case StmtKind::Decl: {
        auto op = s.as<Decl>();
        std::string h = "var " + op->name + ": " + print(op->type);
        if (op->init.defined()) h += " = " + print(op->init);
        return line(indent, h);
      }
      case StmtKind::Assign: {
        auto op = s.as<Assign>();
        return line(indent, op->name + " = " + print(op->value));
      }
      case StmtKind::Store: {
        auto op = s.as<Store>();
        return line(indent, axes_text(op->buffer, op->axes) + " = " + print(op->value));
      }
      case StmtKind::Yield: {
        return yield_line(indent, *s.as<Yield>());
      }
      case StmtKind::Allocate: {
        auto op = s.as<Allocate>();
        const char* space = op->space == MemorySpace::Shared ? "shared " : op->space == MemorySpace::Fragment ? "fragment " : "local ";
        std::string cap = op->capacity > 0 ? " capacity " + std::to_string(op->capacity) : "";
        std::string at = op->offset >= 0 ? " at byte " + std::to_string(op->offset) : "";
        return line(indent, space + op->name + ": " + print(op->type) + cap + at);
      }
      case StmtKind::Barrier: return line(indent, std::string("barrier(") + scope_name(s.as<Barrier>()->scope) + ")");
      case StmtKind::BlockReduce: {
        auto op = s.as<BlockReduce>();
        return line(indent, "let " + op->name + " = block_reduce(" + reduce_op_name(op->op) + ", " + op->array + "[0:" + print(op->count) + "])");
      }
      case StmtKind::TileMma: return line(indent, tile_mma_text(*s.as<TileMma>()));
      case StmtKind::AsyncCopy: return line(indent, async_copy_text(*s.as<AsyncCopy>()));
      case StmtKind::WarpgroupProduct: {
        auto op = s.as<WarpgroupProduct>();
        line(indent, warpgroup_product_text(*op));
        block(op->epilogue, indent + 1);
        return line(indent, "}");
      }
      case StmtKind::WarpgroupAttention: {
        auto op = s.as<WarpgroupAttention>();
        line(indent, warpgroup_attention_text(*op));
        block(op->epilogue, indent + 1);
        return line(indent, "}");
      }
      case StmtKind::Check: return line(indent, "check " + print(s.as<Check>()->cond) + ", \"" + s.as<Check>()->message + "\"");
      case StmtKind::MatMulBlock: {
        auto op = s.as<MatMulBlock>();
        std::vector<AxisSel> at;
        for (const Expr& i : op->c_index) at.push_back(AxisSel::at(i));
        return line(indent, "matmul_block<" + std::to_string(op->rows) + "x" + std::to_string(op->cols) + "> " +
                                axes_text(op->c, at) + " ldc " + print(op->ldc) + " valid (" + print(op->m_valid) + ", " +
                                print(op->n_valid) + ") accumulate " + print(op->accumulate) + " <- " + op->a + "[" +
                                print(op->a_offset) + "] strides (" + print(op->a_row_stride) + ", " + print(op->a_k_stride) +
                                ") . " + op->b + "[" + print(op->b_offset) + "] " +
                                (op->b_rows.empty() ? "ldb " + print(op->ldb)
                                                    : "rows " + op->b_rows + "[" + print(op->b_rows_at) + "..] <= " +
                                                          std::to_string(op->b_rows_max)) +
                                " over " + print(op->kc));
      }
      case StmtKind::Atomic: {
        auto op = s.as<Atomic>();
        // Device scope is what a plain GPU atomic gives, so only others are spelled out.
        std::string h = atomic_name(op->op);
        if (op->scope != FenceScope::Device) h += std::string("(") + scope_name(op->scope) + ")";
        std::vector<AxisSel> axes;
        for (const Expr& i : op->index) axes.push_back(AxisSel::at(i));
        return line(indent, h + " " + axes_text(op->buffer, axes) + ", " + print(op->value));
      }
    }
  }

  void line(int indent, const std::string& text) {
    out.append(2 * indent, ' ');
    out += text;
    out += '\n';
  }

 private:
  void yield_line(int indent, const Yield& op) {
    std::string h = "yield";
    if (!op.out_index.empty()) h += "[" + join(op.out_index) + "]";
    h += ' ';
    h += op.index.defined() ? "(" + print(op.value) + ", " + print(op.index) + ")" : print(op.value);
    line(indent, h);
  }
};

std::string kernel_kind_text(const Kernel& k) {
  if (k.kind != KernelKind::Reduce) return kernel_kind_name(k.kind);
  std::string s = std::string("reduce(") + reduce_op_name(k.reduce_op);
  if (k.reduce_axis) s += ", axis=" + std::to_string(*k.reduce_axis);
  return s + ")";
}

const char* role_name(ParamRole r) {
  switch (r) {
    case ParamRole::Input: return "in";
    case ParamRole::Scalar: return "scalar";
    case ParamRole::Output: return "out";
  }
  return "?";
}

// `name a, b, c` for a non-empty list.
void list_line(StmtPrinter& p, const char* name, const std::vector<std::string>& items) {
  if (items.empty()) return;
  std::string s = name;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : " ") + items[i];
  p.line(1, s);
}

}  // namespace

std::string print(const Expr& e) { return format(e).s; }

std::string print(const Type& t) {
  if (t.is_scalar()) return dtype_name(t.dtype);
  std::string s = "tensor[";
  for (const Expr& e : t.shape) s += print(e) + ", ";
  return s + dtype_name(t.dtype) + "]";
}

std::string print(const Stmt& s, int indent) {
  StmtPrinter p;
  p.stmt(s, indent);
  return p.out;
}

std::string print(const Block& b, int indent) {
  StmtPrinter p;
  p.block(b, indent);
  return p.out;
}

std::string print(const Kernel& k) {
  StmtPrinter p;
  p.out = "kernel " + k.name + ": " + kernel_kind_text(k) + "\n";
  std::vector<std::string> dims, host_dims;
  for (const DimParam& d : k.dims) (d.source == DimSource::Input ? dims : host_dims).push_back(d.name);
  list_line(p, "dims", dims);
  list_line(p, "host_dims", host_dims);
  for (const Param& param : k.params)
    p.line(1, std::string(role_name(param.role)) + " " + param.name + ": " + print(param.type));
  const KernelHints& h = k.hints;
  if (h.workgroup) {
    const auto& w = *h.workgroup;
    list_line(p, "workgroup", {std::to_string(w[0]), std::to_string(w[1]), std::to_string(w[2])});
  }
  if (h.shared_bytes.defined()) p.line(1, "shared_bytes " + print(h.shared_bytes));
  std::vector<std::string> tiles, broadcasts;
  for (const auto& [name, size] : h.tile) tiles.push_back(name + "=" + std::to_string(size));
  for (const auto& [input, axis] : h.broadcast) broadcasts.push_back(input + " axis=" + std::to_string(axis));
  list_line(p, "tile", tiles);
  list_line(p, "broadcast", broadcasts);
  if (!h.device.empty()) p.line(1, "device \"" + h.device + "\"");
  if (!h.parallel.empty()) p.line(1, "parallel " + h.parallel);
  if (h.bf16) p.line(1, "precision bf16");
  else if (h.tf32) p.line(1, "precision tf32");
  p.out += "{\n";
  p.block(k.body, 1);
  p.out += "}\n";
  return p.out;
}

}  // namespace zyntax::cir
