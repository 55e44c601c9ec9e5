#include "codegen/glsl/glsl_emitter.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cir/passes/spell_out_special_literals.hpp"
#include "cir/printer.hpp"
#include "cir/reads.hpp"
#include "cir/visitor.hpp"
#include "codegen/glsl/glsl_f64_math.hpp"
#include "codegen/shader/f32_math.hpp"
#include "codegen/shader/shader_printer.hpp"
#include "codegen/glsl/spirv_float_controls.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "support/trip_count.hpp"

namespace zyntax::codegen {

namespace {

using cir::Expr;

// lavapipe stops a shader loop after this many iterations.
constexpr int64_t kLoopLimit = 65535;

// Values live in registers as these types; f16 and bf16 are computed in
// f32 and rounded back after every operation, 8- and 16-bit integers in 32
// bits and wrapped back.
std::string reg_type(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::Bool: return "bool";
    case DType::I8: case DType::I16: case DType::I32: return "int";
    case DType::U8: case DType::U16: case DType::U32: return "uint";
    case DType::I64: return "int64_t";
    case DType::U64: return "uint64_t";
  }
  return "int";
}

// Elements in storage buffers.
std::string mem_type(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: case DType::U16: return "uint16_t";
    case DType::I16: return "int16_t";
    case DType::Bool: case DType::U8: return "uint8_t";
    case DType::I8: return "int8_t";
    default: return reg_type(t);
  }
}


// The unsigned integer type of a value's bits (atomics work on these).
std::string bits_type(DType t) { return dtype_size(t) == 8 ? "uint64_t" : "uint"; }

std::string hex(uint64_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v;
  return o.str();
}

// ------------------------------------------------------------ loop iterations per invocation

// Loops a schedule marks unrolled, with a constant trip count up to this, are
// unrolled whole ([[unroll]]): they cost no iterations.
constexpr int64_t kUnrollLimit = 64;

std::optional<int64_t> constant_trips(const cir::For& f) {
  auto lo = f.lo.as<cir::IntImm>(), hi = f.hi.as<cir::IntImm>(), step = f.step.as<cir::IntImm>();
  if (!lo || !hi || !step || step->value <= 0) return std::nullopt;
  return trip_count(lo->value, hi->value, step->value);
}

bool unrolled_whole(const cir::For& f) {
  std::optional<int64_t> trips = constant_trips(f);
  return f.loop_kind == cir::LoopKind::Unrolled && trips && *trips <= kUnrollLimit && (f.factor <= 0 || f.factor >= *trips);
}

// An upper bound of the loop iterations one invocation runs, counted as
// lavapipe counts them (every loop of the shader; a grid or block loop runs
// once per invocation, the device launching enough workgroups); nothing
// where a trip count has no bound (a loop over a variable's value). Bounds
// come from interval arithmetic over the loop variables and lets around.
class LoopIterations {
 public:
  LoopIterations(const GpuTarget& t, int threads) : t_(t), threads_(std::max(threads, 1)) {}

  using Range = std::pair<int64_t, int64_t>;  // [lo, hi], both included

  // The values an integer expression takes, where they are bounded.
  std::optional<Range> range(const Expr& e) const {
    constexpr int64_t kBig = int64_t{1} << 50;
    auto clamp = [](__int128 v) { return static_cast<int64_t>(std::max<__int128>(-kBig, std::min<__int128>(kBig, v))); };
    switch (e->kind) {
      case cir::ExprKind::IntImm: return Range{e.as<cir::IntImm>()->value, e.as<cir::IntImm>()->value};
      case cir::ExprKind::Var: {
        auto it = ranges_.find(e.as<cir::Var>()->name);
        return it == ranges_.end() ? std::nullopt : std::optional<Range>(it->second);
      }
      case cir::ExprKind::Cast: return is_int(e->type.dtype) ? range(e.as<cir::Cast>()->value) : std::nullopt;
      case cir::ExprKind::Select: {
        std::optional<Range> a = range(e.as<cir::Select>()->t), b = range(e.as<cir::Select>()->f);
        if (!a || !b) return std::nullopt;
        return Range{std::min(a->first, b->first), std::max(a->second, b->second)};
      }
      case cir::ExprKind::Unary: {
        auto u = e.as<cir::Unary>();
        std::optional<Range> a = range(u->a);
        if (!a || u->op != UnaryOp::Neg) return std::nullopt;
        return Range{-a->second, -a->first};
      }
      case cir::ExprKind::Binary: {
        auto b = e.as<cir::Binary>();
        std::optional<Range> x = range(b->a), y = range(b->b);
        if (!x || !y) return std::nullopt;
        __int128 xl = x->first, xh = x->second, yl = y->first, yh = y->second;
        switch (b->op) {
          case BinaryOp::Add: return Range{clamp(xl + yl), clamp(xh + yh)};
          case BinaryOp::Sub: return Range{clamp(xl - yh), clamp(xh - yl)};
          case BinaryOp::Mul: {
            __int128 c[4] = {xl * yl, xl * yh, xh * yl, xh * yh};
            return Range{clamp(*std::min_element(c, c + 4)), clamp(*std::max_element(c, c + 4))};
          }
          case BinaryOp::Div:
            if (yl <= 0) return std::nullopt;
            return Range{clamp(std::min(xl / yl, xl / yh)), clamp(std::max(xh / yl, xh / yh))};
          case BinaryOp::Mod:
            if (yl <= 0 || xl < 0) return std::nullopt;
            return Range{0, clamp(std::min(xh, yh - 1))};
          case BinaryOp::Min: return Range{clamp(std::min(xl, yl)), clamp(std::min(xh, yh))};
          case BinaryOp::Max: return Range{clamp(std::max(xl, yl)), clamp(std::max(xh, yh))};
          default: return std::nullopt;
        }
      }
      case cir::ExprKind::Math: {
        auto m = e.as<cir::Math>();
        if ((m->fn != MathFn::Min && m->fn != MathFn::Max) || m->args.size() != 2) return std::nullopt;
        std::optional<Range> x = range(m->args[0]), y = range(m->args[1]);
        if (!x || !y) return std::nullopt;
        if (m->fn == MathFn::Min) return Range{std::min(x->first, y->first), std::min(x->second, y->second)};
        return Range{std::max(x->first, y->first), std::max(x->second, y->second)};
      }
      default: return std::nullopt;
    }
  }

  // The most iterations a loop runs, where its range is bounded.
  std::optional<int64_t> most_trips(const cir::For& f) const {
    auto step = f.step.as<cir::IntImm>();
    std::optional<Range> lo = range(f.lo), hi = range(f.hi);
    if (!step || step->value <= 0 || !lo || !hi) return std::nullopt;
    return trip_count(lo->first, hi->second, step->value);
  }

  std::optional<int64_t> block(const cir::Block& b, bool outermost) {
    int64_t total = 0;
    for (const cir::Stmt& s : b) {
      std::optional<int64_t> n = stmt(s, outermost);
      if (!n) return std::nullopt;
      total = std::min<int64_t>(total + *n, int64_t{1} << 40);
    }
    return total;
  }

 private:
  std::optional<int64_t> stmt(const cir::Stmt& s, bool outermost) {
    if (auto l = s.as<cir::Let>()) {
      if (std::optional<Range> r = range(l->value)) ranges_[l->name] = *r;
      return 0;
    }
    if (auto f = s.as<cir::For>()) {
      bool gpu_block = f->loop_kind == cir::LoopKind::GpuBlock;
      std::optional<int64_t> trips = most_trips(*f);
      std::optional<Range> lo = range(f->lo), hi = range(f->hi);
      if (lo && hi) ranges_[f->var] = Range{lo->first, std::max(lo->first, hi->second - 1)};
      in_block_ += gpu_block;
      std::optional<int64_t> body = block(f->body, false);
      in_block_ -= gpu_block;
      if (!body) return std::nullopt;
      if ((outermost && f->loop_kind == cir::LoopKind::Parallel) || f->loop_kind == cir::LoopKind::GpuBlock) return 2 + *body;
      if (!trips) return std::nullopt;
      if (unrolled_whole(*f)) return *trips * *body;
      int64_t per = f->loop_kind == cir::LoopKind::GpuThread ? (*trips + threads_ - 1) / threads_ : *trips;
      return std::min<int64_t>(per * (1 + *body) + per / kLoopLimit + 1, int64_t{1} << 40);
    }
    if (auto i = s.as<cir::If>()) {
      std::optional<int64_t> a = block(i->then_body, false), b = block(i->else_body, false);
      if (!a || !b) return std::nullopt;
      return std::max(*a, *b);
    }
    if (auto r = s.as<cir::BlockReduce>()) {
      std::optional<Range> count = range(r->count);
      if (!count) return std::nullopt;
      return (count->second + threads_ - 1) / threads_ + 8 + threads_ / std::max(t_.subgroup_size, 1);
    }
    if (auto a = s.as<cir::Allocate>(); a && a->space == cir::MemorySpace::Shared && in_block_ == 0)  // zero-filled
      return cir::allocation_bytes(*a) / static_cast<int64_t>(dtype_size(a->type.dtype));
    if (s.as<cir::Atomic>() || s.as<cir::Yield>()) return 2;  // a compare-and-swap retried once
    return 0;
  }

  const GpuTarget& t_;
  int threads_;
  int in_block_ = 0;
  std::map<std::string, Range> ranges_;  // of loop variables and integer lets
};

// ------------------------------------------------------------ what can be written

class Support : public ShaderSupport {
 public:
  Support(const cir::Kernel& k, const GpuTarget& t, int threads) : k_(k), t_(t), threads_(threads) {}

  std::optional<std::string> run() {
    for (const cir::Param& p : k_.params) {
      dtypes_[p.name] = p.type.dtype;
      need(p.type.dtype);
    }
    if (k_.kind == cir::KernelKind::Reduce) {
      ReduceBuffers rb = reduce_buffers(k_);
      need(rb.acc_dtype);
      if (!rb.arg && dtype_size(rb.acc_dtype) < 4) fail("reductions into elements of fewer than 4 bytes");
    }
    include(k_.body);
    if (!why() && t_.loop_budget > 0) {
      std::optional<int64_t> n = LoopIterations(t_, threads_).block(k_.body, true);
      if (!n) fail("loops whose trip counts are known only at run time (the device stops loops after " + std::to_string(t_.loop_budget) +
                   " iterations in all)");
      else if (*n > t_.loop_budget)
        fail("up to " + std::to_string(*n) + " loop iterations per invocation, more than the device's " + std::to_string(t_.loop_budget));
    }
    return why();
  }

 private:
  void need(DType t) {
    if (t == DType::F64 && !t_.f64) fail("f64 (the device has no shaderFloat64)");
    if ((t == DType::I64 || t == DType::U64) && !t_.i64) fail("i64 (the device has no shaderInt64)");
    if ((t == DType::F16 || t == DType::BF16) && !t_.f16) fail("16-bit storage");
  }

  using ShaderSupport::visit;
  void visit(const cir::Math* op) override {
    DType t = op->type.dtype;
    need(t);
    IRVisitor::visit(op);
  }
  void visit(const cir::Decl* op) override {
    if (!op->type.is_scalar()) fail("tile variables");
    need(op->type.dtype);
    IRVisitor::visit(op);
  }
  void visit(const cir::For* op) override {
    bool block = op->loop_kind == cir::LoopKind::GpuBlock;
    block_depth_ += block;
    IRVisitor::visit(op);
    block_depth_ -= block;
  }
  void visit(const cir::Allocate* op) override {
    dtypes_[op->name] = op->type.dtype;
    need(op->type.dtype);
    if (op->space == cir::MemorySpace::Fragment) fail("tensor-core fragments");
    int64_t bytes = cir::allocation_bytes(*op);
    if (bytes < 0) fail("arrays of non-constant size");
    // GLSL shared arrays cannot share bytes: each is its own, placed or not.
    if (op->space == cir::MemorySpace::Shared && block_depth_ > 0 && bytes > 0) {
      shared_bytes_ += bytes;
      if (shared_bytes_ > t_.shared_memory_max)
        fail("shared arrays of " + std::to_string(shared_bytes_) + " bytes (GLSL arrays cannot share bytes), more than the device's " +
             std::to_string(t_.shared_memory_max));
    }
    IRVisitor::visit(op);
  }
  void visit(const cir::Atomic* op) override {
    auto it = dtypes_.find(op->buffer);
    // 1- and 2-byte elements through their 32-bit word: only in the output's storage buffer.
    const cir::Param* p = k_.find_param(op->buffer);
    if (it != dtypes_.end() && dtype_size(it->second) < 4 && (!p || p->role != cir::ParamRole::Output))
      fail("atomic updates of 1- or 2-byte elements of an array");
    IRVisitor::visit(op);
  }
  void visit(const cir::Yield* op) override {
    if (op->value->type.dtype == DType::F64 && is_arg_reduce(k_.reduce_op)) need(DType::F64);
    IRVisitor::visit(op);
  }

  const cir::Kernel& k_;
  const GpuTarget& t_;
  int threads_;
  std::map<std::string, DType> dtypes_;
  int block_depth_ = 0;
  int64_t shared_bytes_ = 0;
};

// ------------------------------------------------------------ the emitter

// Whether a kernel computes products of sums (matrix products,
// convolutions, attention, `s += a * b`), whose multiply-adds a driver may
// fuse (as cuBLAS does), within the products' parity bound.
bool computes_products(const cir::Kernel& k) {
  using K = cir::KernelKind;
  if (k.kind == K::MatMul || k.kind == K::BatchedMatMul || k.kind == K::Conv2d || k.kind == K::Conv2dDepthwise ||
      k.kind == K::Attention || k.kind == K::FlashAttention)
    return true;
  struct Finder : cir::IRVisitor {
    bool found = false;
    using cir::IRVisitor::visit;
    void visit(const cir::Dot*) override { found = true; }
    void visit(const cir::MatMul*) override { found = true; }
    void visit(const cir::Assign* op) override {
      auto add = op->value.as<cir::Binary>();
      if (add && add->op == BinaryOp::Add && is_float(add->type.dtype))
        for (const cir::Expr& term : {add->a, add->b})
          if (auto m = term.as<cir::Binary>(); m && m->op == BinaryOp::Mul) found = true;
      cir::IRVisitor::visit(op);
    }
  } finder;
  finder.include(k.body);
  return finder.found;
}

class Glsl : public ShaderPrinter {
 public:
  // Other kernels' float values are `precise`: drivers then keep IEEE
  // semantics (Mesa otherwise folds x * 0 to 0 and a / (b * -0.0) to garbage
  // once it knows an operand, and fuses a * b + c), as the reference does.
  Glsl(const cir::Kernel& k, const GpuTarget& t, int threads) : ShaderPrinter(k, threads), t_(t), precise_(!computes_products(k)) {}

  GlslKernel run() {
    GlslKernel out;
    out.local_size = threads_;
    bind_parameters(out);
    body();
    out.source = header(out) + helpers() + shared_.str() + "\nvoid main() {\n" + body_.str() + "}\n";
    out.helper_calls = helper_calls_;
    out.sites = std::move(sites_);
    return out;
  }

 private:
  // ---------------------------------------------------------- declarations

  void bind_parameters(GlslKernel& out) {
    int binding = 0;
    std::ostringstream d;
    // A storage buffer at the next binding; for atomics, where `words`, the
    // same memory again as the elements' bits (or the 32-bit words of
    // narrower ones).
    auto storage = [&](const std::string& key, DType t, const cir::Type& type, bool readonly, bool words) {
      std::string block = "B" + std::to_string(binding), name = "b" + std::to_string(binding);
      d << "layout(std430, set = 0, binding = " << binding << ") " << (readonly ? "readonly " : "") << "buffer " << block << " { "
        << mem_type(t) << " d[]; } " << name << ";\n";
      Buffer b{name + ".d", type, true, false, false, ""};
      if (words) {
        d << "layout(std430, set = 0, binding = " << binding << ") buffer " << block << "w { " << bits_type(t) << " d[]; } " << name << "w;\n";
        b.bits = name + "w.d";
      }
      bufs_[key] = b;
      ++binding;
    };
    for (const cir::Param& p : k_.params)
      if (p.role != cir::ParamRole::Scalar)
        storage(p.name, p.type.dtype, p.type, p.role == cir::ParamRole::Input, p.role == cir::ParamRole::Output);
    out.tensor_bindings = binding;
    if (k_.kind == cir::KernelKind::Reduce) {
      ReduceBuffers rb = reduce_buffers(k_);
      auto reduce_buffer = [&](const char* n, DType t) {
        storage(n, t, cir::Type::tensor(t, k_.output().type.shape), false, dtype_size(t) >= 4);
      };
      reduce_buffer("%acc", rb.arg ? k_.output().type.dtype : rb.acc_dtype);
      if (rb.arg) {
        reduce_buffer("%best", rb.best_dtype);
        reduce_buffer("%has", DType::Bool);
      }
      out.reduce_bindings = binding - out.tensor_bindings;
    }
    out.status_binding = binding;
    d << "layout(std430, set = 0, binding = " << binding << ") buffer Status { uint status[]; };\n";
    // Scalars and dimensions: push constants, each in 4 or 8 bytes.
    std::ostringstream pc;
    uint32_t offset = 0;
    auto push = [&](GlslPushConstant::Source src, size_t index, DType t, const std::string& name) {
      DType as = t;
      switch (t) {
        case DType::F16: case DType::BF16: as = DType::F32; break;
        case DType::I8: case DType::I16: as = DType::I32; break;
        case DType::U8: case DType::U16: case DType::Bool: as = DType::U32; break;
        default: break;
      }
      uint32_t size = static_cast<uint32_t>(dtype_size(as));
      offset = (offset + size - 1) / size * size;
      out.push_constants.push_back({src, index, as, offset});
      pc << "  layout(offset = " << offset << ") " << type_name(as) << " " << shader_identifier(name) << ";\n";
      offset += size;
      std::string value = "args." + shader_identifier(name);
      if (t == DType::Bool) value = "(" + value + " != 0u)";
      values_[name] = {value, t};
    };
    for (size_t i = 0; i < k_.params.size(); ++i)
      if (k_.params[i].role == cir::ParamRole::Scalar) push(GlslPushConstant::Source::Scalar, i, k_.params[i].type.dtype, k_.params[i].name);
    for (size_t i = 0; i < k_.dims.size(); ++i) push(GlslPushConstant::Source::Dim, i, DType::I64, k_.dims[i].name);
    out.push_constant_bytes = offset;
    if (offset > 0) d << "layout(push_constant) uniform Args {\n" << pc.str() << "} args;\n";
    decls_ = d.str();
  }

  std::string header(const GlslKernel& out) const {
    std::ostringstream h;
    h << "#version 450\n"
      << "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
      << "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n"
      << "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n"
      << "#extension GL_EXT_shader_8bit_storage : require\n"
      << "#extension GL_EXT_shader_16bit_storage : require\n"
      << "#extension GL_EXT_shader_atomic_int64 : require\n"
      << "#extension GL_KHR_shader_subgroup_basic : require\n"
      << "#extension GL_KHR_shader_subgroup_shuffle : require\n"
      << (unrolled_ ? "#extension GL_EXT_control_flow_attributes : require\n" : "")
      << preserve_pragma()
      << "layout(local_size_x = " << out.local_size << ") in;\n"
      << decls_;
    return h.str();
  }

  // Asks the driver to keep NaN, infinities and signed zeros where the
  // device lets a shader ask (codegen/glsl/spirv_float_controls.hpp).
  std::string preserve_pragma() const {
    std::string widths = std::string(t_.preserves_ieee_specials_f32 ? " 32" : "") + (t_.preserves_ieee_specials_f64 && t_.f64 ? " 64" : "");
    return widths.empty() ? "" : std::string(kPreservePragma) + widths + "\n";
  }
  // Functions the body calls (written out only where it does).
  std::string helpers() const {
    std::ostringstream h;
    h << "void zy_fail(uint id) { atomicCompSwap(status[0], 0u, id); }\n";
    if (helpers_.count("f16"))
      h << "float zy_f16(float x) { return unpackHalf2x16(packHalf2x16(vec2(x, 0.0))).x; }\n";
    if (helpers_.count("bf16"))
      h << "uint zy_bf16_bits(float f) {\n"
           "  uint bits = floatBitsToUint(f);\n"
           "  if (isnan(f)) return (bits >> 16) | 0x40u;\n"
           "  return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;\n"
           "}\n"
           "float zy_bf16(float x) { return uintBitsToFloat(zy_bf16_bits(x) << 16); }\n";
    for (const char* t : {"float", "double"}) {
      std::string T = t;
      // IEEE 754-2019 minimum and maximum: NaN propagates and -0 < +0
      // (GLSL's min and max return either zero), as the reference.
      std::string bits = T == "float" ? "floatBitsToUint" : "doubleBitsToUint64", from = T == "float" ? "uintBitsToFloat" : "uint64BitsToDouble";
      if (helpers_.count("minmax_" + T))
        h << T << " zy_min(" << T << " a, " << T << " b) {\n"
          << "  if (isnan(a) || isnan(b)) return a + b;\n"
          << "  return a == 0.0 && b == 0.0 ? " << from << "(" << bits << "(a) | " << bits << "(b)) : min(a, b);\n}\n"
          << T << " zy_max(" << T << " a, " << T << " b) {\n"
          << "  if (isnan(a) || isnan(b)) return a + b;\n"
          << "  return a == 0.0 && b == 0.0 ? " << from << "(" << bits << "(a) & " << bits << "(b)) : max(a, b);\n}\n";
    }
    if (helpers_.count("fma32"))  // f32 a * b + c rounded once: the double product is exact, the double sum
      // and its error (two-sum) rounded to odd, which the conversion to f32 then rounds correctly
      h << "float zy_fma32(float a, float b, float c) {\n"
           "  precise double p = double(a) * double(b);\n"
           "  precise double s = p + double(c);\n"
           "  if (isnan(s) || isinf(s)) return float(s);\n"
           "  precise double bp = s - p;\n"
           "  precise double t = (p - (s - bp)) + (double(c) - bp);\n"
           "  if (t != 0.0LF && (unpackDouble2x32(s).x & 1u) == 0u) {\n"
           "    uint64_t bits = doubleBitsToUint64(s);\n"
           "    s = uint64BitsToDouble((t > 0.0LF) == (s > 0.0LF) ? bits + 1ul : bits - 1ul);\n"
           "  }\n"
           "  return float(s);\n"
           "}\n";
    h << shader_f32_library(library_, ShaderLanguage::Glsl);
    h << glsl_f64_library(f64_);
    if (helpers_.count("ipow"))
      h << "int64_t zy_ipow(int64_t b, int64_t e, bool is_signed, inout bool bad) {\n"
           "  if (is_signed && e < 0) {\n"
           "    if (b == 1l) return 1l;\n"
           "    if (b == -1l) return (e % 2l == 0l) ? 1l : -1l;\n"
           "    bad = true;\n"
           "    return 0l;\n"
           "  }\n"
           "  uint64_t x = uint64_t(b), r = 1ul, n = uint64_t(e);\n"
           "  for (int i = 0; i < 64 && n != 0ul; ++i) {\n"
           "    if ((n & 1ul) != 0ul) r *= x;\n"
           "    x *= x;\n"
           "    n >>= 1;\n"
           "  }\n"
           "  return int64_t(r);\n"
           "}\n";
    return h.str();
  }


  // ---------------------------------------------------------- the dialect

  const char* language() const override { return "GLSL"; }
  std::string type_name(DType t) const override { return reg_type(t); }

  // The declared type of a value: `precise` floats where the kernel keeps IEEE semantics.
  std::string value_type(DType t) { return (precise_ && is_float(t) ? "precise " : "") + reg_type(t); }

  std::string declaration(DType t, const std::string& name, const std::string& value, Declare how) override {
    bool plain = how == Declare::PlainValue || how == Declare::PlainVariable;
    return (plain ? reg_type(t) : value_type(t)) + " " + name + " = " + value + ";";
  }
  std::string guarded(const std::string& cond, const std::string& statement) override { return "if (" + cond + ") " + statement; }
  std::string first_invocation() override { return "gl_GlobalInvocationID.x == 0u && gl_GlobalInvocationID.y == 0u"; }
  std::string barrier() override { return "memoryBarrierShared(); memoryBarrierBuffer(); barrier();"; }
  std::string shared_barrier() override { return "memoryBarrierShared(); barrier();"; }
  std::string local_id() override { return "gl_LocalInvocationID.x"; }
  std::string workgroup_size() override { return "gl_WorkGroupSize.x"; }

  // ---------------------------------------------------------- types and constants

  std::string round_to(DType t, const std::string& v) {
    if (t == DType::F16) {
      helpers_.insert("f16");
      return "zy_f16(" + v + ")";
    }
    if (t == DType::BF16) {
      helpers_.insert("bf16");
      return "zy_bf16(" + v + ")";
    }
    return v;
  }

  // An integer result of a narrow dtype wrapped back into its range.
  std::string wrap(DType t, const std::string& v) {
    switch (t) {
      case DType::I8: return "bitfieldExtract(" + v + ", 0, 8)";
      case DType::I16: return "bitfieldExtract(" + v + ", 0, 16)";
      case DType::U8: return "((" + v + ") & 0xFFu)";
      case DType::U16: return "((" + v + ") & 0xFFFFu)";
      default: return v;
    }
  }

  std::string from_memory(DType t, const std::string& v) {
    switch (t) {
      case DType::F16: return "unpackHalf2x16(uint(" + v + ")).x";
      case DType::BF16: return "uintBitsToFloat(uint(" + v + ") << 16)";
      case DType::Bool: return "(uint(" + v + ") != 0u)";
      case DType::I8: case DType::I16: return "int(" + v + ")";
      case DType::U8: case DType::U16: return "uint(" + v + ")";
      default: return v;
    }
  }

  std::string to_memory(DType t, const std::string& v) {
    switch (t) {
      case DType::F16: return "uint16_t(packHalf2x16(vec2(" + v + ", 0.0)))";
      case DType::BF16: helpers_.insert("bf16"); return "uint16_t(zy_bf16_bits(" + v + "))";
      case DType::Bool: return "uint8_t((" + v + ") ? 1u : 0u)";
      case DType::I8: return "int8_t(" + v + ")";
      case DType::I16: return "int16_t(" + v + ")";
      case DType::U8: return "uint8_t(" + v + ")";
      case DType::U16: return "uint16_t(" + v + ")";
      default: return v;
    }
  }

  std::string float_constant(double v, DType t) override {
    if (t == DType::F64) {
      uint64_t bits;
      std::memcpy(&bits, &v, 8);
      return "packDouble2x32(uvec2(" + hex(bits & 0xFFFFFFFFu) + "u, " + hex(bits >> 32) + "u))";
    }
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return "uintBitsToFloat(" + hex(bits) + "u)";
  }

  std::string int_constant(int64_t v, DType t) override {
    switch (t) {
      case DType::I64: return v == INT64_MIN ? "int64_t(0x8000000000000000ul)" : std::to_string(v) + "l";
      case DType::U64: return std::to_string(static_cast<uint64_t>(v)) + "ul";
      case DType::I8: case DType::I16: case DType::I32:
        return v == INT32_MIN ? "int(0x80000000u)" : "int(" + std::to_string(static_cast<int32_t>(v)) + ")";
      case DType::Bool: return v ? "true" : "false";
      default: return std::to_string(static_cast<uint32_t>(v)) + "u";
    }
  }

  std::string zero(DType t) override {
    if (is_float(t)) return t == DType::F64 ? "0.0lf" : "0.0";
    return int_constant(0, t);
  }
  std::string convert(const std::string& v, DType from, DType to, Span = {}) override {
    if (from == to) return v;
    std::string rt = reg_type(to);
    if (to == DType::Bool) return truthy(v, from);
    if (is_float(from)) {
      if (is_float(to)) return round_to(to, rt + "(" + v + ")");
      // Saturating, NaN to 0, as LLVM's fptosi.sat/fptoui.sat.
      std::string lo, hi, d = "double(" + v + ")";
      switch (to) {
        case DType::I8: lo = "-128.0lf"; hi = "127.0lf"; break;
        case DType::I16: lo = "-32768.0lf"; hi = "32767.0lf"; break;
        case DType::I32: lo = "-2147483648.0lf"; hi = "2147483647.0lf"; break;
        case DType::U8: lo = "0.0lf"; hi = "255.0lf"; break;
        case DType::U16: lo = "0.0lf"; hi = "65535.0lf"; break;
        case DType::U32: lo = "0.0lf"; hi = "4294967295.0lf"; break;
        case DType::I64:
          return "(isnan(" + v + ") ? 0l : " + d + " >= 9223372036854775807.0lf ? 9223372036854775807l : " + d +
                 " <= -9223372036854775808.0lf ? int64_t(0x8000000000000000ul) : int64_t(" + v + "))";
        case DType::U64:
          return "(isnan(" + v + ") ? 0ul : " + d + " >= 18446744073709551615.0lf ? 18446744073709551615ul : " + d +
                 " <= 0.0lf ? 0ul : uint64_t(" + v + "))";
        default: break;
      }
      if (!t_.f64) d = "float(" + v + ")", lo.replace(lo.size() - 2, 2, ""), hi.replace(hi.size() - 2, 2, "");
      return "(isnan(" + v + ") ? " + zero(to) + " : " + rt + "(clamp(" + d + ", " + lo + ", " + hi + ")))";
    }
    if (from == DType::Bool) return "(" + v + " ? " + rt + "(1) : " + rt + "(0))";
    if (is_float(to)) {
      // Through f64, as the reference (one rounding from the integer).
      if (to == DType::F64 || !t_.f64) return round_to(to, rt + "(" + v + ")");
      return round_to(to, "float(double(" + v + "))");
    }
    // Integers: widened by the source's signedness, narrowed by wrapping.
    std::string wide = is_signed_int(from) ? "int64_t(" + v + ")" : "uint64_t(" + v + ")";
    switch (to) {
      case DType::I64: return "int64_t(" + wide + ")";
      case DType::U64: return "uint64_t(" + wide + ")";
      case DType::I32: return "int(" + wide + ")";
      case DType::U32: return "uint(" + wide + ")";
      case DType::I8: case DType::I16: return wrap(to, "int(" + wide + ")");
      default: return wrap(to, "uint(" + wide + ")");
    }
  }

  std::string select(const std::string& c, const std::string& x, const std::string& y) override { return c + " ? " + x + " : " + y; }

  // Parenthesised: `a` may be a negative literal, and `--7l` is a decrement.
  std::string negate(DType t, const std::string& a, Span) override {
    if (is_float(t)) return temp(t, round_to(t, "-(" + a + ")"));
    return temp(t, wrap(t, "-(" + a + ")"));
  }

  std::string bool_to_int(const std::string& v) override { return "int(" + v + ")"; }

  std::string float_min_max(bool is_min, DType t, const std::string& a, const std::string& c) override {
    helpers_.insert(t == DType::F64 ? "minmax_double" : "minmax_float");
    return round_to(t, std::string(is_min ? "zy_min(" : "zy_max(") + a + ", " + c + ")");
  }

  std::string arith(BinaryOp op, DType t, const std::string& a, const std::string& c, Span span) override {
    if (t == DType::Bool) {  // as the reference: 0/1 arithmetic, then "not zero"
      switch (op) {
        case BinaryOp::Add: case BinaryOp::Max: return "(" + a + " || " + c + ")";
        case BinaryOp::Mul: case BinaryOp::Min: return "(" + a + " && " + c + ")";
        case BinaryOp::Sub: return "(" + a + " != " + c + ")";
        default: {
          std::string r = arith(op, DType::I64, "(" + a + " ? 1l : 0l)", "(" + c + " ? 1l : 0l)", span);
          return "(" + r + " != 0l)";
        }
      }
    }
    if (is_float(t)) {
      switch (op) {
        case BinaryOp::Add: return round_to(t, a + " + " + c);
        case BinaryOp::Sub: return round_to(t, a + " - " + c);
        case BinaryOp::Mul: return round_to(t, a + " * " + c);
        case BinaryOp::Div: return round_to(t, a + " / " + c);
        case BinaryOp::Mod:
          if (t == DType::F64) return f64_call(kGlslF64Fmod, a + ", " + c);
          return round_to(t, library(kShaderF32Fmod, a + ", " + c));
        case BinaryOp::Pow:
          if (t == DType::F64) return f64_call(kGlslF64Pow, a + ", " + c);
          if (t_.f64) return round_to(t, "float(" + f64_call(kGlslF64Pow, "double(" + a + "), double(" + c + ")") + ")");  // as math functions
          return round_to(t, library(kShaderF32Pow, a + ", " + c));
        case BinaryOp::Min: return min_max(true, t, a, c);
        case BinaryOp::Max: return min_max(false, t, a, c);
        default: throw std::logic_error("GLSL lowering: bad float operator");
      }
    }
    switch (op) {
      case BinaryOp::Add: return wrap(t, a + " + " + c);
      case BinaryOp::Sub: return wrap(t, a + " - " + c);
      case BinaryOp::Mul: return wrap(t, a + " * " + c);
      case BinaryOp::Div:
      case BinaryOp::Mod: {
        check("(" + c + " != " + zero(t) + ")", span, op == BinaryOp::Div ? "integer division by zero" : "integer remainder by zero");
        // Truncating; a divisor of 0 gives 0 (the check has failed); x / -1 wraps.
        std::string d = temp(t, "(" + c + " == " + zero(t) + ") ? " + int_constant(1, t) + " : " + c);
        std::string q;
        if (is_signed_int(t)) {
          std::string minus_one = "(" + d + " == " + int_constant(-1, t) + ")";
          q = temp(t, minus_one + " ? " + wrap(t, "-(" + a + ")") + " : " + a + " / " + d);
        } else {
          q = temp(t, a + " / " + d);
        }
        if (op == BinaryOp::Div) return q;
        return wrap(t, a + " - " + q + " * " + d);
      }
      case BinaryOp::Pow: {
        helpers_.insert("ipow");
        std::string bad = fresh("bad");
        line("bool " + bad + " = false;");
        std::string r = temp(DType::I64, "zy_ipow(int64_t(" + a + "), int64_t(" + c + "), " + (is_signed_int(t) ? "true" : "false") + ", " + bad + ")");
        check("!" + bad, span, "integer power with a negative exponent");
        return convert(r, DType::I64, t);
      }
      case BinaryOp::Min: return min_max(true, t, a, c);
      case BinaryOp::Max: return min_max(false, t, a, c);
      default: throw std::logic_error("GLSL lowering: bad integer operator");
    }
  }

  std::string math(const cir::Math& m) override {
    DType t = m.type.dtype;
    std::vector<std::string> args;
    for (const Expr& a : m.args) args.push_back(expr(a));
    const std::string& x = args[0];
    auto call = [&](const char* fn) { return temp(t, round_to(t, std::string(fn) + "(" + x + ")")); };
    if (!is_float(t)) {
      bool s = is_signed_int(t);
      switch (m.fn) {
        case MathFn::Abs: return s ? temp(t, wrap(t, "abs(" + x + ")")) : x;
        case MathFn::Sign: return s ? temp(t, "(" + x + " > " + zero(t) + " ? " + int_constant(1, t) + " : " + x + " < " + zero(t) + " ? " +
                                               int_constant(-1, t) + " : " + zero(t) + ")")
                                    : temp(t, "(" + x + " != " + zero(t) + " ? " + int_constant(1, t) + " : " + zero(t) + ")");
        case MathFn::Relu: return s ? temp(t, "max(" + x + ", " + zero(t) + ")") : x;
        case MathFn::Min: return temp(t, "min(" + x + ", " + args[1] + ")");
        case MathFn::Max: return temp(t, "max(" + x + ", " + args[1] + ")");
        case MathFn::Clamp: return temp(t, "min(max(" + x + ", " + args[1] + "), " + args[2] + ")");
        default: throw std::logic_error(std::string("GLSL lowering: ") + math_fn_name(m.fn) + " on integers");
      }
    }
    std::string one = t == DType::F64 ? "1.0lf" : "1.0";
    if (t == DType::F64) return f64_math(m.fn, args);
    // GLSL's own functions promise little (asin 4e-4 off, tanh of tiny
    // arguments wrong, sinh overflowing early, log thousands of ulp off near
    // 1, exp 15 ulp at 34): where the device has doubles, the f64 helpers
    // compute them and the result is rounded once, as the reference does;
    // exp and exp2 (the hot path of softmax) stay in f32, ours.
    bool exact_in_f32 = m.fn == MathFn::Round || m.fn == MathFn::Floor || m.fn == MathFn::Ceil || m.fn == MathFn::Trunc;
    if (t_.f64 && m.fn != MathFn::Exp && m.fn != MathFn::Exp2 && !exact_in_f32)
      if (const char* helper = glsl_f64_function(m.fn)) {
        std::string joined;
        for (const std::string& a : args) joined += (joined.empty() ? "" : ", ") + std::string("double(") + a + ")";
        return temp(t, round_to(t, "float(" + f64_call(helper, joined) + ")"));
      }
    // Without doubles, ours in f32 (codegen/shader/f32_math); fma may
    // round twice.
    if (!t_.f64 || m.fn == MathFn::Exp || m.fn == MathFn::Exp2)
      if (const char* ours = shader_f32_function(m.fn)) {
        std::string joined;
        for (const std::string& a : args) joined += (joined.empty() ? "" : ", ") + a;
        return temp(t, round_to(t, library(ours, joined)));
      }
    switch (m.fn) {
      case MathFn::Sqrt: return call("sqrt");
      case MathFn::Rsqrt: return temp(t, round_to(t, one + " / sqrt(" + x + ")"));
      case MathFn::Abs: return call("abs");
      case MathFn::Floor: return call("floor");
      case MathFn::Ceil: return call("ceil");
      case MathFn::Round: return call("roundEven");
      case MathFn::Trunc: return call("trunc");
      case MathFn::Sign: return temp(t, "(isnan(" + x + ") ? " + x + " : sign(" + x + "))");
      case MathFn::Relu: return temp(t, "(isnan(" + x + ") ? " + x + " : " + x + " > " + zero(t) + " ? " + x + " : " + zero(t) + ")");
      case MathFn::Gelu:
      case MathFn::GeluTanh:
      case MathFn::Sigmoid:
      case MathFn::Silu:
        // In doubles (without them, codegen/shader/f32_math's): rounded once, as the reference.
        return temp(t, round_to(t, "float(" + f64_activation(m.fn, temp(DType::F64, "double(" + x + ")")) + ")"));
      case MathFn::Min: return temp(t, min_max(true, t, x, args[1]));
      case MathFn::Max: return temp(t, min_max(false, t, x, args[1]));
      case MathFn::Clamp: return temp(t, min_max(true, t, min_max(false, t, x, args[1]), args[2]));
      case MathFn::Fma:
        // GLSL need not fuse fma (lavapipe does not): with doubles, fused by hand.
        if (t_.f64) {
          helpers_.insert("fma32");
          return temp(t, round_to(t, "zy_fma32(" + x + ", " + args[1] + ", " + args[2] + ")"));
        }
        break;
      default: break;
    }
    throw std::logic_error("GLSL lowering: unknown math function");
  }

  // Calls a helper of codegen/shader/f32_math.
  std::string library(const char* fn, const std::string& args) {
    library_.insert(fn);
    ++helper_calls_;
    return std::string(fn) + "(" + args + ")";
  }

  // Calls a helper of glsl_f64_math.
  std::string f64_call(const char* fn, const std::string& args) {
    f64_.insert(fn);
    ++helper_calls_;
    return std::string(fn) + "(" + args + ")";
  }

  // gelu, gelu_tanh, sigmoid or silu of a double `x`, in the reference's
  // forms (support/scalar.cpp): no cancellation or overflow in the tails,
  // the limit -0 at -inf.
  std::string f64_activation(MathFn fn, const std::string& x) {
    std::string minus_inf = "(isinf(" + x + ") && " + x + " < 0.0LF)";
    switch (fn) {
      case MathFn::Gelu:
        return "(" + minus_inf + " ? -0.0LF : 0.5LF * " + x + " * " + f64_call("zy_d_erfc", x + " * -0.70710678118654752LF") + ")";
      case MathFn::GeluTanh:
        return "(" + minus_inf + " ? -0.0LF : " + x + " / (1.0LF + " +
               f64_call("zy_d_exp", "-1.5957691216057308LF * (" + x + " + 0.044715LF * " + x + " * " + x + " * " + x + ")") + "))";
      case MathFn::Sigmoid:
      case MathFn::Silu: {  // e / (1 + e) below 0, e = exp(-|x|)
        std::string e = temp(DType::F64, f64_call("zy_d_exp", "-abs(" + x + ")")), num = fn == MathFn::Sigmoid ? "1.0LF" : x;
        std::string r = "(" + x + " < 0.0LF ? " + num + " * " + e + " : " + num + ") / (1.0LF + " + e + ")";
        return fn == MathFn::Sigmoid ? "(" + r + ")" : "(" + minus_inf + " ? -0.0LF : " + r + ")";
      }
      default: throw std::logic_error("GLSL lowering: not an activation");
    }
  }

  // A math function on doubles: GLSL's where it takes doubles, the helpers
  // of glsl_f64_math for the rest, compositions of them as in f32.
  std::string f64_math(MathFn fn, const std::vector<std::string>& args) {
    const DType t = DType::F64;
    const std::string& x = args[0];
    if (const char* helper = glsl_f64_function(fn)) {
      std::string joined = x;
      for (size_t i = 1; i < args.size(); ++i) joined += ", " + args[i];
      return temp(t, f64_call(helper, joined));
    }
    switch (fn) {
      case MathFn::Sqrt: return temp(t, "sqrt(" + x + ")");
      case MathFn::Rsqrt: return temp(t, "1.0LF / sqrt(" + x + ")");
      case MathFn::Abs: return temp(t, "abs(" + x + ")");
      case MathFn::Sign: return temp(t, "(isnan(" + x + ") ? " + x + " : sign(" + x + "))");
      case MathFn::Relu: return temp(t, "(isnan(" + x + ") ? " + x + " : " + x + " > 0.0LF ? " + x + " : 0.0LF)");
      case MathFn::Gelu:
      case MathFn::GeluTanh:
      case MathFn::Sigmoid:
      case MathFn::Silu: return temp(t, f64_activation(fn, x));
      case MathFn::Min: return temp(t, min_max(true, t, x, args[1]));
      case MathFn::Max: return temp(t, min_max(false, t, x, args[1]));
      case MathFn::Clamp: return temp(t, min_max(true, t, min_max(false, t, x, args[1]), args[2]));
      case MathFn::Fma: return temp(t, f64_call("zy_d_fma", x + ", " + args[1] + ", " + args[2]));  // GLSL need not fuse it
      default: throw std::logic_error(std::string("GLSL lowering: f64 ") + math_fn_name(fn));
    }
  }

  // ---------------------------------------------------------- memory and indices

  std::string load(const Buffer& b, const std::string& off, Span) override { return from_memory(b.type.dtype, b.name + "[" + off + "]"); }
  void store(const Buffer& b, const std::string& off, const std::string& ok, const std::string& v) override {
    line("if (" + ok + ") " + b.name + "[" + off + "] = " + (b.tensor ? to_memory(b.type.dtype, v) : v) + ";");
  }

  std::string index_value(const std::string& v) override { return "int64_t(" + v + ")"; }
  std::string index_literal(int64_t v) override { return std::to_string(v) + "l"; }
  std::string axis_extent(const std::string& v) override { return "int64_t(" + v + ")"; }
  std::string axis_index(const std::string& v) override { return temp(DType::I64, "int64_t(" + v + ")"); }
  std::string in_bounds(const std::string& i, const std::string& extent) override { return "uint64_t(" + i + ") < uint64_t(" + extent + ")"; }
  std::string offset_origin() override { return "0l"; }
  // Buffers hold fewer than 2^32 elements.
  std::string guarded_offset(const std::string& ok, const std::string& offset) override { return temp(DType::U32, ok + " ? uint(" + offset + ") : 0u"); }

  // ---------------------------------------------------------- loops

  static std::optional<int64_t> constant(const Expr& e) {
    auto i = e.as<cir::IntImm>();
    return i ? std::optional<int64_t>(i->value) : std::nullopt;
  }

  // (hi - lo - 1) / step + 1 unsigned: exact where hi - lo + step - 1 would overflow.
  std::string trip_count(const std::string& lo, const std::string& hi, const std::string& step, const std::string& runs) override {
    return temp(DType::I64, "(" + runs + " && " + hi + " > " + lo + ") ? int64_t((uint64_t(" + hi + " - " + lo + ") - 1ul) / uint64_t(" + step +
                                ") + 1ul) : 0l");
  }

  std::pair<std::string, std::string> loop_start(Stride how) override {
    switch (how) {
      case Stride::Grid:
        return {"(int64_t(gl_GlobalInvocationID.y) * int64_t(gl_NumWorkGroups.x) * int64_t(gl_WorkGroupSize.x) + int64_t(gl_GlobalInvocationID.x))",
                "(int64_t(gl_NumWorkGroups.x) * int64_t(gl_NumWorkGroups.y) * int64_t(gl_WorkGroupSize.x))"};
      case Stride::Block:
        return {"(int64_t(gl_WorkGroupID.y) * int64_t(gl_NumWorkGroups.x) + int64_t(gl_WorkGroupID.x))",
                "(int64_t(gl_NumWorkGroups.x) * int64_t(gl_NumWorkGroups.y))"};
      case Stride::Thread: return {"int64_t(gl_LocalInvocationID.x)", "int64_t(gl_WorkGroupSize.x)"};
      case Stride::Serial: break;
    }
    return {"0l", "1l"};
  }

  // A loop that may run more than kLoopLimit times runs as an outer loop
  // over chunks of kLoopLimit strides; loops a schedule marks unrolled are
  // unrolled whole.
  LoopHeader loop_header(const cir::For& f, Stride how, const std::string& trips, const std::string& first, const std::string& stride) override {
    std::optional<int64_t> lo_c = constant(f.lo), hi_c = constant(f.hi), step_c = constant(f.step);
    bool short_loop = how == Stride::Serial && lo_c && hi_c && step_c && *step_c > 0 && (*hi_c - *lo_c) / *step_c < kLoopLimit;
    std::string k = fresh("k");
    if (how == Stride::Serial && unrolled_whole(f)) {
      unrolled_ = true;
      line("[[unroll]] for (int64_t " + k + " = 0l; " + k + " < " + std::to_string(*constant_trips(f)) + "l; ++" + k + ") {");
      return {k, 1};
    }
    if (short_loop) {
      line("for (int64_t " + k + " = " + first + "; " + k + " < " + trips + "; " + k + " += " + stride + ") {");
      return {k, 1};
    }
    std::string k0 = fresh("k"), end = fresh("e"), st = fresh("s");
    line("int64_t " + st + " = " + stride + ";");
    line("for (int64_t " + k0 + " = " + first + "; " + k0 + " < " + trips + "; " + k0 + " += " + st + " * " + std::to_string(kLoopLimit) + "l) {");
    ++indent_;
    line("int64_t " + end + " = min(" + trips + ", " + k0 + " + " + st + " * " + std::to_string(kLoopLimit) + "l);");
    line("for (int64_t " + k + " = " + k0 + "; " + k + " < " + end + "; " + k + " += " + st + ") {");
    return {k, 2};
  }

  std::string loop_variable(const std::string& lo, const std::string& k, const std::string& step) override { return lo + " + " + k + " * " + step; }

  // ---------------------------------------------------------- arrays

  void shared_array(DType t, const std::string& name, uint64_t n) override { shared_ << "shared " << reg_type(t) << " " << name << "[" << n << "];\n"; }
  std::string local_array(DType t, const std::string& name, uint64_t n) override { return reg_type(t) + " " + name + "[" + std::to_string(n) + "];"; }
  void zero_fill(DType t, const std::string& name, uint64_t n) override {
    std::string i = fresh("z");
    line("for (int " + i + " = 0; " + i + " < " + std::to_string(n) + "; ++" + i + ") " + name + "[" + i + "] = " + zero(t) + ";");
  }

  // ---------------------------------------------------------- reductions and atomics

  // *element = update(*element) atomically: a compare-and-swap of its bits,
  // retried until no other invocation changed them in between, so every op
  // keeps the semantics of its plain form.
  template <class Update>
  void cas_update(DType t, const Buffer& b, const std::string& off, Update update) {
    if (b.bits.empty()) unsupported("atomics need a 4- or 8-byte element");
    std::string bt = bits_type(t), seen = fresh("seen"), prev = fresh("prev");
    auto value_of = [&](const std::string& bits) -> std::string {
      switch (t) {
        case DType::F32: return "uintBitsToFloat(" + bits + ")";
        case DType::F64: return "packDouble2x32(uvec2(uint(" + bits + " & 0xFFFFFFFFul), uint(" + bits + " >> 32)))";
        case DType::I32: return "int(" + bits + ")";
        case DType::I64: return "int64_t(" + bits + ")";
        default: return bits;
      }
    };
    auto bits_of = [&](const std::string& v) -> std::string {
      switch (t) {
        case DType::F32: return "floatBitsToUint(" + v + ")";
        case DType::F64: return "(uint64_t(unpackDouble2x32(" + v + ").y) << 32 | uint64_t(unpackDouble2x32(" + v + ").x))";
        case DType::I32: return "uint(" + v + ")";
        case DType::I64: return "uint64_t(" + v + ")";
        default: return v;
      }
    };
    line(bt + " " + seen + " = " + b.bits + "[" + off + "];");
    line("while (true) {");
    ++indent_;
    std::string cur = temp(t, value_of(seen));
    std::string next = update(cur);
    line(bt + " " + prev + " = atomicCompSwap(" + b.bits + "[" + off + "], " + seen + ", " + bits_of(next) + ");");
    line("if (" + prev + " == " + seen + ") break;");
    line(seen + " = " + prev + ";");
    --indent_;
    line("}");
  }

  // The same for a 1- or 2-byte element: a compare-and-swap of the 32-bit
  // word that holds it, the word's other bytes kept as they are.
  template <class Update>
  void narrow_cas_update(DType t, const Buffer& b, const std::string& off, Update update) {
    int bits = static_cast<int>(dtype_size(t)) * 8;
    std::string per_word = std::to_string(32 / bits), mask = bits == 8 ? "0xFFu" : "0xFFFFu";
    std::string word = fresh("word"), shift = fresh("shift"), seen = fresh("seen"), prev = fresh("prev");
    line("uint " + word + " = " + off + " / " + per_word + "u;");
    line("uint " + shift + " = (" + off + " % " + per_word + "u) * " + std::to_string(bits) + "u;");
    line("uint " + seen + " = " + b.bits + "[" + word + "];");
    line("while (true) {");
    ++indent_;
    std::string stored = "(" + seen + " >> " + shift + ") & " + mask;
    std::string cur = temp(t, from_memory(t, mem_type(t) + "(" + stored + ")"));
    std::string next = update(cur);
    std::string next_bits = "(uint(" + to_memory(t, next) + ") & " + mask + ")";
    line("uint " + prev + " = atomicCompSwap(" + b.bits + "[" + word + "], " + seen + ", (" + seen + " & ~(" + mask + " << " + shift + ")) | (" +
         next_bits + " << " + shift + "));");
    line("if (" + prev + " == " + seen + ") break;");
    line(seen + " = " + prev + ";");
    --indent_;
    line("}");
  }

  void yield_arg(const cir::Yield& y, const std::string& off, const std::string& v) override {
    // One invocation yields at a time here (a block's fold yields once).
    const Buffer& acc = buffer("%acc");
    const Buffer& best = buffer("%best");
    const Buffer& has = buffer("%has");
    DType vt = y.value->type.dtype;
    ReduceOp op = k_.reduce_op;
    std::string index = temp(DType::I64, "int64_t(" + expr(y.index) + ")");
    std::string seen = temp(DType::Bool, from_memory(DType::Bool, has.name + "[" + off + "]"));
    std::string cur = temp(vt, from_memory(vt, best.name + "[" + off + "]"));
    std::string better;
    if (is_float(vt)) {
      std::string cmp = op == ReduceOp::ArgMax ? v + " > " + cur : v + " < " + cur;
      better = "(!isnan(" + cur + ") && (isnan(" + v + ") || " + cmp + "))";
    } else {
      better = op == ReduceOp::ArgMax ? "(" + v + " > " + cur + ")" : "(" + v + " < " + cur + ")";
    }
    line("if (!" + seen + " || " + better + ") {");
    ++indent_;
    line(has.name + "[" + off + "] = uint8_t(1u);");
    line(best.name + "[" + off + "] = " + to_memory(vt, v) + ";");
    line(acc.name + "[" + off + "] = " + to_memory(acc.type.dtype, convert(index, DType::I64, acc.type.dtype)) + ";");
    --indent_;
    line("}");
  }

  void yield_fold(const cir::Yield& y, const std::string& off, const std::string& v) override {
    const Buffer& acc = buffer("%acc");
    DType at = acc.type.dtype;
    ReduceOp op = k_.reduce_op;
    std::string x = temp(at, convert(v, y.value->type.dtype, at));
    auto combine = [&](const std::string& cur) {
      if (std::optional<BinaryOp> b = reduce_binary_op(op)) return arith(*b, at, cur, x, y.span);
      std::string r = "(" + truthy(cur, at) + (op == ReduceOp::And ? " && " : " || ") + truthy(x, at) + ")";
      return convert(r, DType::Bool, at);
    };
    // Blocks of a GPU schedule, and grid-stride iterations yielding to an
    // element chosen without their variable, meet there at once.
    bool shared_target = block_depth_ > 0 || (!task_var_.empty() && !std::any_of(y.out_index.begin(), y.out_index.end(), [&](const Expr& e) {
      return cir::reads_any(e, {task_var_});
    }));
    if (shared_target) {
      cas_update(at, acc, off, combine);
    } else {
      std::string cur = temp(at, from_memory(at, acc.name + "[" + off + "]"));
      line(acc.name + "[" + off + "] = " + to_memory(at, combine(cur)) + ";");
    }
  }

  void atomic_update(const cir::Atomic& a, const Buffer& b, const std::string& off, const std::string& x) override {
    DType t = b.type.dtype;
    bool int_like = is_int(t) && dtype_size(t) >= 4;
    std::string target = b.name + "[" + off + "]";
    auto combine = [&](const std::string& cur) -> std::string {
      switch (a.op) {
        case cir::AtomicOp::Add: return arith(BinaryOp::Add, t, cur, x, a.span);
        case cir::AtomicOp::Min: return arith(BinaryOp::Min, t, cur, x, a.span);
        case cir::AtomicOp::Max: return arith(BinaryOp::Max, t, cur, x, a.span);
        case cir::AtomicOp::Exchange: return x;
        case cir::AtomicOp::And:
        case cir::AtomicOp::Or:
          return convert("(" + truthy(cur, t) + (a.op == cir::AtomicOp::And ? " && " : " || ") + truthy(x, t) + ")", DType::Bool, t);
      }
      return x;
    };
    if (dtype_size(t) < 4) {
      narrow_cas_update(t, b, off, combine);
    } else if (int_like && (a.op == cir::AtomicOp::Add || a.op == cir::AtomicOp::Min || a.op == cir::AtomicOp::Max || a.op == cir::AtomicOp::Exchange)) {
      const char* fn = a.op == cir::AtomicOp::Add ? "atomicAdd" : a.op == cir::AtomicOp::Min ? "atomicMin" : a.op == cir::AtomicOp::Max ? "atomicMax" : "atomicExchange";
      line(std::string(fn) + "(" + target + ", " + x + ");");
    } else {
      cas_update(t, b, off, combine);
    }
  }

  std::string block_count(const std::string& count) override { return temp(DType::I64, "int64_t(" + count + ")"); }
  std::string block_loop(const std::string& i, const std::string& count) override {
    return "for (int64_t " + i + " = int64_t(gl_LocalInvocationID.x); " + i + " < " + count + "; " + i + " += int64_t(gl_WorkGroupSize.x)) {";
  }
  std::string array_at(const std::string& array, const std::string& i) override { return array + "[uint(" + i + ")]"; }
  std::string halving_loop(const std::string& s, int half) override {
    return "for (uint " + s + " = " + std::to_string(half) + "u; " + s + " > 0u; " + s + " >>= 1) {";
  }
  // Its own array beside the subgroups' scratch.
  std::string tree_scratch(DType t, const std::string& scratch) override {
    shared_ << "shared " << reg_type(t) << " " << scratch << "_all[" << threads_ << "];\n";
    return scratch + "_all";
  }
  bool has_shuffles() const override { return t_.subgroup_shuffles; }
  std::string subgroup_halving_loop(const std::string& o) override {
    return "for (uint " + o + " = gl_SubgroupSize / 2u; " + o + " >= 1u; " + o + " /= 2u) {";
  }
  std::string subgroup_lane() override { return "gl_SubgroupInvocationID"; }
  std::string subgroup_index() override { return "gl_SubgroupID"; }
  std::string subgroup_loop(const std::string& w) override { return "for (uint " + w + " = 0u; " + w + " < gl_NumSubgroups; ++" + w + ")"; }

  // A 32-bit word of every lane's value, exchanged with the lane whose index
  // differs in `offset`'s bit; 64-bit values move as two halves, narrower
  // ones widened.
  std::string shuffle_xor(const std::string& v, DType t, const std::string& offset) override {
    auto sh = [&](const std::string& w) { return "subgroupShuffleXor(" + w + ", uint(" + offset + "))"; };
    switch (t) {
      case DType::F16: case DType::BF16: case DType::F32: case DType::I8: case DType::I16: case DType::I32: case DType::U8:
      case DType::U16: case DType::U32:
        return sh(v);
      case DType::Bool: return "(" + sh("(" + v + " ? 1u : 0u)") + " != 0u)";
      case DType::F64: return "packDouble2x32(uvec2(" + sh("unpackDouble2x32(" + v + ").x") + ", " + sh("unpackDouble2x32(" + v + ").y") + "))";
      default: {
        std::string u = "uint64_t(" + v + ")";
        std::string r = "(uint64_t(" + sh("uint(" + u + " & 0xFFFFFFFFul)") + ") | (uint64_t(" + sh("uint(" + u + " >> 32)") + ") << 32))";
        return t == DType::I64 ? "int64_t(" + r + ")" : r;
      }
    }
  }

  const GpuTarget& t_;
  bool precise_;
  std::string decls_;
  bool unrolled_ = false;  // a loop is marked [[unroll]]
  std::set<std::string> f64_;  // helpers of glsl_f64_math the shader calls
};

}  // namespace

GpuTarget generic_vulkan_target() {
  GpuTarget t;
  t.api = GpuApi::Vulkan;
  t.arch = "generic";
  t.subgroup_size = 32;
  t.max_threads_per_block = 1024;
  t.max_blocks = 65535;
  t.multiprocessors = 16;
  t.shared_memory_static = t.shared_memory_max = 32 << 10;
  t.private_memory_per_thread = 64 << 10;
  t.vector_bytes = 16;
  t.index_bits = 64;
  t.subgroup_shuffles = true;
  t.atomics.float_add = false;
  t.atomics.system_scope = false;
  return t;
}

std::optional<std::string> glsl_unsupported_reason(const cir::Kernel& k, const GpuTarget& target, int block_threads) {
  return Support(k, target, block_threads).run();
}

GlslKernel emit_glsl(const cir::Kernel& k, const GpuTarget& target, int block_threads) {
  if (std::optional<std::string> why = glsl_unsupported_reason(k, target, block_threads))
    throw std::logic_error("GLSL lowering: kernel " + k.name + " uses " + *why);
  return Glsl(cir::spell_out_special_literals(k), target, block_threads).run();
}

}  // namespace zyntax::codegen
