#include "codegen/shader/c_style_printer.hpp"

#include <algorithm>
#include <climits>

#include "cir/reads.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "support/trip_count.hpp"

namespace zyntax::codegen {

namespace {

// Loops a schedule marks unrolled, with a constant trip count up to this, are
// unrolled whole: they cost no iterations.
constexpr int64_t kUnrollLimit = 64;

std::optional<int64_t> constant(const cir::Expr& e) {
  auto i = e.as<cir::IntImm>();
  return i ? std::optional<int64_t>(i->value) : std::nullopt;
}

}  // namespace

std::optional<int64_t> constant_trips(const cir::For& f) {
  auto lo = f.lo.as<cir::IntImm>(), hi = f.hi.as<cir::IntImm>(), step = f.step.as<cir::IntImm>();
  if (!lo || !hi || !step || step->value <= 0) return std::nullopt;
  return trip_count(lo->value, hi->value, step->value);
}

bool unrolled_whole(const cir::For& f) {
  std::optional<int64_t> trips = constant_trips(f);
  return f.loop_kind == cir::LoopKind::Unrolled && trips && *trips <= kUnrollLimit && (f.factor <= 0 || f.factor >= *trips);
}

// ------------------------------------------------------------ values

std::string CStylePrinter::wrap(DType t, const std::string& v) {
  switch (t) {
    case DType::I8: return sign_extend(v, 8);
    case DType::I16: return sign_extend(v, 16);
    case DType::U8: return "((" + v + ") & 0xFFu)";
    case DType::U16: return "((" + v + ") & 0xFFFFu)";
    default: return v;
  }
}

std::string CStylePrinter::from_memory(DType t, const std::string& v) {
  switch (t) {
    case DType::F16: return half_to_float(v);
    case DType::BF16: return bits_to_float("uint(" + v + ") << 16");
    case DType::Bool: return "(uint(" + v + ") != 0u)";
    case DType::I8: case DType::I16: return "int(" + v + ")";
    case DType::U8: case DType::U16: return "uint(" + v + ")";
    default: return v;
  }
}

std::string CStylePrinter::to_memory(DType t, const std::string& v) {
  switch (t) {
    case DType::F16: return float_to_half(v);
    case DType::BF16: helpers_.insert("bf16"); return mem_type(t) + "(zy_bf16_bits(" + v + "))";
    case DType::Bool: return mem_type(t) + "((" + v + ") ? 1u : 0u)";
    case DType::I8: case DType::I16: case DType::U8: case DType::U16: return mem_type(t) + "(" + v + ")";
    default: return v;
  }
}

std::string CStylePrinter::int_constant(int64_t v, DType t) {
  switch (t) {
    case DType::I64: return v == INT64_MIN ? reg_type(t) + "(0x8000000000000000ul)" : std::to_string(v) + "l";
    case DType::U64: return std::to_string(static_cast<uint64_t>(v)) + "ul";
    case DType::I8: case DType::I16: case DType::I32:
      return v == INT32_MIN ? "int(0x80000000u)" : "int(" + std::to_string(static_cast<int32_t>(v)) + ")";
    case DType::Bool: return v ? "true" : "false";
    default: return std::to_string(static_cast<uint32_t>(v)) + "u";
  }
}

std::string CStylePrinter::float_min_max(bool is_min, DType t, const std::string& a, const std::string& c) {
  helpers_.insert("minmax_" + reg_type(t));
  return round_to(t, std::string(is_min ? "zy_min(" : "zy_max(") + a + ", " + c + ")");
}

std::string CStylePrinter::binary_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return " + ";
    case BinaryOp::Sub: return " - ";
    case BinaryOp::Mul: return " * ";
    case BinaryOp::Div: return " / ";
    default: return " ? ";
  }
}

std::string CStylePrinter::integer_convert(const std::string& v, DType from, DType to) {
  std::string wide = reg_type(is_signed_int(from) ? DType::I64 : DType::U64) + "(" + v + ")";
  switch (to) {
    case DType::I64: case DType::U64: case DType::I32: case DType::U32: return reg_type(to) + "(" + wide + ")";
    case DType::I8: case DType::I16: return wrap(to, "int(" + wide + ")");
    default: return wrap(to, "uint(" + wide + ")");
  }
}

// Parenthesised: `a` may be a negative literal, and `--7l` is a decrement.
std::string CStylePrinter::negate(DType t, const std::string& a, Span) {
  if (is_float(t)) return temp(t, round_to(t, "-(" + a + ")"));
  return temp(t, wrapping_negation(t, a));
}

std::string CStylePrinter::arith(BinaryOp op, DType t, const std::string& a, const std::string& c, Span span) {
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
      case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: case BinaryOp::Div: return round_to(t, a + binary_symbol(op) + c);
      case BinaryOp::Mod: return float_mod(t, a, c);
      case BinaryOp::Pow: return float_pow(t, a, c);
      case BinaryOp::Min: return min_max(true, t, a, c);
      case BinaryOp::Max: return min_max(false, t, a, c);
      default: unsupported("bad float operator");
    }
  }
  switch (op) {
    case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: return wrapping(op, t, a, c);
    case BinaryOp::Div:
    case BinaryOp::Mod: {
      check("(" + c + " != " + zero(t) + ")", span, op == BinaryOp::Div ? "integer division by zero" : "integer remainder by zero");
      // Truncating; a divisor of 0 gives 0 (the check has failed); x / -1 wraps.
      std::string d = temp(t, "(" + c + " == " + zero(t) + ") ? " + int_constant(1, t) + " : " + c);
      std::string q;
      if (is_signed_int(t)) {
        std::string minus_one = "(" + d + " == " + int_constant(-1, t) + ")";
        q = temp(t, minus_one + " ? " + wrapping_negation(t, a) + " : " + a + " / " + d);
      } else {
        q = temp(t, a + " / " + d);
      }
      if (op == BinaryOp::Div) return q;
      return remainder(t, a, q, d);
    }
    case BinaryOp::Pow: {
      helpers_.insert("ipow");
      std::string bad = fresh("bad");
      line("bool " + bad + " = false;");
      std::string wide = reg_type(DType::I64);
      std::string r = temp(DType::I64, "zy_ipow(" + wide + "(" + a + "), " + wide + "(" + c + "), " + (is_signed_int(t) ? "true" : "false") + ", " + bad + ")");
      check("!" + bad, span, "integer power with a negative exponent");
      return convert(r, DType::I64, t, span);
    }
    case BinaryOp::Min: return min_max(true, t, a, c);
    case BinaryOp::Max: return min_max(false, t, a, c);
    default: unsupported("bad integer operator");
  }
}

std::string CStylePrinter::integer_math(const cir::Math& m, const std::vector<std::string>& args) {
  DType t = m.type.dtype;
  const std::string& x = args[0];
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
    default: unsupported(std::string(math_fn_name(m.fn)) + " on integers");
  }
}

std::optional<std::string> CStylePrinter::builtin_float_math(MathFn fn, DType t, const std::vector<std::string>& args) {
  const std::string& x = args[0];
  auto call = [&](const std::string& f) { return temp(t, round_to(t, f + "(" + x + ")")); };
  switch (fn) {
    case MathFn::Sqrt: return call("sqrt");
    case MathFn::Rsqrt: return temp(t, round_to(t, one(t) + " / sqrt(" + x + ")"));
    case MathFn::Abs: return call("abs");
    case MathFn::Floor: return call("floor");
    case MathFn::Ceil: return call("ceil");
    case MathFn::Round: return call(round_even());
    case MathFn::Trunc: return call("trunc");
    case MathFn::Sign: return temp(t, "(isnan(" + x + ") ? " + x + " : sign(" + x + "))");
    case MathFn::Relu: return temp(t, "(isnan(" + x + ") ? " + x + " : " + x + " > " + zero(t) + " ? " + x + " : " + zero(t) + ")");
    case MathFn::Min: return temp(t, min_max(true, t, x, args[1]));
    case MathFn::Max: return temp(t, min_max(false, t, x, args[1]));
    case MathFn::Clamp: return temp(t, min_max(true, t, min_max(false, t, x, args[1]), args[2]));
    default: return std::nullopt;
  }
}

std::string CStylePrinter::library(const char* fn, const std::string& args) {
  library_.insert(fn);
  ++helper_calls_;
  return std::string(fn) + "(" + args + ")";
}

// ------------------------------------------------------------ loops

std::string CStylePrinter::trip_count(const std::string& lo, const std::string& hi, const std::string& step, const std::string& runs) {
  std::string i = reg_type(DType::I64), u = reg_type(DType::U64);
  return temp(DType::I64, "(" + runs + " && " + hi + " > " + lo + ") ? " + i + "((" + u + "(" + hi + " - " + lo + ") - 1ul) / " + u + "(" + step +
                              ") + 1ul) : 0l");
}

std::pair<std::string, std::string> CStylePrinter::loop_start(Stride how) {
  std::string i = reg_type(DType::I64);
  auto wide = [&](const std::string& v) { return i + "(" + v + ")"; };
  switch (how) {
    case Stride::Grid:
      return {"(" + wide(global_id('y')) + " * " + wide(group_count('x')) + " * " + wide(workgroup_size()) + " + " + wide(global_id('x')) + ")",
              "(" + wide(group_count('x')) + " * " + wide(group_count('y')) + " * " + wide(workgroup_size()) + ")"};
    case Stride::Block:
      return {"(" + wide(group_id('y')) + " * " + wide(group_count('x')) + " + " + wide(group_id('x')) + ")",
              "(" + wide(group_count('x')) + " * " + wide(group_count('y')) + ")"};
    case Stride::Thread: return {wide(local_id()), wide(workgroup_size())};
    case Stride::Serial: break;
  }
  return {"0l", "1l"};
}

ShaderPrinter::LoopHeader CStylePrinter::loop_header(const cir::For& f, Stride how, const std::string& trips, const std::string& first,
                                                     const std::string& stride) {
  std::optional<int64_t> lo_c = constant(f.lo), hi_c = constant(f.hi), step_c = constant(f.step);
  int64_t limit = loop_limit();
  bool short_loop = limit == 0 || (how == Stride::Serial && lo_c && hi_c && step_c && *step_c > 0 && (*hi_c - *lo_c) / *step_c < limit);
  std::string i = reg_type(DType::I64);
  std::string k = fresh("k");
  if (how == Stride::Serial && unrolled_whole(f)) {
    unrolled_ = true;
    line(unroll_prefix() + "for (" + i + " " + k + " = 0l; " + k + " < " + std::to_string(*constant_trips(f)) + "l; ++" + k + ") {");
    return {k, 1};
  }
  if (short_loop) {
    line("for (" + i + " " + k + " = " + first + "; " + k + " < " + trips + "; " + k + " += " + stride + ") {");
    return {k, 1};
  }
  std::string k0 = fresh("k"), end = fresh("e"), st = fresh("s");
  line(i + " " + st + " = " + stride + ";");
  line("for (" + i + " " + k0 + " = " + first + "; " + k0 + " < " + trips + "; " + k0 + " += " + st + " * " + std::to_string(limit) + "l) {");
  ++indent_;
  line(i + " " + end + " = min(" + trips + ", " + k0 + " + " + st + " * " + std::to_string(limit) + "l);");
  line("for (" + i + " " + k + " = " + k0 + "; " + k + " < " + end + "; " + k + " += " + st + ") {");
  return {k, 2};
}

// ------------------------------------------------------------ arrays

void CStylePrinter::zero_fill(DType t, const std::string& name, uint64_t n) {
  std::string i = fresh("z");
  line("for (int " + i + " = 0; " + i + " < " + std::to_string(n) + "; ++" + i + ") " + name + "[" + i + "] = " + zero(t) + ";");
}

// ------------------------------------------------------------ reductions and atomics

// *element = update(*element) atomically: a compare-and-swap of its bits,
// retried until no other invocation changed them in between, so every op
// keeps the semantics of its plain form.
template <class Update>
void CStylePrinter::cas_update(DType t, const Buffer& b, const std::string& off, Update update) {
  if (b.bits.empty()) unsupported("atomics need a 4- or 8-byte element");
  std::string bt = bits_type(t), seen = fresh("seen"), prev = fresh("prev");
  auto value_of = [&](const std::string& bits) -> std::string {
    switch (t) {
      case DType::F32: return bits_to_float(bits);
      case DType::F64: return double_from_bits(bits);
      case DType::I32: return "int(" + bits + ")";
      case DType::I64: return reg_type(t) + "(" + bits + ")";
      default: return bits;
    }
  };
  auto bits_of = [&](const std::string& v) -> std::string {
    switch (t) {
      case DType::F32: return float_to_bits(v);
      case DType::F64: return double_to_bits(v);
      case DType::I32: return "uint(" + v + ")";
      case DType::I64: return reg_type(DType::U64) + "(" + v + ")";
      default: return v;
    }
  };
  std::string target = b.bits + "[" + off + "]";
  line(bt + " " + seen + " = " + atomic_read(target) + ";");
  line("while (true) {");
  ++indent_;
  std::string cur = temp(t, value_of(seen));
  std::string next = update(cur);
  line(compare_swap(bt, prev, target, seen, bits_of(next)));
  line("if (" + prev + " == " + seen + ") break;");
  line(seen + " = " + prev + ";");
  --indent_;
  line("}");
}

// The same for a 1- or 2-byte element: a compare-and-swap of the 32-bit
// word that holds it, the word's other bytes kept as they are.
template <class Update>
void CStylePrinter::narrow_cas_update(DType t, const Buffer& b, const std::string& off, Update update) {
  int bits = static_cast<int>(dtype_size(t)) * 8;
  std::string per_word = std::to_string(32 / bits), mask = bits == 8 ? "0xFFu" : "0xFFFFu";
  std::string word = fresh("word"), shift = fresh("shift"), seen = fresh("seen"), prev = fresh("prev");
  line("uint " + word + " = " + off + " / " + per_word + "u;");
  line("uint " + shift + " = (" + off + " % " + per_word + "u) * " + std::to_string(bits) + "u;");
  std::string target = b.bits + "[" + word + "]";
  line("uint " + seen + " = " + atomic_read(target) + ";");
  line("while (true) {");
  ++indent_;
  std::string stored = "(" + seen + " >> " + shift + ") & " + mask;
  std::string cur = temp(t, from_memory(t, mem_type(t) + "(" + stored + ")"));
  std::string next = update(cur);
  std::string next_bits = "(uint(" + to_memory(t, next) + ") & " + mask + ")";
  line(compare_swap("uint", prev, target, seen, "(" + seen + " & ~(" + mask + " << " + shift + ")) | (" + next_bits + " << " + shift + ")"));
  line("if (" + prev + " == " + seen + ") break;");
  line(seen + " = " + prev + ";");
  --indent_;
  line("}");
}

void CStylePrinter::yield_arg(const cir::Yield& y, const std::string& off, const std::string& v) {
  // One invocation yields at a time here (a block's fold yields once).
  const Buffer& acc = buffer("%acc");
  const Buffer& best = buffer("%best");
  const Buffer& has = buffer("%has");
  DType vt = best.type.dtype;
  ReduceOp op = k_.reduce_op;
  std::string index = temp(DType::I64, index_value(expr(y.index)));
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
  line(has.name + "[" + off + "] = " + mem_type(DType::Bool) + "(1u);");
  line(best.name + "[" + off + "] = " + to_memory(vt, v) + ";");
  line(acc.name + "[" + off + "] = " + to_memory(acc.type.dtype, convert(index, DType::I64, acc.type.dtype, y.span)) + ";");
  --indent_;
  line("}");
}

void CStylePrinter::yield_fold(const cir::Yield& y, const std::string& off, const std::string& v) {
  const Buffer& acc = buffer("%acc");
  DType at = acc.type.dtype;
  ReduceOp op = k_.reduce_op;
  std::string x = temp(at, convert(v, y.value->type.dtype, at, y.span));
  auto combine = [&](const std::string& cur) {
    if (std::optional<BinaryOp> b = reduce_binary_op(op)) return arith(*b, at, cur, x, y.span);
    std::string r = "(" + truthy(cur, at) + (op == ReduceOp::And ? " && " : " || ") + truthy(x, at) + ")";
    return convert(r, DType::Bool, at, y.span);
  };
  // Blocks of a GPU schedule, and grid-stride iterations yielding to an
  // element chosen without their variable, meet there at once.
  bool shared_target = block_depth_ > 0 || (!task_var_.empty() && !std::any_of(y.out_index.begin(), y.out_index.end(), [&](const cir::Expr& e) {
    return cir::reads_any(e, {task_var_});
  }));
  if (shared_target) {
    cas_update(at, acc, off, combine);
  } else {
    std::string cur = temp(at, from_memory(at, acc.name + "[" + off + "]"));
    line(acc.name + "[" + off + "] = " + to_memory(at, combine(cur)) + ";");
  }
}

void CStylePrinter::atomic_update(const cir::Atomic& a, const Buffer& b, const std::string& off, const std::string& x) {
  DType t = b.type.dtype;
  bool int_like = is_int(t) && dtype_size(t) >= 4;
  auto combine = [&](const std::string& cur) { return atomic_combine(a, t, cur, x); };
  if (dtype_size(t) < 4) {
    narrow_cas_update(t, b, off, combine);
  } else if (int_like && (a.op == cir::AtomicOp::Add || a.op == cir::AtomicOp::Min || a.op == cir::AtomicOp::Max || a.op == cir::AtomicOp::Exchange)) {
    const char* fn = a.op == cir::AtomicOp::Add ? "add" : a.op == cir::AtomicOp::Min ? "min" : a.op == cir::AtomicOp::Max ? "max" : "exchange";
    line(fetch_op(fn, b, off, x));
  } else {
    cas_update(t, b, off, combine);
  }
}

std::string CStylePrinter::shuffle_xor(const std::string& v, DType t, const std::string& offset) {
  auto sh = [&](const std::string& w) { return shuffle(w, offset); };
  switch (t) {
    case DType::F16: case DType::BF16: case DType::F32: case DType::I8: case DType::I16: case DType::I32: case DType::U8:
    case DType::U16: case DType::U32:
      return sh(v);
    case DType::Bool: return "(" + sh("(" + v + " ? 1u : 0u)") + " != 0u)";
    case DType::F64: return reg_type(t) == "float" ? sh(v) : shuffle_double(v, offset);
    default: {
      std::string u = reg_type(DType::U64) + "(" + v + ")";
      std::string r = "(" + reg_type(DType::U64) + "(" + sh("uint(" + u + " & 0xFFFFFFFFul)") + ") | (" + reg_type(DType::U64) + "(" +
                      sh("uint(" + u + " >> 32)") + ") << 32))";
      return t == DType::I64 ? reg_type(DType::I64) + "(" + r + ")" : r;
    }
  }
}

// ------------------------------------------------------------ helpers

std::string CStylePrinter::bf16_helper() {
  return "uint zy_bf16_bits(float f) {\n"
         "  uint bits = " + float_to_bits("f") + ";\n"
         "  if (isnan(f)) return (bits >> 16) | 0x40u;\n"
         "  return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;\n"
         "}\n"
         "float zy_bf16(float x) { return " + bits_to_float("zy_bf16_bits(x) << 16") + "; }\n";
}

// IEEE 754-2019 minimum and maximum: NaN propagates and -0 < +0 (the
// languages' min and max return either zero), as the reference.
std::string CStylePrinter::min_max_helper(const std::string& T, const std::string& bits, const std::string& from, const std::string& zero) {
  return T + " zy_min(" + T + " a, " + T + " b) {\n" +
         "  if (isnan(a) || isnan(b)) return a + b;\n" +
         "  return a == " + zero + " && b == " + zero + " ? " + from + "(" + bits + "(a) | " + bits + "(b)) : min(a, b);\n}\n" +
         T + " zy_max(" + T + " a, " + T + " b) {\n" +
         "  if (isnan(a) || isnan(b)) return a + b;\n" +
         "  return a == " + zero + " && b == " + zero + " ? " + from + "(" + bits + "(a) & " + bits + "(b)) : max(a, b);\n}\n";
}

std::string CStylePrinter::ipow_helper() {
  std::string i = reg_type(DType::I64), u = reg_type(DType::U64);
  return i + " zy_ipow(" + i + " b, " + i + " e, bool is_signed, " + inout_bool("bad") + ") {\n" +
         "  if (is_signed && e < 0) {\n"
         "    if (b == 1l) return 1l;\n"
         "    if (b == -1l) return (e % 2l == 0l) ? 1l : -1l;\n"
         "    bad = true;\n"
         "    return 0l;\n"
         "  }\n"
         "  " + u + " x = " + u + "(b), r = 1ul, n = " + u + "(e);\n" +
         "  for (int i = 0; i < 64 && n != 0ul; ++i) {\n"
         "    if ((n & 1ul) != 0ul) r *= x;\n"
         "    x *= x;\n"
         "    n >>= 1;\n"
         "  }\n"
         "  return " + i + "(r);\n" +
         "}\n";
}

}  // namespace zyntax::codegen
