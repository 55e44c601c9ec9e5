#include "codegen/wgsl/wgsl_emitter.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "cir/passes/spell_out_special_literals.hpp"
#include "cir/printer.hpp"
#include "cir/reads.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/shader/f32_math.hpp"
#include "codegen/shader/host_scalar_expressions.hpp"
#include "codegen/shader/shader_printer.hpp"
#include "cir/visitor.hpp"

namespace zyntax::codegen {

namespace {

using cir::Expr;

// Values live in registers as these types: narrow integers in 32 bits and
// wrapped back, CIR's i64 index values as i32 (checked).
std::string reg_type(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: case DType::F32: case DType::F64: return "f32";  // f64 values: in f32 (WGSL has no f64)
    case DType::Bool: return "bool";
    case DType::U8: case DType::U16: case DType::U32: return "u32";
    default: return "i32";
  }
}

std::string hex(uint32_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v << "u";
  return o.str();
}

// Tensors WGSL can hold: 64-bit integers only as i64 (two words, the value
// in the low one, checked to fit in 32 bits where read).
bool storable(DType t) { return t != DType::F64 && t != DType::U64; }

// Words an element takes, or a fraction of one (4 / bytes elements a word).
int element_bytes(DType t) { return static_cast<int>(dtype_size(t)); }

// ------------------------------------------------------------ what can be written

// The dtype a reduce kernel accumulates in: the output's (f32 sums in f32,
// integer sums wrapping in their width, as the reference's cast of its
// wider sum does); argmin/argmax the index itself.
DType reduce_accumulator(const cir::Kernel& k) { return k.output().type.dtype; }

class Support : public ShaderSupport {
 public:
  explicit Support(const cir::Kernel& k) : k_(k) {}

  std::optional<std::string> run() {
    for (const cir::Param& p : k_.params) {
      if (p.role == cir::ParamRole::Scalar) {
        if (p.type.dtype == DType::U64) fail("u64 scalars");  // f64 scalars travel as f32, as f64 values compute
      } else if (!storable(p.type.dtype)) {
        bool wide = dtype_size(p.type.dtype) == 8;
        fail(std::string(dtype_name(p.type.dtype)) + (wide ? " tensors (WGSL has no 64-bit types)" : " tensors (not written yet)"));
      }
    }
    if (k_.kind == cir::KernelKind::Reduce) {
      DType acc = reduce_accumulator(k_);
      if (!storable(acc)) fail(std::string("reductions into ") + dtype_name(acc));
      // An i64 accumulator holds 32-bit values: min/max's identities do not fit.
      if (acc == DType::I64 && (k_.reduce_op == ReduceOp::Min || k_.reduce_op == ReduceOp::Max))
        fail("min and max reductions into i64 (their identities need 64 bits)");
    }
    include(k_.body);
    return why();
  }

 private:
  // f64 values (the schedules' f32 sums) are computed in f32.
  void value(DType t) {
    if (t == DType::U64) fail("u64 values (WGSL has no 64-bit types)");
  }

  using ShaderSupport::visit;
  void visit(const cir::IntImm* op) override {
    // i64's extremes are the schedules' sentinels ("no index yet"): i32's
    // serve, as every index here is below 2^31.
    if (op->type.dtype == DType::I64 && (op->value == INT64_MAX || op->value == INT64_MIN)) return;
    if (op->value < INT32_MIN || op->value > static_cast<int64_t>(UINT32_MAX) ||
        (op->value > INT32_MAX && op->type.dtype != DType::U32))
      fail("an integer constant past 32 bits");
  }
  void visit(const cir::Math* op) override {
    value(op->type.dtype);
    IRVisitor::visit(op);
  }
  void visit(const cir::Cast* op) override {
    value(op->type.dtype);
    // f32 holds integers exactly only to 2^24 (i32(f64(2^31 - 4)) would come
    // back as 2^31 - 1): not computed in f32 as other f64 values are.
    if (op->type.dtype == DType::F64 && !is_float(op->value->type.dtype)) fail("integers converted to f64 (WGSL has no f64)");
    IRVisitor::visit(op);
  }
  void visit(const cir::Decl* op) override {
    if (!op->type.is_scalar()) fail("tile variables");
    value(op->type.dtype);
    IRVisitor::visit(op);
  }
  void visit(const cir::BlockReduce* op) override {
    auto it = dtypes_of_arrays_.find(op->array);
    if (it != dtypes_of_arrays_.end() && it->second == DType::U64) fail("block reductions of u64 values");
    IRVisitor::visit(op);
  }
  void visit(const cir::Allocate* op) override {
    if (op->type.dtype == DType::U64) fail("u64 arrays");
    dtypes_of_arrays_[op->name] = op->type.dtype;
    IRVisitor::visit(op);
  }

  const cir::Kernel& k_;
  std::map<std::string, DType> dtypes_of_arrays_;
};

// ------------------------------------------------------------ the writer

class Wgsl : public ShaderPrinter {
 public:
  Wgsl(const cir::Kernel& k, int threads, const HostScalarExpressions& host, const cir::Kernel& original)
      : ShaderPrinter(k, threads), host_(host), original_(original) {}

  WgslKernel run() {
    WgslKernel out;
    out.workgroup_size = threads_;
    bind_parameters(out);
    body();
    std::ostringstream s;
    s << decls_ << shared_.str() << helpers() << "\n@compute @workgroup_size(" << threads_ << ")\n"
      << "fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(workgroup_id) wid: vec3u,\n"
      << "        @builtin(local_invocation_id) lid: vec3u) {\n";
    // Every buffer the runtime binds stays in the pipeline's layout, read
    // by the kernel or not (an input a kernel takes only its size from, the
    // uniforms of sizes it does not read).
    for (const std::string& b : bindings_) s << "  _ = &" << b << ";\n";
    s << body_.str() << "}\n";
    out.source = s.str();
    out.sites = std::move(sites_);
    return out;
  }

 private:
  // ---------------------------------------------------------- declarations

  void bind_parameters(WgslKernel& out) {
    int binding = 0;
    std::ostringstream d;
    for (const cir::Param& p : k_.params) {
      if (p.role == cir::ParamRole::Scalar) continue;
      std::string name = "b" + std::to_string(binding);
      bool output = p.role == cir::ParamRole::Output;
      d << "@group(0) @binding(" << binding << ") var<storage, " << (output ? "read_write> " : "read> ") << name << ": array<"
        << (output ? "atomic<u32>" : "u32") << ">;\n";
      bufs_[p.name] = {name, p.type, true, output, false, ""};
      bindings_.push_back(name);
      ++binding;
    }
    out.tensor_bindings = binding;
    if (k_.kind == cir::KernelKind::Reduce) {
      // The output is the accumulator (for argmin/argmax: the index).
      const cir::Param& o = k_.output();
      bufs_["%acc"] = bufs_.at(o.name);
      out.reduce = true;
      out.arg = is_arg_reduce(k_.reduce_op);
      if (out.arg) {
        out.best_dtype = reduce_buffers(k_).best_dtype;
        for (auto [n, t, at] : {std::tuple{"%best", out.best_dtype, &out.best_binding}, std::tuple{"%has", DType::U32, &out.has_binding}}) {
          std::string name = "b" + std::to_string(binding);
          d << "@group(0) @binding(" << binding << ") var<storage, read_write> " << name << ": array<atomic<u32>>;\n";
          bufs_[n] = {name, cir::Type::tensor(t, o.type.shape), true, true, false, ""};
          bindings_.push_back(name);
          *at = binding++;
        }
      } else {
        out.identity = reduce_identity(k_.reduce_op, o.type.dtype);
      }
    }
    out.status_binding = binding;
    d << "@group(0) @binding(" << binding++ << ") var<storage, read_write> status: array<atomic<u32>>;\n";
    bindings_.push_back("status");
    std::ostringstream fields;
    uint32_t offset = 0;
    auto uniform = [&](WgslUniform::Source src, size_t index, DType t, const std::string& name) {
      DType as = is_float(t) ? DType::F32 : (t == DType::Bool || !is_signed_int(t)) && t != DType::I64 ? DType::U32 : DType::I32;
      out.uniforms.push_back({src, index, as, offset});
      fields << "  " << shader_identifier(name) << ": " << reg_type(as) << ",\n";
      offset += 4;
      std::string v = "args." + shader_identifier(name);
      if (t == DType::Bool) v = "(" + v + " != 0u)";
      values_[name] = {v, t};
    };
    for (size_t i = 0; i < k_.params.size(); ++i)
      if (k_.params[i].role == cir::ParamRole::Scalar) uniform(WgslUniform::Source::Scalar, i, k_.params[i].type.dtype, k_.params[i].name);
    for (size_t i = 0; i < k_.dims.size(); ++i) uniform(WgslUniform::Source::Dim, i, DType::I64, k_.dims[i].name);
    for (size_t i = 0; i < host_.names.size(); ++i) {
      uniform(WgslUniform::Source::Host, i, DType::F64, host_.names[i]);
      out.host_expressions.push_back(host_scalar_expression_json(host_.expressions[i], original_));
    }
    if (offset > 0) {
      out.uniform_binding = binding;
      out.uniform_bytes = (offset + 15) / 16 * 16;
      d << "struct Args {\n" << fields.str() << "}\n@group(0) @binding(" << binding << ") var<uniform> args: Args;\n";
      bindings_.push_back("args");
    }
    decls_ = d.str();
  }

  // Functions the body calls (written out only where it does).
  std::string helpers() const {
    std::ostringstream h;
    // Any failure marks the run failed; which one is the host's to find.
    h << "fn zy_fail(id: u32) { atomicMax(&status[0], id); }\n";
    if (helpers_.count("bits")) h << "fn zy_f32(bits: u32) -> f32 { return bitcast<f32>(bits); }\n";
    // f32 to f16's bits in integer arithmetic (WGSL's pack2x16float leaves
    // values past f16's range undefined): ties to even, overflow to infinity.
    if (helpers_.count("f16"))
      h << "fn zy_f16_bits(f: f32) -> u32 {\n"
           "  let x = bitcast<u32>(f);\n"
           "  let sign = (x >> 16u) & 0x8000u;\n"
           "  let a = x & 0x7fffffffu;\n"
           "  if (a > 0x7f800000u) { return sign | 0x7e00u; }\n"
           "  if (a >= 0x477ff000u) { return sign | 0x7c00u; }\n"
           "  if (a >= 0x38800000u) { return sign | ((a - 0x38000000u + 0xfffu + ((a >> 13u) & 1u)) >> 13u); }\n"
           "  return sign | u32(round(bitcast<f32>(a) * 16777216.0));\n"  // subnormal: units of 2^-24, round() ties to even
           "}\n";
    if (helpers_.count("bf16"))
      h << "fn zy_bf16_bits(f: f32) -> u32 {\n"
           "  let x = bitcast<u32>(f);\n"
           "  if ((x & 0x7fffffffu) > 0x7f800000u) { return (x >> 16u) | 0x40u; }\n"
           "  return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;\n"
           "}\n";
    if (helpers_.count("minmax"))
      // IEEE 754-2019 minimum and maximum: NaN propagates and -0 < +0 (WGSL's min and max return either zero).
      h << "fn zy_min(a: f32, b: f32) -> f32 {\n"
           "  if (a != a || b != b) { return a + b; }\n"
           "  if (a == 0.0 && b == 0.0) { return bitcast<f32>(bitcast<u32>(a) | bitcast<u32>(b)); }\n"
           "  return min(a, b);\n"
           "}\n"
           "fn zy_max(a: f32, b: f32) -> f32 {\n"
           "  if (a != a || b != b) { return a + b; }\n"
           "  if (a == 0.0 && b == 0.0) { return bitcast<f32>(bitcast<u32>(a) & bitcast<u32>(b)); }\n"
           "  return max(a, b);\n"
           "}\n";
    if (helpers_.count("ipow"))  // b^e in 32-bit wrapping arithmetic (the result is at most 32 bits wide)
      h << "fn zy_ipow(b: u32, e: u32) -> u32 {\n"
           "  var x = b;\n"
           "  var r = 1u;\n"
           "  var n = e;\n"
           "  for (var i = 0; i < 32 && n != 0u; i++) {\n"
           "    if ((n & 1u) != 0u) { r *= x; }\n"
           "    x *= x;\n"
           "    n >>= 1u;\n"
           "  }\n"
           "  return r;\n"
           "}\n";
    h << shader_f32_library(library_, ShaderLanguage::Wgsl);
    return h.str();
  }

  // ---------------------------------------------------------- the dialect

  const char* language() const override { return "WGSL"; }
  std::string type_name(DType t) const override { return reg_type(t); }
  // Names numbered: one CIR name may be declared in several scopes.
  std::string local_name(const std::string& cir_name) override { return shader_identifier(cir_name) + "_" + std::to_string(temp_++); }
  std::string declaration(DType t, const std::string& name, const std::string& value, Declare how) override {
    bool variable = how == Declare::Variable || how == Declare::PlainVariable;
    return (variable ? "var " : "let ") + name + ": " + reg_type(t) + " = " + value + ";";
  }
  std::string guarded(const std::string& cond, const std::string& statement) override { return "if (" + cond + ") { " + statement + " }"; }
  std::string first_invocation() override { return "gid.x == 0u && gid.y == 0u"; }
  std::string barrier() override { return "storageBarrier(); workgroupBarrier();"; }
  std::string shared_barrier() override { return "workgroupBarrier();"; }
  std::string local_id() override { return "lid.x"; }
  std::string workgroup_size() override { return std::to_string(threads_) + "u"; }

  // ---------------------------------------------------------- types and constants

  // An f32 value rounded to f16 or bf16 (to nearest, ties to even; past
  // the range to infinity), as the reference rounds after every operation.
  std::string rounded_f16(const std::string& v) override { return "unpack2x16float(zy_f16_bits(" + v + ")).x"; }
  std::string rounded_bf16(const std::string& v) override { return "bitcast<f32>(zy_bf16_bits(" + v + ") << 16u)"; }

  // An integer result of a narrow dtype wrapped back into its range.
  std::string wrap(DType t, const std::string& v) {
    switch (t) {
      case DType::I8: return "extractBits(" + v + ", 0u, 8u)";
      case DType::I16: return "extractBits(" + v + ", 0u, 16u)";
      case DType::U8: return "((" + v + ") & 0xFFu)";
      case DType::U16: return "((" + v + ") & 0xFFFFu)";
      default: return v;
    }
  }

  std::string float_constant(double v, DType) override {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (std::fabs(f) >= 0x1p-60f && std::fabs(f) <= 0x1p60f) return "bitcast<f32>(" + hex(bits) + ")";
    // WGSL's constant expressions hold no infinity or NaN (a division by a
    // constant zero or a tiny constant, as spelled-out forms may make once a
    // loop of one trip is written out, is an error; between 2^-60 and 2^60 a
    // product or quotient of two cannot overflow), and translators to other
    // shading languages drop the sign of a constant -0: through a function.
    helpers_.insert("bits");
    return "zy_f32(" + hex(bits) + ")";
  }

  std::string int_constant(int64_t v, DType t) override {
    switch (t) {
      case DType::Bool: return v ? "true" : "false";
      case DType::U8: case DType::U16: case DType::U32: return std::to_string(static_cast<uint32_t>(v)) + "u";
      default: {
        if (t == DType::I64) v = std::clamp<int64_t>(v, INT32_MIN, INT32_MAX);  // i64's extremes: sentinels (see Support)
        int32_t w = static_cast<int32_t>(v);
        return w == INT32_MIN ? "i32(-2147483647 - 1)" : "i32(" + std::to_string(w) + ")";
      }
    }
  }

  std::string zero(DType t) override { return is_float(t) ? "0.0" : int_constant(0, t); }

  std::string convert(const std::string& v, DType from, DType to, Span span) override {
    if (from == to) return v;
    std::string rt = reg_type(to);
    if (to == DType::Bool) return truthy(v, from);
    if (from == DType::Bool) return "select(" + rt + "(0), " + rt + "(1), " + v + ")";
    if (is_float(from)) {
      if (is_float(to)) return round_to(to, v);
      // Saturating, NaN to 0, as LLVM's fptosi.sat/fptoui.sat; an i64
      // index past i32 fails instead.
      std::string lo, hi;
      switch (to) {
        case DType::I8: lo = "-128.0"; hi = "127.0"; break;
        case DType::I16: lo = "-32768.0"; hi = "32767.0"; break;
        case DType::U8: lo = "0.0"; hi = "255.0"; break;
        case DType::U16: lo = "0.0"; hi = "65535.0"; break;
        case DType::I64:
          check("(" + v + " != " + v + " || (" + v + " > -2147483904.0 && " + v + " < 2147483648.0))", span,
                "an integer past 32 bits (WebGPU computes indices in 32 bits)");
          [[fallthrough]];
        case DType::I32:  // WGSL's conversion saturates at the largest f32 below 2^31: past it, the type's maximum
          return "select(select(i32(" + v + "), 2147483647, " + v + " >= 2147483648.0), 0, " + v + " != " + v + ")";
        case DType::U32:
          return "select(select(u32(" + v + "), 4294967295u, " + v + " >= 4294967296.0), 0u, " + v + " != " + v + ")";
        default:
          return "select(" + rt + "(" + v + "), " + zero(to) + ", " + v + " != " + v + ")";
      }
      return "select(" + rt + "(clamp(" + v + ", " + lo + ", " + hi + ")), " + zero(to) + ", " + v + " != " + v + ")";
    }
    if (is_float(to)) return round_to(to, "f32(" + v + ")");
    // Integers: the value wrapped into the target's width; into i64 (i32
    // here) a u32 past i32 fails.
    if (to == DType::I64) {
      if (from == DType::U32) check("(" + v + " < 0x80000000u)", span, "an integer past 32 bits (WebGPU computes indices in 32 bits)");
      return "bitcast<i32>(" + v + ")";
    }
    std::string word = is_signed_int(from) ? "bitcast<u32>(" + v + ")" : v;
    switch (to) {
      case DType::I32: return "bitcast<i32>(" + word + ")";
      case DType::U32: return word;
      case DType::I8: case DType::I16: return wrap(to, "bitcast<i32>(" + word + ")");
      default: return wrap(to, word);
    }
  }

  std::string select(const std::string& c, const std::string& x, const std::string& y) override { return "select(" + y + ", " + x + ", " + c + ")"; }

  std::string negate(DType t, const std::string& a, Span span) override {
    if (is_float(t)) return temp(t, "-(" + a + ")");  // `a` may be a negative literal: no `--`
    if (t == DType::I64) return arith(BinaryOp::Sub, t, "i32(0)", a, span);
    if (!is_signed_int(t)) return temp(t, wrap(t, "(0u - " + a + ")"));
    return temp(t, wrap(t, "bitcast<i32>(0u - bitcast<u32>(" + a + "))"));
  }

  std::string bool_to_int(const std::string& v) override { return "select(0, 1, " + v + ")"; }

  std::string float_min_max(bool is_min, DType, const std::string& a, const std::string& c) override {
    helpers_.insert("minmax");
    return std::string(is_min ? "zy_min(" : "zy_max(") + a + ", " + c + ")";
  }

  // ---------------------------------------------------------- memory

  // A register value from the bits of its element (in the low bits of `raw`).
  std::string from_bits(DType t, const std::string& raw) {
    switch (t) {
      case DType::F32: return "bitcast<f32>(" + raw + ")";
      case DType::F16: return "unpack2x16float(" + raw + ").x";
      case DType::BF16: return "bitcast<f32>(" + raw + " << 16u)";
      case DType::I32: case DType::I64: return "bitcast<i32>(" + raw + ")";
      case DType::Bool: return "(" + raw + " != 0u)";
      case DType::I8: case DType::I16: return "extractBits(bitcast<i32>(" + raw + "), 0u, " + std::to_string(element_bytes(t) * 8) + "u)";
      default: return raw;
    }
  }

  // The bits of a register value as its element stores them (i64: the low word).
  std::string to_bits(DType t, const std::string& v) {
    if (t == DType::Bool) return "select(0u, 1u, " + v + ")";
    if (t == DType::F16 || t == DType::BF16) {
      helpers_.insert(t == DType::F16 ? "f16" : "bf16");
      return std::string(t == DType::F16 ? "zy_f16_bits(" : "zy_bf16_bits(") + v + ")";
    }
    if (t == DType::U8 || t == DType::U16 || t == DType::U32) return v;
    return "bitcast<u32>(" + v + ")";
  }

  // Where an element lives: its word, and for 1- and 2-byte elements the
  // bit offset and width within it.
  struct Slot {
    std::string word, shift, width;
  };
  Slot slot(DType t, const std::string& off) {
    int size = element_bytes(t);
    if (size == 8) return {temp(DType::U32, "2u * " + off), "", ""};
    if (size == 4) return {off, "", ""};
    std::string per = std::to_string(4 / size);
    return {temp(DType::U32, off + " / " + per + "u"), temp(DType::U32, "(" + off + " % " + per + "u) * " + std::to_string(size * 8) + "u"),
            std::to_string(size * 8) + "u"};
  }

  std::string word_at(const Buffer& b, const std::string& w) { return b.output ? "atomicLoad(&" + b.name + "[" + w + "])" : b.name + "[" + w + "]"; }

  // The element at flat index `off` (u32) of a tensor, as a register value.
  // An i64 read from an input must fit in 32 bits (its high word the sign
  // of the low one); outputs keep only the low word (the host writes the
  // high ones after the run).
  std::string load(const Buffer& b, const std::string& off, Span span) override {
    DType t = b.type.dtype;
    Slot at = slot(t, off);
    std::string raw = temp(DType::U32, word_at(b, at.word));
    if (!at.width.empty()) raw = temp(DType::U32, "extractBits(" + raw + ", " + at.shift + ", " + at.width + ")");
    if (t == DType::I64 && !b.output)
      check("(" + word_at(b, at.word + " + 1u") + " == bitcast<u32>(bitcast<i32>(" + raw + ") >> 31u))", span,
            "an i64 value past 32 bits (WebGPU computes in 32 bits)");
    return from_bits(t, raw);
  }

  // *element = update(*element), atomically where `atomic` (a
  // compare-and-swap of its word, retried until no other invocation changed
  // it in between), else a plain read and write; 1- and 2-byte elements
  // always by compare-and-swap (the rest of their word is other elements').
  template <class Update>
  void update(const Buffer& b, const std::string& off, bool atomic, Update next_of) {
    DType t = b.type.dtype;
    Slot at = slot(t, off);
    std::string target = "&" + b.name + "[" + at.word + "]";
    if (!atomic && at.width.empty()) {
      std::string cur = temp(t, from_bits(t, "atomicLoad(" + target + ")"));
      line("atomicStore(" + target + ", " + to_bits(t, next_of(cur)) + ");");
      return;
    }
    line("loop {");
    ++indent_;
    std::string seen = temp(DType::U32, "atomicLoad(" + target + ")");
    std::string cur = temp(t, from_bits(t, at.width.empty() ? seen : "extractBits(" + seen + ", " + at.shift + ", " + at.width + ")"));
    std::string bits = to_bits(t, next_of(cur));
    std::string word = at.width.empty() ? bits : "insertBits(" + seen + ", " + bits + ", " + at.shift + ", " + at.width + ")";
    line("if (atomicCompareExchangeWeak(" + target + ", " + seen + ", " + word + ").exchanged) { break; }");
    --indent_;
    line("}");
  }

  // Stores a register value into the element at flat index `off` of the output.
  void store_element(const Buffer& b, const std::string& off, const std::string& v) {
    DType t = b.type.dtype;
    if (element_bytes(t) >= 4) {
      Slot at = slot(t, off);
      line("atomicStore(&" + b.name + "[" + at.word + "], " + to_bits(t, v) + ");");
      return;
    }
    update(b, off, true, [&](const std::string&) { return v; });
  }

  const Buffer& buffer(const std::string& name) {
    auto it = bufs_.find(name);
    if (it == bufs_.end()) throw std::logic_error("WGSL lowering: unknown buffer " + name);
    return it->second;
  }

  // Row-major offset of an element, each index checked against its axis;
  void store(const Buffer& b, const std::string& off, const std::string& ok, const std::string& v) override {
    line("if (" + ok + ") {");
    ++indent_;
    if (b.tensor) store_element(b, off, v);
    else line(b.name + "[" + off + "] = " + v + ";");
    --indent_;
    line("}");
  }

  // Index values are i32; offsets u32 (below the element count, which fits in 32 bits).
  std::string index_value(const std::string& v) override { return v; }
  std::string index_literal(int64_t v) override { return std::to_string(v); }
  std::string axis_extent(const std::string& v) override { return temp(DType::U32, "bitcast<u32>(" + v + ")"); }
  std::string axis_index(const std::string& v) override { return temp(DType::U32, "bitcast<u32>(" + v + ")"); }
  std::string in_bounds(const std::string& i, const std::string& extent) override { return i + " < " + extent; }
  std::string offset_origin() override { return "0u"; }
  std::string guarded_offset(const std::string& ok, const std::string& offset) override { return temp(DType::U32, "select(0u, " + offset + ", " + ok + ")"); }

  // ---------------------------------------------------------- loops (trips in u32)

  std::string trip_count(const std::string& lo, const std::string& hi, const std::string& step, const std::string& runs) override {
    std::string span = "bitcast<u32>(" + hi + ") - bitcast<u32>(" + lo + ")";  // hi - lo, exact below 2^32
    return temp(DType::U32, "select(0u, (" + span + " - 1u) / bitcast<u32>(" + step + ") + 1u, " + runs + " && " + hi + " > " + lo + ")");
  }
  std::pair<std::string, std::string> loop_start(Stride how) override {
    std::string threads = std::to_string(threads_) + "u";
    switch (how) {
      case Stride::Grid: return {"gid.y * nwg.x * " + threads + " + gid.x", "nwg.x * nwg.y * " + threads};
      case Stride::Block: return {"wid.y * nwg.x + wid.x", "nwg.x * nwg.y"};
      case Stride::Thread: return {"lid.x", threads};
      case Stride::Serial: break;
    }
    return {"0u", "1u"};
  }
  LoopHeader loop_header(const cir::For&, Stride, const std::string& trips, const std::string& first, const std::string& stride) override {
    std::string k = fresh("k");
    line("for (var " + k + " = " + first + "; " + k + " < " + trips + "; " + k + " += " + stride + ") {");
    return {k, 1};
  }
  std::string loop_variable(const std::string& lo, const std::string& k, const std::string& step) override {
    return "bitcast<i32>(bitcast<u32>(" + lo + ") + " + k + " * bitcast<u32>(" + step + "))";
  }

  // ---------------------------------------------------------- arrays (WGSL's variables start at zero)

  std::string shared_array(DType t, const std::string& name, uint64_t n) override {
    shared_ << "var<workgroup> " << name << ": array<" << reg_type(t) << ", " << n << ">;\n";
    return "";
  }
  std::string local_array(DType t, const std::string& name, uint64_t n) override {
    return "var " + name + ": array<" + reg_type(t) + ", " + std::to_string(n) + ">;";
  }

  // A temporary with `a op c` in dtype t.
  std::string arith(BinaryOp op, DType t, const std::string& a, const std::string& c, Span span) override {
    if (t == DType::Bool) {  // as the reference: 0/1 arithmetic, then "not zero"
      switch (op) {
        case BinaryOp::Add: case BinaryOp::Max: return temp(t, "(" + a + " || " + c + ")");
        case BinaryOp::Mul: case BinaryOp::Min: return temp(t, "(" + a + " && " + c + ")");
        case BinaryOp::Sub: return temp(t, "(" + a + " != " + c + ")");
        default: {
          std::string r = arith(op, DType::I32, "select(0, 1, " + a + ")", "select(0, 1, " + c + ")", span);
          return temp(t, "(" + r + " != 0)");
        }
      }
    }
    if (t == DType::F16 || t == DType::BF16) return temp(t, round_to(t, arith(op, DType::F32, a, c, span)));
    if (is_float(t)) {
      switch (op) {
        case BinaryOp::Add: return temp(t, a + " + " + c);
        case BinaryOp::Sub: return temp(t, a + " - " + c);
        case BinaryOp::Mul: return temp(t, a + " * " + c);
        case BinaryOp::Div: return temp(t, a + " / " + c);
        case BinaryOp::Mod: return temp(t, library(kShaderF32Fmod, a + ", " + c));
        case BinaryOp::Pow: return temp(t, library(kShaderF32Pow, a + ", " + c));
        case BinaryOp::Min: return temp(t, min_max(true, t, a, c));
        case BinaryOp::Max: return temp(t, min_max(false, t, a, c));
        default: throw std::logic_error("WGSL lowering: bad float operator");
      }
    }
    bool is_signed = is_signed_int(t);
    // Wrapping arithmetic on the words; an index value (i64 in CIR) that
    // leaves 32 bits fails.
    auto word = [&](const std::string& x) { return is_signed ? "bitcast<u32>(" + x + ")" : x; };
    auto back = [&](const std::string& w) { return is_signed ? wrap(t, "bitcast<i32>(" + w + ")") : wrap(t, w); };
    const char* overflow = "an integer past 32 bits (WebGPU computes indices in 32 bits)";
    switch (op) {
      case BinaryOp::Add: {
        std::string r = temp(t, back(word(a) + " + " + word(c)));
        if (t == DType::I64) check("((" + a + " ^ " + r + ") & (" + c + " ^ " + r + ")) >= 0", span, overflow);
        return r;
      }
      case BinaryOp::Sub: {
        std::string r = temp(t, back(word(a) + " - " + word(c)));
        if (t == DType::I64) check("((" + a + " ^ " + c + ") & (" + a + " ^ " + r + ")) >= 0", span, overflow);
        return r;
      }
      case BinaryOp::Mul: {
        std::string r = temp(t, back(word(a) + " * " + word(c)));
        if (t == DType::I64)
          check("(" + a + " == 0 || (" + r + " / " + a + " == " + c + " && !(" + a + " == -1 && " + c + " == i32(-2147483647 - 1))))", span,
                overflow);
        return r;
      }
      case BinaryOp::Div:
      case BinaryOp::Mod: {
        check("(" + c + " != " + zero(t) + ")", span, op == BinaryOp::Div ? "integer division by zero" : "integer remainder by zero");
        // Truncating; a divisor of 0 gives 0 (the check has failed); x / -1 wraps.
        std::string d = temp(t, "select(" + c + ", " + int_constant(1, t) + ", " + c + " == " + zero(t) + ")");
        std::string q;
        if (is_signed) {
          std::string minus_one = "(" + d + " == " + int_constant(-1, t) + ")";
          q = temp(t, "select(" + a + " / " + d + ", " + back("0u - " + word(a)) + ", " + minus_one + ")");
          if (t == DType::I64 && op == BinaryOp::Div) check("!(" + minus_one + " && " + a + " == i32(-2147483647 - 1))", span, overflow);
        } else {
          q = temp(t, a + " / " + d);
        }
        if (op == BinaryOp::Div) return q;
        return temp(t, back(word(a) + " - " + word(q) + " * " + word(d)));
      }
      case BinaryOp::Pow: {
        helpers_.insert("ipow");
        if (is_signed) {
          // A negative exponent: 1 and -1 have powers, others fail.
          check("(" + c + " >= " + zero(t) + " || " + a + " == " + int_constant(1, t) + " || " + a + " == " + int_constant(-1, t) + ")", span,
                "integer power with a negative exponent");
          std::string e = temp(DType::U32, "select(bitcast<u32>(" + c + "), bitcast<u32>(" + c + ") & 1u, " + c + " < " + zero(t) + ")");
          std::string r = temp(t, back("zy_ipow(" + word(a) + ", " + e + ")"));
          if (t == DType::I64) check("(" + c + " < 0 || abs(f32(" + a + ")) <= 1.0 || pow(abs(f32(" + a + ")), f32(" + c + ")) < 2147483000.0)", span, overflow);
          return r;
        }
        return temp(t, back("zy_ipow(" + a + ", " + c + ")"));
      }
      case BinaryOp::Min: return temp(t, min_max(true, t, a, c));
      case BinaryOp::Max: return temp(t, min_max(false, t, a, c));
      default: throw std::logic_error("WGSL lowering: bad integer operator");
    }
  }

  std::string math(const cir::Math& m) override {
    DType t = m.type.dtype;
    std::vector<std::string> args;
    for (const Expr& a : m.args) args.push_back(expr(a));
    const std::string& x = args[0];
    if (!is_float(t)) {
      bool s = is_signed_int(t);
      switch (m.fn) {
        case MathFn::Abs: return s ? temp(t, wrap(t, "bitcast<i32>(select(bitcast<u32>(" + x + "), 0u - bitcast<u32>(" + x + "), " + x + " < 0))")) : x;
        case MathFn::Sign: return s ? temp(t, "sign(" + x + ")") : temp(t, "select(0u, 1u, " + x + " != 0u)");
        case MathFn::Relu: return s ? temp(t, "max(" + x + ", 0)") : x;
        case MathFn::Min: return temp(t, "min(" + x + ", " + args[1] + ")");
        case MathFn::Max: return temp(t, "max(" + x + ", " + args[1] + ")");
        case MathFn::Clamp: return temp(t, "min(max(" + x + ", " + args[1] + "), " + args[2] + ")");
        default: throw std::logic_error(std::string("WGSL lowering: ") + math_fn_name(m.fn) + " on integers");
      }
    }
    if (t == DType::F16 || t == DType::BF16) return temp(t, round_to(t, math_f32(m.fn, args)));  // computed in f32, rounded once
    return math_f32(m.fn, args);
  }

  // A call of a helper of codegen/shader/f32_math.
  std::string library(const char* fn, const std::string& args) {
    library_.insert(fn);
    return std::string(fn) + "(" + args + ")";
  }

  std::string math_f32(MathFn fn, const std::vector<std::string>& args) {
    const DType t = DType::F32;
    const std::string& x = args[0];
    // NaN in, NaN out: some adapters' built-ins give a number (atan(NaN)
    // is 0 on OpenGL ES through Mesa).
    auto call = [&](const char* name) { return temp(t, "select(" + std::string(name) + "(" + x + "), " + x + ", " + x + " != " + x + ")"); };
    // WGSL's transcendental functions promise little (sin and cos to 2^-11
    // inside [-pi, pi], nothing outside), and fma may round twice: ours.
    if (const char* ours = shader_f32_function(fn)) {
      std::string joined;
      for (const std::string& a : args) joined += (joined.empty() ? "" : ", ") + a;
      return temp(t, library(ours, joined));
    }
    switch (fn) {
      case MathFn::Sqrt: return call("sqrt");
      case MathFn::Rsqrt: return temp(t, "1.0 / sqrt(" + x + ")");
      case MathFn::Abs: return call("abs");
      case MathFn::Floor: return call("floor");
      case MathFn::Ceil: return call("ceil");
      case MathFn::Round: return call("round");  // half to even
      case MathFn::Trunc: return call("trunc");
      case MathFn::Sign: return temp(t, "select(sign(" + x + "), " + x + ", " + x + " != " + x + ")");
      case MathFn::Relu: return temp(t, "select(select(0.0, " + x + ", " + x + " > 0.0), " + x + ", " + x + " != " + x + ")");
      case MathFn::Min: return temp(t, min_max(true, t, x, args[1]));
      case MathFn::Max: return temp(t, min_max(false, t, x, args[1]));
      case MathFn::Clamp: return temp(t, min_max(true, t, min_max(false, t, x, args[1]), args[2]));
      default: break;
    }
    throw std::logic_error("WGSL lowering: unknown math function");
  }

  std::string arith_value(BinaryOp op, DType t, const std::string& a, const std::string& c, Span span) override { return arith(op, t, a, c, span); }

  // ---------------------------------------------------------- reductions and atomics

  void yield_arg(const cir::Yield& y, const std::string& off, const std::string& v) override {
    // One invocation yields at a time here (the plan's fold yields once).
    const Buffer& acc = buffer("%acc");
    const Buffer& best = buffer("%best");
    const Buffer& has = buffer("%has");
    DType vt = y.value->type.dtype;
    ReduceOp op = k_.reduce_op;
    std::string index = expr(y.index);
    std::string seen = temp(DType::Bool, "atomicLoad(&" + has.name + "[" + off + "]) != 0u");
    std::string cur = temp(vt, load(best, off, y.span));
    std::string better;
    if (is_float(vt)) {
      std::string cmp = op == ReduceOp::ArgMax ? v + " > " + cur : v + " < " + cur;
      better = "(!(" + cur + " != " + cur + ") && (" + v + " != " + v + " || " + cmp + "))";
    } else {
      better = op == ReduceOp::ArgMax ? "(" + v + " > " + cur + ")" : "(" + v + " < " + cur + ")";
    }
    line("if (!" + seen + " || " + better + ") {");
    ++indent_;
    line("atomicStore(&" + has.name + "[" + off + "], 1u);");
    store_element(best, off, v);
    store_element(acc, off, temp(acc.type.dtype, convert(index, y.index->type.dtype, acc.type.dtype, y.span)));
    --indent_;
    line("}");
  }

  void yield_fold(const cir::Yield& y, const std::string& off, const std::string& v) override {
    const Buffer& acc = buffer("%acc");
    DType at = acc.type.dtype;
    ReduceOp op = k_.reduce_op;
    std::string x = temp(at, convert(v, y.value->type.dtype, at, y.span));
    // Grid-stride iterations yielding to an element chosen without their
    // variable meet there at once.
    bool shared_target = !task_var_.empty() && !std::any_of(y.out_index.begin(), y.out_index.end(), [&](const Expr& e) {
      return cir::reads_any(e, {task_var_});
    });
    update(acc, off, shared_target, [&](const std::string& cur) {
      if (std::optional<BinaryOp> b = reduce_binary_op(op)) return arith(*b, at, cur, x, y.span);
      std::string r = temp(DType::Bool, "(" + truthy(cur, at) + (op == ReduceOp::And ? " && " : " || ") + truthy(x, at) + ")");
      return temp(at, convert(r, DType::Bool, at, y.span));
    });
  }

  void atomic_update(const cir::Atomic& a, const Buffer& b, const std::string& off, const std::string& x) override {
    DType t = b.type.dtype;
    if (!b.tensor) {  // a local array: one invocation's own
      std::string target = b.name + "[" + off + "]";
      line(target + " = " + atomic_combine(a, t, target, x) + ";");
    } else {
      update(b, off, true, [&](const std::string& cur) { return atomic_combine(a, t, cur, x); });
    }
  }

  std::string logical(DType t, const std::string& both, Span span) override {
    return temp(t, convert(temp(DType::Bool, both), DType::Bool, t, span));
  }

  std::string block_count(const std::string& count) override { return temp(DType::U32, "bitcast<u32>(" + count + ")"); }
  std::string block_loop(const std::string& i, const std::string& count) override {
    return "for (var " + i + " = lid.x; " + i + " < " + count + "; " + i + " += " + std::to_string(threads_) + "u) {";
  }
  std::string array_at(const std::string& array, const std::string& i) override { return array + "[" + i + "]"; }
  std::string halving_loop(const std::string& s, int half) override {
    return "for (var " + s + " = " + std::to_string(half) + "u; " + s + " > 0u; " + s + " >>= 1u) {";
  }
  std::string tree_scratch(DType, const std::string& scratch) override { return scratch; }
  bool has_shuffles() const override { return false; }  // WebGPU's subgroups are an extension

  std::vector<std::string> bindings_;  // b0, b1, ..., status, args
  const HostScalarExpressions& host_;
  const cir::Kernel& original_;  // the params the host expressions name
  std::string decls_;
};


}  // namespace

GpuTarget webgpu_target() {
  GpuTarget t;
  t.api = GpuApi::WebGpu;
  t.arch = "webgpu";
  t.subgroup_size = 32;  // for planning only: no subgroup operations are used
  t.max_threads_per_block = 128;  // compatibility mode's limit (WebGPU's core promises 256)
  t.max_blocks = 65535;
  t.multiprocessors = 16;
  t.shared_memory_static = t.shared_memory_max = 16352;  // compatibility mode's (core: 16 KiB)
  t.private_memory_per_thread = 16 << 10;
  t.max_storage_buffers = 8;  // maxStorageBuffersPerShaderStage, unless the page asks its adapter for more
  t.vector_bytes = 16;
  t.index_bits = 32;
  t.f64 = t.f16 = t.bf16 = t.i64 = false;
  t.subgroup_shuffles = false;
  t.async_copy = false;
  t.atomics.float_add = false;
  t.atomics.system_scope = false;
  t.matrix_units = {};
  return t;
}

std::optional<std::string> wgsl_unsupported_reason(const cir::Kernel& k, const GpuTarget&, int) { return Support(k).run(); }

WgslKernel emit_wgsl(const cir::Kernel& k, const GpuTarget& target, int block_threads) {
  if (std::optional<std::string> why = wgsl_unsupported_reason(k, target, block_threads))
    throw std::logic_error("WGSL lowering: kernel " + k.name + " uses " + *why);
  // Scalar expressions first: the host computes them exactly, and the
  // names that stand for them are nothing a driver could fold.
  HostScalarExpressions host = hoist_host_scalar_expressions(k);
  return Wgsl(cir::spell_out_special_literals(host.kernel), std::max(block_threads, 1), host, k).run();
}

}  // namespace zyntax::codegen

