#include "codegen/msl/msl_emitter.hpp"

#include <cstring>
#include <sstream>
#include <stdexcept>

#include "cir/passes/spell_out_special_literals.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/shader/c_style_printer.hpp"
#include "codegen/shader/f32_math.hpp"

namespace zyntax::codegen {

namespace {

// What Metal cannot hold; found while writing (no 64-bit atomics).
struct NotWritable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Metal has no f64: its values are computed in f32, its tensors are not written.
DType stored(DType t) { return t == DType::F64 ? DType::F32 : t; }

std::string hex(uint32_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v << "u";
  return o.str();
}

// ------------------------------------------------------------ what can be written

class Support : public ShaderSupport {
 public:
  Support(const cir::Kernel& k, const GpuTarget& t) : k_(k), t_(t) {}

  std::optional<std::string> run() {
    for (const cir::Param& p : k_.params)
      if (p.role != cir::ParamRole::Scalar && p.type.dtype == DType::F64) fail("f64 tensors (Metal has no f64)");
    include(k_.body);
    return why();
  }

 private:
  using ShaderSupport::visit;
  void visit(const cir::Decl* op) override {
    if (!op->type.is_scalar()) fail("tile variables");
    IRVisitor::visit(op);
  }
  void visit(const cir::Allocate* op) override {
    if (op->space == cir::MemorySpace::Fragment) fail("tensor-core fragments");
    int64_t bytes = cir::allocation_bytes(*op);
    if (bytes < 0) fail("arrays of non-constant size");
    count_shared(op, bytes / static_cast<int64_t>(dtype_size(op->type.dtype)) * static_cast<int64_t>(dtype_size(stored(op->type.dtype))),
                 t_.shared_memory_max, "MSL");
    IRVisitor::visit(op);
  }

  const cir::Kernel& k_;
  const GpuTarget& t_;
};

// ------------------------------------------------------------ the writer

class Msl : public CStylePrinter {
 public:
  Msl(const cir::Kernel& k, const GpuTarget& t, int threads) : CStylePrinter(k, threads, t.subgroup_shuffles), t_(t) {}

  MslKernel run() {
    MslKernel out;
    out.threads_per_group = threads_;
    bind_parameters(out);
    body();
    std::ostringstream s;
    s << "#include <metal_stdlib>\nusing namespace metal;\n" << args_struct_ << helpers() << "\nkernel void zy_main(\n" << params_
      << "    uint3 gid [[thread_position_in_grid]], uint3 lid [[thread_position_in_threadgroup]],\n"
      << "    uint3 wid [[threadgroup_position_in_grid]], uint3 nwg [[threadgroups_per_grid]], uint3 tpg [[threads_per_threadgroup]],\n"
      << "    uint simd_lane [[thread_index_in_simdgroup]], uint simd_id [[simdgroup_index_in_threadgroup]],\n"
      << "    uint simd_size [[threads_per_simdgroup]], uint nsimd [[simdgroups_per_threadgroup]]) {\n"
      << views_.str() << shared_.str() << body_.str() << "}\n";
    out.source = s.str();
    out.threadgroup_memory_bytes = std::max<uint32_t>(16, (threadgroup_bytes_ + 15) / 16 * 16);
    out.helper_calls = helper_calls_;
    out.sites = std::move(sites_);
    return out;
  }

 private:
  // ---------------------------------------------------------- declarations

  void bind_parameters(MslKernel& out) {
    int index = 0;
    std::ostringstream p;
    // A device buffer at the next index; where `words`, a view of it as
    // atomic words (an element's bits, or the words around narrower ones).
    auto buffer = [&](const std::string& key, DType t, const cir::Type& type, bool input, bool words) {
      std::string name = "b" + std::to_string(index);
      p << "    device " << (input ? "const " : "") << mem_type(t) << "* " << name << " [[buffer(" << index << ")]],\n";
      Buffer b{name, cir::Type::tensor(t, type.shape), true, !input, false, ""};
      if (words && dtype_size(t) <= 4) {
        b.bits = name + "w";
        views_ << "  device " << atomic_type(t) << "* " << b.bits << " = (device " << atomic_type(t) << "*)" << name << ";\n";
      }
      bufs_[key] = b;
      ++index;
    };
    for (const cir::Param& prm : k_.params)
      if (prm.role != cir::ParamRole::Scalar)
        buffer(prm.name, prm.type.dtype, prm.type, prm.role == cir::ParamRole::Input, prm.role == cir::ParamRole::Output);
    out.tensor_buffers = index;
    each_reduce_buffer([&](const char* n, DType t) {
      out.reduce_buffer_dtypes.push_back(stored(t));
      buffer(n, stored(t), k_.output().type, false, true);
    });
    out.reduce_buffers = index - out.tensor_buffers;
    out.status_buffer = index;
    p << "    device atomic_uint* status [[buffer(" << index++ << ")]],\n";
    // Scalars and sizes: one struct (setBytes).
    std::ostringstream fields;
    auto as_of = [](DType t) {
      return is_float(t) ? DType::F32 : (t == DType::I64 || t == DType::U64) ? t : is_signed_int(t) ? DType::I32 : DType::U32;
    };
    uint32_t offset = scalar_block(out.arguments, as_of, [&](const ShaderScalar& f, const std::string& name) {
      fields << "  " << reg_type(f.as) << " " << name << ";\n";
    });
    if (offset > 0) {
      out.arguments_buffer = index;
      out.argument_bytes = (offset + 15) / 16 * 16;
      args_struct_ = "struct ZyArgs {\n" + fields.str() + "};\n";
      p << "    constant ZyArgs& args [[buffer(" << index++ << ")]],\n";
    }
    p << "    threadgroup uchar* zy_tg [[threadgroup(0)]],\n";
    params_ = p.str();
  }

  std::string atomic_type(DType t) const { return t == DType::I32 ? "atomic_int" : "atomic_uint"; }

  // Functions the body calls (written out only where it does).
  std::string helpers() {
    std::ostringstream h;
    // The first failure wins (the compare-and-swap is weak: retried until it
    // holds or another id is there).
    h << "void zy_fail(device atomic_uint* status, uint id) {\n"
         "  uint seen = 0u;\n"
         "  while (!atomic_compare_exchange_weak_explicit(status, &seen, id, memory_order_relaxed, memory_order_relaxed) && seen == 0u) {}\n"
         "}\n";
    if (helpers_.count("f16")) h << "float zy_f16(float x) { return float(half(x)); }\n";
    if (helpers_.count("bf16")) h << bf16_helper();
    if (helpers_.count("minmax_float")) h << min_max_helper("float", "as_type<uint>", "as_type<float>", "0.0f");
    h << shader_f32_library(library_, ShaderLanguage::Msl);
    if (helpers_.count("ipow")) h << ipow_helper();
    return h.str();
  }

  // ---------------------------------------------------------- spellings

  const char* language() const override { return "MSL"; }
  std::string reg_type(DType t) const override {
    switch (t) {
      case DType::F16: case DType::BF16: case DType::F32: case DType::F64: return "float";
      case DType::Bool: return "bool";
      case DType::I8: case DType::I16: case DType::I32: return "int";
      case DType::U8: case DType::U16: case DType::U32: return "uint";
      case DType::I64: return "long";
      case DType::U64: return "ulong";
    }
    return "int";
  }
  std::string mem_type(DType t) const override {
    switch (t) {
      case DType::F16: case DType::BF16: case DType::U16: return "ushort";
      case DType::I16: return "short";
      case DType::Bool: case DType::U8: return "uchar";
      case DType::I8: return "char";
      default: return reg_type(t);
    }
  }
  // Metal's atomics hold 32 bits.
  std::string bits_type(DType t) const override {
    if (dtype_size(t) == 8) throw NotWritable("atomic updates of 64-bit elements (Metal's atomics hold 32 bits)");
    return t == DType::I32 ? "int" : "uint";
  }
  std::string bits_to_float(const std::string& b) override { return "as_type<float>(" + b + ")"; }
  std::string float_to_bits(const std::string& f) override { return "as_type<uint>(" + f + ")"; }
  std::string half_to_float(const std::string& b) override { return "float(as_type<half>(ushort(" + b + ")))"; }
  std::string float_to_half(const std::string& f) override { return "as_type<ushort>(half(" + f + "))"; }
  std::string sign_extend(const std::string& v, int bits) override { return std::string(bits == 8 ? "int(char(" : "int(short(") + v + "))"; }
  std::string atomic_read(const std::string& target) override { return "atomic_load_explicit(&" + target + ", memory_order_relaxed)"; }
  // A weak exchange: retried while it fails spuriously (the word still as seen).
  std::string compare_swap(const std::string& type, const std::string& prev, const std::string& target, const std::string& seen,
                           const std::string& next) override {
    return type + " " + prev + " = " + seen + "; while (!atomic_compare_exchange_weak_explicit(&" + target + ", &" + prev + ", " + next +
           ", memory_order_relaxed, memory_order_relaxed) && " + prev + " == " + seen + ") {}";
  }
  std::string fetch_op(const char* op, const Buffer& b, const std::string& off, const std::string& x) override {
    if (b.bits.empty()) throw NotWritable("atomic updates of arrays without an atomic view");
    std::string fn = op == std::string("exchange") ? "atomic_exchange_explicit" : std::string("atomic_fetch_") + op + "_explicit";
    return fn + "(&" + b.bits + "[" + off + "], " + x + ", memory_order_relaxed);";
  }
  void atomic_update(const cir::Atomic& a, const Buffer& b, const std::string& off, const std::string& x) override {
    if (!b.tensor && b.bits.empty()) {  // an invocation's own array
      std::string target = b.name + "[" + off + "]";
      line(target + " = " + atomic_combine(a, b.type.dtype, temp(b.type.dtype, target), x) + ";");
      return;
    }
    if (dtype_size(b.type.dtype) == 8) throw NotWritable("atomic updates of 64-bit elements (Metal's atomics hold 32 bits)");
    CStylePrinter::atomic_update(a, b, off, x);
  }
  std::string shuffle(const std::string& w, const std::string& offset) override { return "simd_shuffle_xor(" + w + ", ushort(" + offset + "))"; }
  std::string inout_bool(const std::string& name) override { return "thread bool& " + name; }
  std::string round_even() override { return "rint"; }
  std::string one(DType) override { return "1.0f"; }
  std::string unroll_prefix() override { return ""; }

  std::string declaration(DType t, const std::string& name, const std::string& value, Declare) override {
    return reg_type(t) + " " + name + " = " + value + ";";
  }
  std::string fail_call(int id) override { return "zy_fail(status, " + std::to_string(id) + "u);"; }
  std::string first_invocation() override { return "gid.x == 0u && gid.y == 0u"; }
  std::string barrier() override { return "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);"; }
  std::string shared_barrier() override { return "threadgroup_barrier(mem_flags::mem_threadgroup);"; }
  std::string local_id() override { return "lid.x"; }
  std::string workgroup_size() override { return "tpg.x"; }
  std::string global_id(char axis) override { return std::string("gid.") + axis; }
  std::string group_count(char axis) override { return std::string("nwg.") + axis; }
  std::string group_id(char axis) override { return std::string("wid.") + axis; }
  std::string subgroup_size() override { return "simd_size"; }
  std::string subgroup_count() override { return "nsimd"; }
  std::string subgroup_lane() override { return "simd_lane"; }
  std::string subgroup_index() override { return "simd_id"; }

  // Workgroup arrays: places in the one threadgroup buffer, 16-byte
  // aligned; 4-byte elements also as atomic words.
  std::string shared_array(DType t, const std::string& name, uint64_t n) override {
    std::string type = reg_type(t);
    uint32_t at = (threadgroup_bytes_ + 15) / 16 * 16;
    shared_ << "  threadgroup " << type << "* " << name << " = (threadgroup " << type << "*)(zy_tg + " << at << ");\n";
    uint64_t size = type == "long" || type == "ulong" ? 8 : type == "bool" ? 1 : 4;
    threadgroup_bytes_ = at + static_cast<uint32_t>(n * size);
    if (size != 4) return "";
    std::string words = name + "w", atomic = t == DType::I32 ? "atomic_int" : "atomic_uint";
    shared_ << "  threadgroup " << atomic << "* " << words << " = (threadgroup " << atomic << "*)(zy_tg + " << at << ");\n";
    return words;
  }

  // ---------------------------------------------------------- constants, conversions, integers

  std::string float_constant(double v, DType) override {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return "as_type<float>(" + hex(bits) + ")";
  }
  std::string zero(DType t) override { return is_float(t) ? "0.0f" : int_constant(0, t); }

  // Saturating, NaN to 0, as LLVM's fptosi.sat/fptoui.sat: compared with
  // the first f32 past each end (exact powers of two), so no conversion
  // leaves its range.
  std::string saturate(const std::string& v, DType to) {
    struct Range {
      const char *below, *at_least, *lowest, *highest;
    };
    Range r;
    switch (to) {
      case DType::I8: r = {"-128.0f", "128.0f", "-128", "127"}; break;
      case DType::I16: r = {"-32768.0f", "32768.0f", "-32768", "32767"}; break;
      case DType::I32: r = {"-2147483648.0f", "2147483648.0f", "int(0x80000000u)", "2147483647"}; break;
      case DType::I64: r = {"-9223372036854775808.0f", "9223372036854775808.0f", "long(0x8000000000000000ul)", "9223372036854775807l"}; break;
      case DType::U8: r = {"0.0f", "256.0f", "0u", "255u"}; break;
      case DType::U16: r = {"0.0f", "65536.0f", "0u", "65535u"}; break;
      case DType::U32: r = {"0.0f", "4294967296.0f", "0u", "4294967295u"}; break;
      default: r = {"0.0f", "18446744073709551616.0f", "0ul", "18446744073709551615ul"}; break;
    }
    std::string rt = reg_type(to);
    return "(isnan(" + v + ") ? " + zero(to) + " : " + v + " >= " + r.at_least + " ? " + rt + "(" + r.highest + ") : " + v + " <= " + r.below +
           " ? " + rt + "(" + r.lowest + ") : " + rt + "(" + v + "))";
  }

  std::string convert(const std::string& v, DType from, DType to, Span) override {
    if (from == to) return v;
    std::string rt = reg_type(to);
    if (to == DType::Bool) return truthy(v, from);
    if (is_float(from)) return is_float(to) ? round_to(to, "float(" + v + ")") : saturate(v, to);
    if (from == DType::Bool) return "(" + v + " ? " + rt + "(1) : " + rt + "(0))";
    if (is_float(to)) return round_to(to, "float(" + v + ")");  // one rounding from the integer
    return integer_convert(v, from, to);
  }

  // Signed integers wrap through their unsigned words (a signed overflow
  // would be undefined in MSL, as in C++).
  std::string unsigned_word(DType t, const std::string& v) { return (t == DType::I64 ? "ulong(" : "uint(") + v + ")"; }
  std::string wrapping(BinaryOp op, DType t, const std::string& a, const std::string& c) override {
    if (!is_signed_int(t)) return CStylePrinter::wrapping(op, t, a, c);
    return wrap(t, reg_type(t) + "(" + unsigned_word(t, a) + binary_symbol(op) + unsigned_word(t, c) + ")");
  }
  std::string wrapping_negation(DType t, const std::string& a) override {
    if (!is_signed_int(t)) return wrap(t, "-(" + a + ")");
    return wrap(t, reg_type(t) + "(" + std::string(t == DType::I64 ? "0ul" : "0u") + " - " + unsigned_word(t, a) + ")");
  }
  std::string remainder(DType t, const std::string& a, const std::string& q, const std::string& d) override {
    if (!is_signed_int(t)) return CStylePrinter::remainder(t, a, q, d);
    return wrap(t, reg_type(t) + "(" + unsigned_word(t, a) + " - " + unsigned_word(t, q) + " * " + unsigned_word(t, d) + ")");
  }

  // ---------------------------------------------------------- math: ours in f32 (Metal's fast functions promise little)

  std::string float_mod(DType t, const std::string& a, const std::string& c) override { return round_to(t, library(kShaderF32Fmod, a + ", " + c)); }
  std::string float_pow(DType t, const std::string& a, const std::string& c) override { return round_to(t, library(kShaderF32Pow, a + ", " + c)); }

  std::string math(const cir::Math& m) override {
    DType t = m.type.dtype;
    std::vector<std::string> args;
    for (const cir::Expr& a : m.args) args.push_back(expr(a));
    if (!is_float(t)) return integer_math(m, args);
    if (const char* ours = shader_f32_function(m.fn)) {
      std::string joined;
      for (const std::string& a : args) joined += (joined.empty() ? "" : ", ") + a;
      return temp(t, round_to(t, library(ours, joined)));
    }
    if (std::optional<std::string> builtin = builtin_float_math(m.fn, t, args)) return *builtin;
    unsupported(std::string("math function ") + math_fn_name(m.fn));
  }

  const GpuTarget& t_;
  std::string params_, args_struct_;
  std::ostringstream views_;  // atomic views of the buffers
  uint32_t threadgroup_bytes_ = 0;
};

}  // namespace

GpuTarget apple_gpu_target() {
  GpuTarget t;
  t.api = GpuApi::Metal;
  t.arch = "apple7";
  t.subgroup_size = 32;
  t.max_threads_per_block = 1024;
  t.max_blocks = 65535;
  t.multiprocessors = 8;
  t.shared_memory_static = t.shared_memory_max = 32 << 10;
  t.private_memory_per_thread = 16 << 10;
  t.max_storage_buffers = 31;
  t.vector_bytes = 16;
  t.index_bits = 64;
  t.f64 = false;
  t.bf16 = false;
  t.subgroup_shuffles = true;
  t.async_copy = false;
  t.atomics.float_add = false;
  t.atomics.system_scope = false;
  t.matrix_units = {};
  return t;
}

std::optional<std::string> msl_unsupported_reason(const cir::Kernel& k, const GpuTarget& target, int block_threads) {
  if (std::optional<std::string> why = Support(k, target).run()) return why;
  // What only writing finds (atomics of 64-bit elements): written once to see.
  try {
    Msl(cir::spell_out_special_literals(k), target, std::max(block_threads, 1)).run();
  } catch (const NotWritable& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

MslKernel emit_msl(const cir::Kernel& k, const GpuTarget& target, int block_threads) {
  if (std::optional<std::string> why = Support(k, target).run()) throw std::logic_error("MSL lowering: kernel " + k.name + " uses " + *why);
  try {
    return Msl(cir::spell_out_special_literals(k), target, std::max(block_threads, 1)).run();
  } catch (const NotWritable& e) {
    throw std::logic_error("MSL lowering: kernel " + k.name + " uses " + e.what());
  }
}

}  // namespace zyntax::codegen
