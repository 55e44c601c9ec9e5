#include "support/scalar.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>

namespace zyntax {

namespace {

struct NamedFn {
  const char* name;
  MathFn fn;
  int arity;
};

const NamedFn kMathFns[] = {
    {"sin", MathFn::Sin, 1},     {"cos", MathFn::Cos, 1},         {"tan", MathFn::Tan, 1},
    {"asin", MathFn::Asin, 1},   {"acos", MathFn::Acos, 1},       {"atan", MathFn::Atan, 1},
    {"sinh", MathFn::Sinh, 1},   {"cosh", MathFn::Cosh, 1},       {"tanh", MathFn::Tanh, 1},
    {"exp", MathFn::Exp, 1},     {"exp2", MathFn::Exp2, 1},       {"log", MathFn::Log, 1},
    {"log2", MathFn::Log2, 1},   {"log10", MathFn::Log10, 1},     {"sqrt", MathFn::Sqrt, 1},
    {"rsqrt", MathFn::Rsqrt, 1}, {"abs", MathFn::Abs, 1},         {"floor", MathFn::Floor, 1},
    {"ceil", MathFn::Ceil, 1},   {"round", MathFn::Round, 1},     {"trunc", MathFn::Trunc, 1},
    {"sign", MathFn::Sign, 1},   {"erf", MathFn::Erf, 1},         {"relu", MathFn::Relu, 1},
    {"gelu", MathFn::Gelu, 1},   {"gelu_tanh", MathFn::GeluTanh, 1}, {"sigmoid", MathFn::Sigmoid, 1},
    {"silu", MathFn::Silu, 1},   {"pow", MathFn::Pow, 2},         {"atan2", MathFn::Atan2, 2},
    {"min", MathFn::Min, 2},     {"max", MathFn::Max, 2},         {"clamp", MathFn::Clamp, 3},
    {"fma", MathFn::Fma, 3},
};

const NamedFn* find_fn(MathFn fn) {
  for (const NamedFn& n : kMathFns)
    if (n.fn == fn) return &n;
  return nullptr;
}

// Wraps an integer to the width and signedness of `t`.
int64_t wrap_signed(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  v &= mask;
  uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

uint64_t wrap_unsigned(uint64_t v, int bits) {
  if (bits >= 64) return v;
  return v & ((uint64_t{1} << bits) - 1);
}

Scalar make_int_bits(uint64_t bits, DType t) {
  Scalar s;
  s.dtype = t;
  if (is_signed_int(t)) {
    s.i = wrap_signed(bits, int_bits(t));
  } else if (is_unsigned_int(t)) {
    s.u = wrap_unsigned(bits, int_bits(t));
  } else {  // bool
    s.i = bits != 0;
  }
  return s;
}

uint64_t raw_bits(const Scalar& s) { return is_unsigned_int(s.dtype) ? s.u : static_cast<uint64_t>(s.i); }

double ieee_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;  // max(-0, +0) = +0
  return a > b ? a : b;
}

double ieee_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;  // min(-0, +0) = -0
  return a < b ? a : b;
}

int compare_ints(const Scalar& a, const Scalar& b) {
  if (is_unsigned_int(a.dtype)) return a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
  return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
}

Scalar int_pow(const Scalar& a, const Scalar& b) {
  bool neg_exp = is_signed_int(b.dtype) && b.i < 0;
  if (neg_exp) {
    int64_t base = is_unsigned_int(a.dtype) ? static_cast<int64_t>(a.u) : a.i;
    if (base == 1) return Scalar::from_int(1, a.dtype);
    if (base == -1) return Scalar::from_int((b.i % 2 == 0) ? 1 : -1, a.dtype);
    throw ScalarError{"integer power with a negative exponent"};
  }
  uint64_t e = raw_bits(b);
  uint64_t base = raw_bits(a), result = 1;
  while (e) {  // wraps like repeated multiplication
    if (e & 1) result *= base;
    base *= base;
    e >>= 1;
  }
  return make_int_bits(result, a.dtype);
}

double float_math(MathFn fn, double x, double y, double z) {
  constexpr double kInvSqrt2 = 0.70710678118654752440;
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (fn) {
    case MathFn::Sin: return std::sin(x);
    case MathFn::Cos: return std::cos(x);
    case MathFn::Tan: return std::tan(x);
    case MathFn::Asin: return std::asin(x);
    case MathFn::Acos: return std::acos(x);
    case MathFn::Atan: return std::atan(x);
    case MathFn::Sinh: return std::sinh(x);
    case MathFn::Cosh: return std::cosh(x);
    case MathFn::Tanh: return std::tanh(x);
    case MathFn::Exp: return std::exp(x);
    case MathFn::Exp2: return std::exp2(x);
    case MathFn::Log: return std::log(x);
    case MathFn::Log2: return std::log2(x);
    case MathFn::Log10: return std::log10(x);
    case MathFn::Sqrt: return std::sqrt(x);
    case MathFn::Rsqrt: return 1.0 / std::sqrt(x);
    case MathFn::Abs: return std::fabs(x);
    case MathFn::Floor: return std::floor(x);
    case MathFn::Ceil: return std::ceil(x);
    case MathFn::Round: return std::nearbyint(x);  // half to even, as NumPy
    case MathFn::Trunc: return std::trunc(x);
    case MathFn::Sign: return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case MathFn::Erf: return std::erf(x);
    case MathFn::Relu: return std::isnan(x) ? x : x > 0 ? x : 0.0;
    // The activations in forms without cancellation in their tails; at -inf
    // the gelus and silu take their limit, -0 (the formulas give -inf * 0).
    case MathFn::Gelu: return x == -kInf ? -0.0 : 0.5 * x * std::erfc(x * -kInvSqrt2);
    case MathFn::GeluTanh: return x == -kInf ? -0.0 : x / (1.0 + std::exp(-2.0 * kSqrt2OverPi * (x + 0.044715 * x * x * x)));
    case MathFn::Sigmoid:
    case MathFn::Silu: {  // e / (1 + e) below 0, e = exp(-|x|): exp(-x) would overflow before the result underflows
      if (x == -kInf) return fn == MathFn::Sigmoid ? 0.0 : -0.0;
      double e = std::exp(-std::fabs(x)), num = fn == MathFn::Sigmoid ? 1.0 : x;
      return (x < 0 ? num * e : num) / (1.0 + e);
    }
    case MathFn::Pow: return std::pow(x, y);
    case MathFn::Atan2: return std::atan2(x, y);
    case MathFn::Min: return ieee_min(x, y);
    case MathFn::Max: return ieee_max(x, y);
    case MathFn::Clamp: return ieee_min(ieee_max(x, y), z);
    case MathFn::Fma: return std::fma(x, y, z);
  }
  return x;
}

}  // namespace

const char* binary_op_symbol(BinaryOp op) {
  static const char* kSyms[] = {"+", "-", "*", "/", "%", "**", "min", "max",
                                "==", "!=", "<", "<=", ">", ">=", "and", "or"};
  return kSyms[static_cast<int>(op)];
}

const char* unary_op_symbol(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "not "; }

const char* math_fn_name(MathFn fn) {
  const NamedFn* n = find_fn(fn);
  return n ? n->name : "?";
}

std::optional<MathFn> parse_math_fn(std::string_view name) {
  for (const NamedFn& n : kMathFns)
    if (name == n.name) return n.fn;
  return std::nullopt;
}

int math_fn_arity(MathFn fn) {
  const NamedFn* n = find_fn(fn);
  return n ? n->arity : 1;
}

bool math_fn_keeps_int(MathFn fn) {
  return fn == MathFn::Abs || fn == MathFn::Min || fn == MathFn::Max || fn == MathFn::Clamp ||
         fn == MathFn::Sign || fn == MathFn::Relu;
}

const char* reduce_op_name(ReduceOp op) {
  static const char* kNames[] = {"+", "*", "min", "max", "and", "or", "argmin", "argmax"};
  return kNames[static_cast<int>(op)];
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  if (name == "+" || name == "sum") return ReduceOp::Sum;
  if (name == "*" || name == "prod" || name == "product") return ReduceOp::Product;
  if (name == "min") return ReduceOp::Min;
  if (name == "max") return ReduceOp::Max;
  if (name == "and" || name == "all") return ReduceOp::And;
  if (name == "or" || name == "any") return ReduceOp::Or;
  if (name == "argmin") return ReduceOp::ArgMin;
  if (name == "argmax") return ReduceOp::ArgMax;
  return std::nullopt;
}

Scalar Scalar::of_float(double v, DType t) {
  Scalar s;
  s.dtype = t;
  s.f = round_to_float_type(v, t);
  return s;
}

Scalar Scalar::of_int(int64_t v, DType t) { return make_int_bits(static_cast<uint64_t>(v), t); }
Scalar Scalar::of_uint(uint64_t v, DType t) { return make_int_bits(v, t); }
Scalar Scalar::of_bool(bool v) {
  Scalar s;
  s.dtype = DType::Bool;
  s.i = v;
  return s;
}

Scalar Scalar::from_double(double v, DType t) {
  if (is_float(t)) return of_float(v, t);
  if (is_bool(t)) return of_bool(v != 0);  // NaN is nonzero
  if (std::isnan(v)) return make_int_bits(0, t);
  v = std::trunc(v);
  if (is_unsigned_int(t)) {
    int bits = int_bits(t);
    double hi = bits >= 64 ? 18446744073709551615.0 : std::ldexp(1.0, bits) - 1;
    if (v <= 0) return make_int_bits(0, t);
    if (v >= hi) return make_int_bits(bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1, t);
    return make_int_bits(static_cast<uint64_t>(v), t);
  }
  int bits = int_bits(t);
  double lo = -std::ldexp(1.0, bits - 1);
  double hi = std::ldexp(1.0, bits - 1) - 1;
  if (v <= lo) return of_int(bits >= 64 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(lo), t);
  if (v >= hi) return of_int(bits >= 64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi), t);
  return of_int(static_cast<int64_t>(v), t);
}

Scalar Scalar::from_int(int64_t v, DType t) {
  if (is_float(t)) return of_float(static_cast<double>(v), t);
  if (is_bool(t)) return of_bool(v != 0);
  return make_int_bits(static_cast<uint64_t>(v), t);
}

double Scalar::as_double() const {
  if (is_float(dtype)) return f;
  if (is_unsigned_int(dtype)) return static_cast<double>(u);
  return static_cast<double>(i);
}

int64_t Scalar::as_int64() const {
  if (is_float(dtype)) return from_double(f, DType::I64).i;
  if (is_unsigned_int(dtype)) return static_cast<int64_t>(u);
  return i;
}

bool Scalar::truthy() const {
  if (is_float(dtype)) return f != 0;
  if (is_unsigned_int(dtype)) return u != 0;
  return i != 0;
}

std::string Scalar::str() const {
  if (is_bool(dtype)) return i ? "true" : "false";
  if (is_signed_int(dtype)) return std::to_string(i);
  if (is_unsigned_int(dtype)) return std::to_string(u);
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  // The shortest decimal that reads back to the same value in this dtype,
  // in plain notation unless the exponent notation is shorter.
  char buf[64];
  std::to_chars_result r;
  if (dtype == DType::F64) {
    r = std::to_chars(buf, buf + sizeof buf, f);
  } else if (dtype == DType::F32) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(f));
  } else {
    for (int prec = 1;; ++prec) {  // f16/bf16: fewest digits that round back
      r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(f), std::chars_format::general, prec);
      if (prec >= 9 || round_to_float_type(std::strtod(std::string(buf, r.ptr).c_str(), nullptr), dtype) == f) break;
    }
  }
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

Scalar cast(const Scalar& s, DType to) {
  if (s.dtype == to) return s;
  if (is_float(s.dtype)) return Scalar::from_double(s.f, to);
  if (is_unsigned_int(s.dtype)) {
    if (is_float(to)) return Scalar::of_float(static_cast<double>(s.u), to);
    if (is_bool(to)) return Scalar::of_bool(s.u != 0);
    return make_int_bits(s.u, to);
  }
  return Scalar::from_int(s.i, to);
}

Scalar eval_binary(BinaryOp op, const Scalar& a, const Scalar& b) {
  DType t = a.dtype;
  if (is_comparison(op)) {
    int c;
    if (is_float(t)) {
      double x = a.f, y = b.f;
      switch (op) {
        case BinaryOp::Eq: return Scalar::of_bool(x == y);
        case BinaryOp::Ne: return Scalar::of_bool(x != y);
        case BinaryOp::Lt: return Scalar::of_bool(x < y);
        case BinaryOp::Le: return Scalar::of_bool(x <= y);
        case BinaryOp::Gt: return Scalar::of_bool(x > y);
        default: return Scalar::of_bool(x >= y);
      }
    }
    c = compare_ints(a, b);
    switch (op) {
      case BinaryOp::Eq: return Scalar::of_bool(c == 0);
      case BinaryOp::Ne: return Scalar::of_bool(c != 0);
      case BinaryOp::Lt: return Scalar::of_bool(c < 0);
      case BinaryOp::Le: return Scalar::of_bool(c <= 0);
      case BinaryOp::Gt: return Scalar::of_bool(c > 0);
      default: return Scalar::of_bool(c >= 0);
    }
  }
  if (is_logical(op)) {
    bool x = a.truthy(), y = b.truthy();
    return Scalar::of_bool(op == BinaryOp::And ? (x && y) : (x || y));
  }
  if (is_float(t)) {
    double x = a.f, y = b.f, r = 0;
    switch (op) {
      case BinaryOp::Add: r = x + y; break;
      case BinaryOp::Sub: r = x - y; break;
      case BinaryOp::Mul: r = x * y; break;
      case BinaryOp::Div: r = x / y; break;
      case BinaryOp::Mod: r = std::fmod(x, y); break;
      case BinaryOp::Pow: r = std::pow(x, y); break;
      case BinaryOp::Min: r = ieee_min(x, y); break;
      case BinaryOp::Max: r = ieee_max(x, y); break;
      default: break;
    }
    return Scalar::of_float(r, t);
  }
  if (is_bool(t)) {  // arithmetic on bool works on 0/1 in i64 terms, result bool
    Scalar r = eval_binary(op, cast(a, DType::I64), cast(b, DType::I64));
    return cast(r, DType::Bool);
  }
  uint64_t x = raw_bits(a), y = raw_bits(b);
  bool is_signed = is_signed_int(t);
  switch (op) {
    case BinaryOp::Add: return make_int_bits(x + y, t);
    case BinaryOp::Sub: return make_int_bits(x - y, t);
    case BinaryOp::Mul: return make_int_bits(x * y, t);
    case BinaryOp::Div:
    case BinaryOp::Mod: {
      if (y == 0 || (!is_signed && b.u == 0) || (is_signed && b.i == 0))
        throw ScalarError{op == BinaryOp::Div ? "integer division by zero" : "integer remainder by zero"};
      if (is_signed) {
        int64_t p = a.i, q = b.i;
        if (q == -1) return make_int_bits(op == BinaryOp::Div ? 0 - static_cast<uint64_t>(p) : 0, t);
        return Scalar::of_int(op == BinaryOp::Div ? p / q : p % q, t);
      }
      return make_int_bits(op == BinaryOp::Div ? a.u / b.u : a.u % b.u, t);
    }
    case BinaryOp::Pow: return int_pow(a, b);
    case BinaryOp::Min: return compare_ints(a, b) <= 0 ? a : b;
    case BinaryOp::Max: return compare_ints(a, b) >= 0 ? a : b;
    default: break;
  }
  return a;
}

Scalar eval_unary(UnaryOp op, const Scalar& a) {
  if (op == UnaryOp::Not) return Scalar::of_bool(!a.truthy());
  if (is_float(a.dtype)) return Scalar::of_float(-a.f, a.dtype);
  if (is_bool(a.dtype)) return Scalar::of_bool(a.truthy());
  return make_int_bits(0 - raw_bits(a), a.dtype);
}

Scalar eval_math(MathFn fn, std::span<const Scalar> args) {
  const Scalar& a = args[0];
  DType t = a.dtype;
  if (!is_float(t) && math_fn_keeps_int(fn)) {
    switch (fn) {
      case MathFn::Abs:
        if (is_signed_int(t) && a.i < 0) return eval_unary(UnaryOp::Neg, a);
        return a;
      case MathFn::Sign:
        if (is_unsigned_int(t)) return Scalar::from_int(a.u != 0, t);
        return Scalar::from_int(a.i > 0 ? 1 : a.i < 0 ? -1 : 0, t);
      case MathFn::Relu: {
        Scalar zero = Scalar::from_int(0, t);
        return compare_ints(a, zero) > 0 ? a : zero;
      }
      case MathFn::Min: return eval_binary(BinaryOp::Min, a, args[1]);
      case MathFn::Max: return eval_binary(BinaryOp::Max, a, args[1]);
      case MathFn::Clamp:
        return eval_binary(BinaryOp::Min, eval_binary(BinaryOp::Max, a, args[1]), args[2]);
      default: break;
    }
  }
  if (!is_float(t)) {  // other functions on integers are computed in f64
    double x = a.as_double();
    double y = args.size() > 1 ? args[1].as_double() : 0;
    double z = args.size() > 2 ? args[2].as_double() : 0;
    return Scalar::of_float(float_math(fn, x, y, z), DType::F64);
  }
  double y = args.size() > 1 ? args[1].f : 0;
  double z = args.size() > 2 ? args[2].f : 0;
  // x * y + z rounded once: in f32 itself (in f64 and then f32 would round twice).
  if (fn == MathFn::Fma && t == DType::F32)
    return Scalar::of_float(std::fmaf(static_cast<float>(a.f), static_cast<float>(y), static_cast<float>(z)), t);
  return Scalar::of_float(float_math(fn, a.f, y, z), t);
}

DType reduce_accumulator_dtype(ReduceOp op, DType t) {
  return is_float(t) && (op == ReduceOp::Sum || op == ReduceOp::Product) ? DType::F64 : t;
}

Scalar reduce_identity(ReduceOp op, DType t) {
  switch (op) {
    case ReduceOp::Sum: return Scalar::from_int(0, t);
    case ReduceOp::Product: return Scalar::from_int(1, t);
    case ReduceOp::Min:
      if (is_float(t)) return Scalar::of_float(std::numeric_limits<double>::infinity(), t);
      if (is_unsigned_int(t)) return make_int_bits(~uint64_t{0}, t);
      if (is_bool(t)) return Scalar::of_bool(true);
      return make_int_bits(~uint64_t{0} >> (65 - int_bits(t)), t);
    case ReduceOp::Max:
      if (is_float(t)) return Scalar::of_float(-std::numeric_limits<double>::infinity(), t);
      if (is_unsigned_int(t) || is_bool(t)) return Scalar::from_int(0, t);
      return make_int_bits(uint64_t{1} << (int_bits(t) - 1), t);
    case ReduceOp::And: return Scalar::of_bool(true);
    case ReduceOp::Or: return Scalar::of_bool(false);
    case ReduceOp::ArgMin:
    case ReduceOp::ArgMax: return Scalar::from_int(0, t);
  }
  return Scalar::from_int(0, t);
}

std::optional<BinaryOp> reduce_binary_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return BinaryOp::Add;
    case ReduceOp::Product: return BinaryOp::Mul;
    case ReduceOp::Min: return BinaryOp::Min;
    case ReduceOp::Max: return BinaryOp::Max;
    default: return std::nullopt;
  }
}

Scalar reduce_combine(ReduceOp op, const Scalar& acc, const Scalar& v) {
  if (std::optional<BinaryOp> b = reduce_binary_op(op)) return eval_binary(*b, acc, v);
  switch (op) {
    case ReduceOp::And: return Scalar::of_bool(acc.truthy() && v.truthy());
    case ReduceOp::Or: return Scalar::of_bool(acc.truthy() || v.truthy());
    default: return acc;
  }
}

bool arg_better(ReduceOp op, const Scalar& cur, const Scalar& v) {
  if (is_float(cur.dtype)) {
    if (std::isnan(cur.f)) return false;  // the first NaN wins, as in NumPy
    if (std::isnan(v.f)) return true;
    return op == ReduceOp::ArgMax ? v.f > cur.f : v.f < cur.f;
  }
  int c = compare_ints(v, cur);
  return op == ReduceOp::ArgMax ? c > 0 : c < 0;
}

}  // namespace zyntax
