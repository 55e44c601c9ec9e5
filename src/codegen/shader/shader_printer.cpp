#include "codegen/shader/shader_printer.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "cir/printer.hpp"
#include "codegen/llvm/kernel_abi.hpp"

namespace zyntax::codegen {

std::string shader_identifier(const std::string& name) {
  std::string s = "v_";
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

void ShaderSupport::visit(const cir::Access* op) {
  for (const cir::AxisSel& a : op->axes)
    if (a.is_slice) fail("slices");
  if (!op->type.is_scalar()) fail("tile values");
  IRVisitor::visit(op);
}

void ShaderSupport::visit(const cir::Store* op) {
  if (op->axes.empty()) fail("whole-tile stores");
  IRVisitor::visit(op);
}

void ShaderSupport::visit(const cir::For* op) {
  bool block = op->loop_kind == cir::LoopKind::GpuBlock;
  block_depth_ += block;
  IRVisitor::visit(op);
  block_depth_ -= block;
}

void ShaderSupport::count_shared(const cir::Allocate* op, int64_t bytes, int64_t limit, const std::string& language) {
  if (op->space != cir::MemorySpace::Shared || block_depth_ == 0 || bytes <= 0) return;
  shared_bytes_ += bytes;
  if (shared_bytes_ > limit)
    fail("shared arrays of " + std::to_string(shared_bytes_) + " bytes (" + language + " arrays cannot share bytes), more than the device's " +
         std::to_string(limit));
}

// ------------------------------------------------------------ output

void ShaderPrinter::line(const std::string& s) {
  for (int i = 0; i < indent_; ++i) body_ << "  ";
  body_ << s << "\n";
}

std::string ShaderPrinter::temp(DType t, const std::string& value) {
  std::string n = "t" + std::to_string(temp_++);
  line(declaration(t, n, value, Declare::Value));
  return n;
}

void ShaderPrinter::check(const std::string& ok, Span span, const std::string& what) {
  sites_.push_back({span, what});
  line(guarded("!(" + ok + ")", fail_call(static_cast<int>(sites_.size()))));
}

const ShaderPrinter::Buffer& ShaderPrinter::buffer(const std::string& name) {
  auto it = bufs_.find(name);
  if (it == bufs_.end()) unsupported("unknown buffer " + name);
  return it->second;
}

void ShaderPrinter::unsupported(const std::string& what) const { throw std::logic_error(std::string(language()) + " lowering: " + what); }

// ------------------------------------------------------------ the shader's interface

void ShaderPrinter::each_reduce_buffer(const std::function<void(const char* key, DType t)>& bind) {
  if (k_.kind != cir::KernelKind::Reduce) return;
  ReduceBuffers rb = reduce_buffers(k_);
  bind("%acc", rb.arg ? k_.output().type.dtype : rb.acc_dtype);
  if (rb.arg) {
    bind("%best", rb.best_dtype);
    bind("%has", DType::Bool);
  }
}

uint32_t ShaderPrinter::scalar_block(std::vector<ShaderScalar>& fields, const std::function<DType(DType)>& as_of,
                                     const std::function<void(const ShaderScalar&, const std::string& name)>& declare) {
  uint32_t offset = 0;
  auto add = [&](ShaderScalar::Source src, size_t index, DType t, const std::string& name) {
    DType as = as_of(t);
    uint32_t size = static_cast<uint32_t>(dtype_size(as));
    offset = (offset + size - 1) / size * size;
    fields.push_back({src, index, as, offset});
    declare(fields.back(), shader_identifier(name));
    offset += size;
    std::string value = "args." + shader_identifier(name);
    if (t == DType::Bool) value = "(" + value + " != 0u)";
    values_[name] = {value, t};
  };
  for (size_t i = 0; i < k_.params.size(); ++i)
    if (k_.params[i].role == cir::ParamRole::Scalar) add(ShaderScalar::Source::Scalar, i, k_.params[i].type.dtype, k_.params[i].name);
  for (size_t i = 0; i < k_.dims.size(); ++i) add(ShaderScalar::Source::Dim, i, DType::I64, k_.dims[i].name);
  return offset;
}

// ------------------------------------------------------------ the body

void ShaderPrinter::body() {
  const cir::For* outer = k_.body.size() == 1 ? k_.body[0].as<cir::For>() : nullptr;
  if (outer && outer->loop_kind == cir::LoopKind::Parallel) {
    if (k_.kind == cir::KernelKind::Reduce) task_var_ = outer->var;
    emit_for(*outer, Stride::Grid);
  } else if (std::any_of(k_.body.begin(), k_.body.end(), [](const cir::Stmt& s) {
               auto f = s.as<cir::For>();
               return f && f->loop_kind == cir::LoopKind::GpuBlock;
             })) {
    block(k_.body);
  } else {
    line("if (" + first_invocation() + ") {");
    ++indent_;
    block(k_.body);
    --indent_;
    line("}");
  }
}

void ShaderPrinter::block(const cir::Block& blk) {
  for (const cir::Stmt& s : blk) stmt(s);
}

// ------------------------------------------------------------ statements

void ShaderPrinter::stmt(const cir::Stmt& s) {
  switch (s->kind) {
    case cir::StmtKind::For: {
      const cir::For& f = *s.as<cir::For>();
      return emit_for(f, f.loop_kind == cir::LoopKind::GpuBlock    ? Stride::Block
                         : f.loop_kind == cir::LoopKind::GpuThread ? Stride::Thread
                                                                   : Stride::Serial);
    }
    case cir::StmtKind::If: {
      auto i = s.as<cir::If>();
      std::string c = expr(i->cond);
      line("if (" + c + ") {");
      ++indent_;
      block(i->then_body);
      --indent_;
      if (!i->else_body.empty()) {
        line("} else {");
        ++indent_;
        block(i->else_body);
        --indent_;
      }
      line("}");
      return;
    }
    case cir::StmtKind::Let: {
      auto l = s.as<cir::Let>();
      DType t = l->value->type.dtype;
      std::string v = expr(l->value), n = local_name(l->name);
      line(declaration(t, n, v, Declare::Value));
      values_[l->name] = {n, t};
      return;
    }
    case cir::StmtKind::Decl: {
      auto d = s.as<cir::Decl>();
      DType t = d->type.dtype;
      std::string v = d->init.defined() ? expr(d->init) : zero(t), n = local_name(d->name);
      line(declaration(t, n, v, Declare::Variable));
      values_[d->name] = {n, t};
      return;
    }
    case cir::StmtKind::Assign: {
      auto a = s.as<cir::Assign>();
      std::string v = expr(a->value);
      line(values_.at(a->name).text + " = " + v + ";");
      return;
    }
    case cir::StmtKind::Store: {
      auto st = s.as<cir::Store>();
      const Buffer& b = buffer(st->buffer);
      std::string v = expr(st->value), ok;
      std::string off = element_offset(b, st->axes, st->span, st->buffer, true, &ok);
      store(b, off, ok, v);
      return;
    }
    case cir::StmtKind::Yield: return emit_yield(*s.as<cir::Yield>());
    case cir::StmtKind::Allocate: return allocate(*s.as<cir::Allocate>());
    case cir::StmtKind::Barrier:
      // A GPU block's invocations meet; elsewhere one invocation runs each
      // iteration in order and there is nothing to wait for.
      if (block_depth_ > 0) line(barrier());
      return;
    case cir::StmtKind::Check: {
      auto c = s.as<cir::Check>();
      check(expr(c->cond), c->span, c->message);
      return;
    }
    case cir::StmtKind::Atomic: return emit_atomic(*s.as<cir::Atomic>());
    case cir::StmtKind::BlockReduce: return emit_block_reduce(*s.as<cir::BlockReduce>());
    default: unsupported("unsupported statement");
  }
}

// for var in lo..hi step s, as iterations k = first, first + stride, ...
// below trips with var = lo + k * s.
void ShaderPrinter::emit_for(const cir::For& f, Stride how) {
  std::string lo = temp(DType::I64, index_value(expr(f.lo)));
  std::string hi = temp(DType::I64, index_value(expr(f.hi)));
  std::string step = temp(DType::I64, index_value(expr(f.step)));
  std::string runs = "true";
  if (!f.step.as<cir::IntImm>()) {
    check(step + " > " + index_literal(0), f.span, "loop step must be positive");
    runs = step + " > " + index_literal(0);
  }
  std::string trips = trip_count(lo, hi, step, runs);
  auto [first, stride] = loop_start(how);
  LoopHeader header = loop_header(f, how, trips, first, stride);
  ++indent_;
  std::string var = local_name(f.var);
  line(declaration(DType::I64, var, loop_variable(lo, header.k, step), Declare::Value));
  values_[f.var] = {var, DType::I64};
  block_depth_ += f.loop_kind == cir::LoopKind::GpuBlock;
  thread_depth_ += f.loop_kind == cir::LoopKind::GpuThread;
  block(f.body);
  block_depth_ -= f.loop_kind == cir::LoopKind::GpuBlock;
  thread_depth_ -= f.loop_kind == cir::LoopKind::GpuThread;
  for (int i = 0; i < header.opened; ++i) {
    --indent_;
    line("}");
  }
}

void ShaderPrinter::allocate(const cir::Allocate& a) {
  DType t = a.type.dtype;
  uint64_t n = static_cast<uint64_t>(cir::allocation_bytes(a)) / dtype_size(t);
  std::string name = local_name(a.name);
  if (a.space == cir::MemorySpace::Shared && block_depth_ > 0) {
    // The block's own workgroup memory, undefined until written; one array each.
    std::string words = shared_array(t, name, std::max<uint64_t>(n, 1));
    bufs_[a.name] = {name, a.type, false, false, false, words};
    return;
  }
  if (a.space == cir::MemorySpace::Local && block_depth_ > 0 && thread_depth_ == 0) {
    // Thread-private: each invocation keeps only its own row (the first axis is the thread).
    int64_t threads = a.type.shape[0].as<cir::IntImm>()->value;
    check(workgroup_size() + " >= " + std::to_string(threads) + "u", a.span,
          "the GPU block has fewer threads than the schedule's " + std::to_string(threads));
    line(local_array(t, name, std::max<uint64_t>(n / static_cast<uint64_t>(threads), 1)));
    bufs_[a.name] = {name, a.type, false, false, true, ""};
    return;
  }
  // A local array; zero-filled each time it is reached where it is a shared
  // array (one invocation running a whole iteration), as the reference does.
  line(local_array(t, name, std::max<uint64_t>(n, 1)));
  if (a.space == cir::MemorySpace::Shared) zero_fill(t, name, n);
  bufs_[a.name] = {name, a.type, false, false, false, ""};
}

// ------------------------------------------------------------ offsets

std::string ShaderPrinter::flat_offset(const Buffer& b, const std::vector<cir::Expr>& indices, size_t first, Span span,
                                       const std::string& message, std::string* ok_out) {
  std::string offset = offset_origin(), ok = "true";
  for (size_t a = first; a < indices.size(); ++a) {
    std::string extent = axis_extent(expr(b.type.shape[a]));
    std::string idx = axis_index(expr(indices[a]));
    ok = ok + " && " + in_bounds(idx, extent);
    offset = "(" + offset + ") * " + extent + " + " + idx;
  }
  std::string okv = temp(DType::Bool, ok);
  check(okv, span, message);
  if (ok_out) *ok_out = okv;
  return guarded_offset(okv, offset);
}

std::string ShaderPrinter::element_offset(const Buffer& b, const std::vector<cir::AxisSel>& axes, Span span, const std::string& name, bool write,
                                          std::string* ok_out) {
  std::vector<cir::Expr> indices;
  for (const cir::AxisSel& a : axes) indices.push_back(a.index);
  return flat_offset(b, indices, b.thread_private ? 1 : 0, span,
                     std::string(write ? "index out of bounds writing " : "index out of bounds reading ") + name, ok_out);
}

// ------------------------------------------------------------ expressions

std::string ShaderPrinter::expr(const cir::Expr& e) {
  DType t = e->type.dtype;
  switch (e->kind) {
    case cir::ExprKind::IntImm: return int_constant(e.as<cir::IntImm>()->value, t);
    case cir::ExprKind::FloatImm: return float_constant(e.as<cir::FloatImm>()->value, t);
    case cir::ExprKind::BoolImm: return e.as<cir::BoolImm>()->value ? "true" : "false";
    case cir::ExprKind::Var: {
      const std::string& name = e.as<cir::Var>()->name;
      auto it = values_.find(name);
      if (it == values_.end()) unsupported("unknown name " + name);
      return it->second.text;
    }
    case cir::ExprKind::Cast: {
      auto c = e.as<cir::Cast>();
      return temp(t, convert(expr(c->value), c->value->type.dtype, t, c->span));
    }
    case cir::ExprKind::Unary: {
      auto u = e.as<cir::Unary>();
      std::string a = expr(u->a);
      DType at = u->a->type.dtype;
      if (u->op == UnaryOp::Not) return temp(DType::Bool, "!" + truthy(a, at));
      if (at == DType::Bool) return a;
      return negate(at, a, u->span);
    }
    case cir::ExprKind::Binary: return binary(*e.as<cir::Binary>());
    case cir::ExprKind::Select: {
      auto s = e.as<cir::Select>();
      std::string c = expr(s->cond), x = expr(s->t), y = expr(s->f);
      return temp(t, select(c, x, y));
    }
    case cir::ExprKind::Math: return math(*e.as<cir::Math>());
    case cir::ExprKind::Access: {
      auto a = e.as<cir::Access>();
      const Buffer& b = buffer(a->buffer);
      std::string off = element_offset(b, a->axes, a->span, a->buffer, false);
      return temp(b.type.dtype, b.tensor ? load(b, off, a->span) : b.name + "[" + off + "]");
    }
    default: unsupported("unsupported expression " + cir::print(e));
  }
}

std::string ShaderPrinter::binary(const cir::Binary& bin) {
  DType t = bin.a->type.dtype;
  if (bin.op == BinaryOp::And || bin.op == BinaryOp::Or) {
    // Short-circuit: the right side (and its checks) only where it decides.
    std::string r = fresh("t");
    std::string a = expr(bin.a);
    line(declaration(DType::Bool, r, truthy(a, t), Declare::Variable));
    line(std::string("if (") + (bin.op == BinaryOp::And ? "" : "!") + r + ") {");
    ++indent_;
    std::string c = expr(bin.b);
    line(r + " = " + truthy(c, bin.b->type.dtype) + ";");
    --indent_;
    line("}");
    return r;
  }
  std::string a = expr(bin.a), c = expr(bin.b);
  if (is_comparison(bin.op)) return temp(DType::Bool, compare(bin.op, t, a, c));
  return arith_value(bin.op, t, a, c, bin.span);
}

std::string ShaderPrinter::compare(BinaryOp op, DType t, const std::string& a, const std::string& c) {
  if (t == DType::Bool) return compare(op, DType::I32, bool_to_int(a), bool_to_int(c));
  switch (op) {
    case BinaryOp::Eq: return "(" + a + " == " + c + ")";
    case BinaryOp::Ne: return "!(" + a + " == " + c + ")";  // unordered: NaN != anything
    case BinaryOp::Lt: return "(" + a + " < " + c + ")";
    case BinaryOp::Le: return "(" + a + " <= " + c + ")";
    case BinaryOp::Gt: return "(" + a + " > " + c + ")";
    default: return "(" + a + " >= " + c + ")";
  }
}

std::string ShaderPrinter::min_max(bool is_min, DType t, const std::string& a, const std::string& c) {
  if (is_float(t)) return float_min_max(is_min, t, a, c);
  return std::string(is_min ? "min(" : "max(") + a + ", " + c + ")";
}

std::string ShaderPrinter::truthy(const std::string& v, DType t) {
  if (t == DType::Bool) return v;
  if (is_float(t)) return "!(" + v + " == " + zero(t) + ")";
  return "(" + v + " != " + zero(t) + ")";
}

std::string ShaderPrinter::round_to(DType t, const std::string& v) {
  if (t != DType::F16 && t != DType::BF16) return v;
  helpers_.insert(t == DType::F16 ? "f16" : "bf16");
  return t == DType::F16 ? rounded_f16(v) : rounded_bf16(v);
}

std::string ShaderPrinter::scalar_constant(const Scalar& s, DType t) {
  if (is_float(t)) return float_constant(s.f, t);
  if (t == DType::Bool) return s.i ? "true" : "false";
  return int_constant(is_signed_int(t) ? s.i : static_cast<int64_t>(s.u), t);
}

// ------------------------------------------------------------ reductions and atomics

void ShaderPrinter::emit_yield(const cir::Yield& y) {
  std::string okv;
  std::string off = flat_offset(buffer("%acc"), y.out_index, 0, y.span, "yield to an output element out of range", &okv);
  std::string v = expr(y.value);
  line("if (" + okv + ") {");
  ++indent_;
  if (is_arg_reduce(k_.reduce_op)) yield_arg(y, off, v);
  else yield_fold(y, off, v);
  --indent_;
  line("}");
}

void ShaderPrinter::emit_atomic(const cir::Atomic& a) {
  const Buffer& b = buffer(a.buffer);
  std::vector<cir::AxisSel> axes;
  for (const cir::Expr& e : a.index) axes.push_back(cir::AxisSel::at(e));
  std::string x = expr(a.value), ok;
  std::string off = element_offset(b, axes, a.span, a.buffer, true, &ok);
  line("if (" + ok + ") {");
  ++indent_;
  atomic_update(a, b, off, x);
  --indent_;
  line("}");
}

std::string ShaderPrinter::atomic_combine(const cir::Atomic& a, DType t, const std::string& cur, const std::string& x) {
  switch (a.op) {
    case cir::AtomicOp::Add: return arith(BinaryOp::Add, t, cur, x, a.span);
    case cir::AtomicOp::Min: return arith(BinaryOp::Min, t, cur, x, a.span);
    case cir::AtomicOp::Max: return arith(BinaryOp::Max, t, cur, x, a.span);
    case cir::AtomicOp::Exchange: return x;
    case cir::AtomicOp::And:
    case cir::AtomicOp::Or: return logical(t, "(" + truthy(cur, t) + (a.op == cir::AtomicOp::And ? " && " : " || ") + truthy(x, t) + ")", a.span);
  }
  return x;
}

// A block-wide fold (cir::BlockReduce): each invocation folds its elements
// of the array; then either a subgroup folds its invocations' values by
// butterfly shuffles, lane 0 of each subgroup leaves the subgroup's value
// in workgroup scratch, and every invocation folds the scratch; or, without
// shuffles, every invocation's value goes into the scratch and halving
// strides fold it into its first element, which every invocation reads.
void ShaderPrinter::emit_block_reduce(const cir::BlockReduce& r) {
  const Buffer& array = buffer(r.array);
  DType t = array.type.dtype;
  BinaryOp combine = *reduce_binary_op(r.op);
  std::string identity = scalar_constant(reduce_identity(r.op, t), t);
  std::string scratch = fresh("zy_scratch");
  shared_array(t, scratch, static_cast<uint64_t>(threads_));
  line(barrier());
  std::string mine = fresh("mine"), i = fresh("i");
  std::string count = block_count(expr(r.count));
  line(declaration(t, mine, identity, Declare::PlainVariable));
  line(block_loop(i, count));
  ++indent_;
  std::string element = temp(t, array_at(array.name, i));
  line(mine + " = " + arith(combine, t, mine, element, r.span) + ";");
  --indent_;
  line("}");
  if (!has_shuffles()) {
    std::string tree = tree_scratch(t, scratch);
    line(tree + "[" + local_id() + "] = " + mine + ";");
    line(shared_barrier());
    int half = 1;
    while (half * 2 < threads_) half *= 2;
    std::string st = fresh("s");
    line(halving_loop(st, half));
    ++indent_;
    line("if (" + local_id() + " < " + st + " && " + local_id() + " + " + st + " < " + std::to_string(threads_) + "u) {");
    ++indent_;
    std::string lhs = tree + "[" + local_id() + "]";
    std::string folded = arith_value(combine, t, lhs, tree + "[" + local_id() + " + " + st + "]", r.span);
    line(lhs + " = " + folded + ";");
    --indent_;
    line("}");
    line(shared_barrier());
    --indent_;
    line("}");
    std::string result = local_name(r.name);
    line(declaration(t, result, tree + "[0]", Declare::PlainValue));
    line(shared_barrier());  // the scratch is read before anyone writes it again
    values_[r.name] = {result, t};
    return;
  }
  std::string off = fresh("o");
  line(subgroup_halving_loop(off));
  ++indent_;
  std::string other = temp(t, shuffle_xor(mine, t, off));
  line(mine + " = " + arith(combine, t, mine, other, r.span) + ";");
  --indent_;
  line("}");
  line(guarded(subgroup_lane() + " == 0u", scratch + "[" + subgroup_index() + "] = " + mine + ";"));
  line(shared_barrier());
  std::string result = local_name(r.name), w = fresh("w");
  line(declaration(t, result, identity, Declare::PlainVariable));
  line(subgroup_loop(w) + " " + result + " = " + arith(combine, t, result, scratch + "[" + w + "]", r.span) + ";");
  values_[r.name] = {result, t};
}

}  // namespace zyntax::codegen
