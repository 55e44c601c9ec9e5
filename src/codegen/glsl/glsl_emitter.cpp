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
#include "codegen/shader/c_style_printer.hpp"
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
std::string glsl_reg_type(DType t) {
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
std::string glsl_mem_type(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: case DType::U16: return "uint16_t";
    case DType::I16: return "int16_t";
    case DType::Bool: case DType::U8: return "uint8_t";
    case DType::I8: return "int8_t";
    default: return glsl_reg_type(t);
  }
}



std::string hex(uint64_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v;
  return o.str();
}

// ------------------------------------------------------------ loop iterations per invocation

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
  void visit(const cir::Allocate* op) override {
    dtypes_[op->name] = op->type.dtype;
    need(op->type.dtype);
    if (op->space == cir::MemorySpace::Fragment) fail("tensor-core fragments");
    int64_t bytes = cir::allocation_bytes(*op);
    if (bytes < 0) fail("arrays of non-constant size");
    count_shared(op, bytes, t_.shared_memory_max, "GLSL");
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

class Glsl : public CStylePrinter {
 public:
  // Other kernels' float values are `precise`: drivers then keep IEEE
  // semantics (Mesa otherwise folds x * 0 to 0 and a / (b * -0.0) to garbage
  // once it knows an operand, and fuses a * b + c), as the reference does.
  Glsl(const cir::Kernel& k, const GpuTarget& t, int threads)
      : CStylePrinter(k, threads, t.subgroup_shuffles), t_(t), precise_(!computes_products(k)) {}

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
    each_reduce_buffer([&](const char* n, DType t) { storage(n, t, cir::Type::tensor(t, k_.output().type.shape), false, dtype_size(t) >= 4); });
    out.reduce_bindings = binding - out.tensor_bindings;
    out.status_binding = binding;
    d << "layout(std430, set = 0, binding = " << binding << ") buffer Status { uint status[]; };\n";
    // Scalars and dimensions: push constants, each in 4 or 8 bytes.
    std::ostringstream pc;
    auto as_of = [](DType t) {
      switch (t) {
        case DType::F16: case DType::BF16: return DType::F32;
        case DType::I8: case DType::I16: return DType::I32;
        case DType::U8: case DType::U16: case DType::Bool: return DType::U32;
        default: return t;
      }
    };
    uint32_t offset = scalar_block(out.push_constants, as_of, [&](const ShaderScalar& f, const std::string& name) {
      pc << "  layout(offset = " << f.offset << ") " << type_name(f.as) << " " << name << ";\n";
    });
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
  std::string helpers() {
    std::ostringstream h;
    h << "void zy_fail(uint id) { atomicCompSwap(status[0], 0u, id); }\n";
    if (helpers_.count("f16"))
      h << "float zy_f16(float x) { return unpackHalf2x16(packHalf2x16(vec2(x, 0.0))).x; }\n";
    if (helpers_.count("bf16")) h << bf16_helper();
    if (helpers_.count("minmax_float")) h << min_max_helper("float", "floatBitsToUint", "uintBitsToFloat", "0.0");
    if (helpers_.count("minmax_double")) h << min_max_helper("double", "doubleBitsToUint64", "uint64BitsToDouble", "0.0");
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
    if (helpers_.count("ipow")) h << ipow_helper();
    return h.str();
  }


  // ---------------------------------------------------------- spellings

  const char* language() const override { return "GLSL"; }
  std::string reg_type(DType t) const override { return glsl_reg_type(t); }
  std::string mem_type(DType t) const override { return glsl_mem_type(t); }
  // The unsigned integer type of a value's bits (atomics work on these).
  std::string bits_type(DType t) const override { return dtype_size(t) == 8 ? "uint64_t" : "uint"; }
  std::string bits_to_float(const std::string& b) override { return "uintBitsToFloat(" + b + ")"; }
  std::string float_to_bits(const std::string& f) override { return "floatBitsToUint(" + f + ")"; }
  std::string half_to_float(const std::string& b) override { return "unpackHalf2x16(uint(" + b + ")).x"; }
  std::string float_to_half(const std::string& f) override { return "uint16_t(packHalf2x16(vec2(" + f + ", 0.0)))"; }
  std::string sign_extend(const std::string& v, int bits) override { return "bitfieldExtract(" + v + ", 0, " + std::to_string(bits) + ")"; }
  std::string compare_swap(const std::string& type, const std::string& prev, const std::string& target, const std::string& seen,
                           const std::string& next) override {
    return type + " " + prev + " = atomicCompSwap(" + target + ", " + seen + ", " + next + ");";
  }
  std::string fetch_op(const char* op, const Buffer& b, const std::string& off, const std::string& x) override {
    std::string fn = op == std::string("add") ? "atomicAdd" : op == std::string("min") ? "atomicMin" : op == std::string("max") ? "atomicMax" : "atomicExchange";
    return fn + "(" + b.name + "[" + off + "], " + x + ");";
  }
  std::string shuffle(const std::string& w, const std::string& offset) override { return "subgroupShuffleXor(" + w + ", uint(" + offset + "))"; }
  std::string shuffle_double(const std::string& v, const std::string& offset) override {
    return "packDouble2x32(uvec2(" + shuffle("unpackDouble2x32(" + v + ").x", offset) + ", " + shuffle("unpackDouble2x32(" + v + ").y", offset) + "))";
  }
  std::string double_from_bits(const std::string& bits) override {
    return "packDouble2x32(uvec2(uint(" + bits + " & 0xFFFFFFFFul), uint(" + bits + " >> 32)))";
  }
  std::string double_to_bits(const std::string& v) override {
    return "(uint64_t(unpackDouble2x32(" + v + ").y) << 32 | uint64_t(unpackDouble2x32(" + v + ").x))";
  }
  std::string inout_bool(const std::string& name) override { return "inout bool " + name; }
  std::string round_even() override { return "roundEven"; }
  std::string one(DType t) override { return t == DType::F64 ? "1.0lf" : "1.0"; }
  std::string unroll_prefix() override { return "[[unroll]] "; }
  // lavapipe stops a shader loop after 65,535 iterations.
  int64_t loop_limit() const override { return kLoopLimit; }

  // The declared type of a value: `precise` floats where the kernel keeps IEEE semantics.
  std::string value_type(DType t) { return (precise_ && is_float(t) ? "precise " : "") + reg_type(t); }
  std::string declaration(DType t, const std::string& name, const std::string& value, Declare how) override {
    bool plain = how == Declare::PlainValue || how == Declare::PlainVariable;
    return (plain ? reg_type(t) : value_type(t)) + " " + name + " = " + value + ";";
  }
  std::string first_invocation() override { return "gl_GlobalInvocationID.x == 0u && gl_GlobalInvocationID.y == 0u"; }
  std::string barrier() override { return "memoryBarrierShared(); memoryBarrierBuffer(); barrier();"; }
  std::string shared_barrier() override { return "memoryBarrierShared(); barrier();"; }
  std::string local_id() override { return "gl_LocalInvocationID.x"; }
  std::string workgroup_size() override { return "gl_WorkGroupSize.x"; }
  std::string global_id(char axis) override { return std::string("gl_GlobalInvocationID.") + axis; }
  std::string group_count(char axis) override { return std::string("gl_NumWorkGroups.") + axis; }
  std::string group_id(char axis) override { return std::string("gl_WorkGroupID.") + axis; }
  std::string subgroup_size() override { return "gl_SubgroupSize"; }
  std::string subgroup_count() override { return "gl_NumSubgroups"; }
  std::string subgroup_lane() override { return "gl_SubgroupInvocationID"; }
  std::string subgroup_index() override { return "gl_SubgroupID"; }
  std::string shared_array(DType t, const std::string& name, uint64_t n) override {
    shared_ << "shared " << reg_type(t) << " " << name << "[" << n << "];\n";
    return "";
  }

  // ---------------------------------------------------------- constants, conversions, math

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
    return integer_convert(v, from, to);
  }

  std::string float_mod(DType t, const std::string& a, const std::string& c) override {
    if (t == DType::F64) return f64_call(kGlslF64Fmod, a + ", " + c);
    return round_to(t, library(kShaderF32Fmod, a + ", " + c));
  }
  std::string float_pow(DType t, const std::string& a, const std::string& c) override {
    if (t == DType::F64) return f64_call(kGlslF64Pow, a + ", " + c);
    if (t_.f64) return round_to(t, "float(" + f64_call(kGlslF64Pow, "double(" + a + "), double(" + c + ")") + ")");  // as math functions
    return round_to(t, library(kShaderF32Pow, a + ", " + c));
  }

  std::string math(const cir::Math& m) override {
    DType t = m.type.dtype;
    std::vector<std::string> args;
    for (const Expr& a : m.args) args.push_back(expr(a));
    const std::string& x = args[0];
    if (!is_float(t)) return integer_math(m, args);
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
    if (std::optional<std::string> builtin = builtin_float_math(m.fn, t, args)) return *builtin;
    switch (m.fn) {
      case MathFn::Gelu:
      case MathFn::GeluTanh:
      case MathFn::Sigmoid:
      case MathFn::Silu:
        // In doubles (without them, codegen/shader/f32_math's): rounded once, as the reference.
        return temp(t, round_to(t, "float(" + f64_activation(m.fn, temp(DType::F64, "double(" + x + ")")) + ")"));
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

  const GpuTarget& t_;
  bool precise_;
  std::string decls_;
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
