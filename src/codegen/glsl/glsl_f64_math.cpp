#include "codegen/glsl/glsl_f64_math.hpp"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "codegen/shader/shader_helpers.hpp"

namespace zyntax::codegen {
namespace {

// A double literal of GLSL ("0.5LF": without the suffix GLSL reads a float).
std::string d(long double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "LF";
}

// c[0] + z (c[1] + z (c[2] + ...)) by fused multiply-adds.
std::string horner(const std::string& z, const std::vector<long double>& c) {
  std::string s = d(c.back());
  for (size_t i = c.size() - 1; i-- > 0;) s = "fma(" + s + ", " + z + ", " + d(c[i]) + ")";
  return s;
}

// Constants split in a double and the rest where one double is not enough.
// LN2_HI and LOG10_2_HI keep 32 and 40 significant bits, so that a product
// with an exponent (11 bits) is exact.
const std::string LN2_HI = "6.93147180369123816490e-01LF", LN2_LO = "1.90821492927058770002e-10LF";
const std::string LN2 = "0.6931471805599453LF", LN2_TAIL = "2.3190468138462996e-17LF";
const std::string INV_LN2 = "1.4426950408889634LF", INV_LN2_TAIL = "2.0355273740931033e-17LF";
const std::string LOG10_2_HI = "3.01029995663611771306e-01LF", LOG10_2_LO = "3.69423907715893078616e-13LF";
const std::string INV_LN10 = "0.4342944819032518LF";
const std::string PI = "3.141592653589793LF", PI_LO = "1.2246467991473532e-16LF";
const std::string PIO2 = "1.5707963267948966LF", PIO2_LO = "6.123233995736766e-17LF";
// pi/2 as three doubles, for reducing arguments of sin, cos and tan.
const std::string PIO2_1 = "1.5707963267948966LF", PIO2_2 = "6.123233995736766e-17LF", PIO2_3 = "-1.4973849048591698e-33LF";
const std::string TWO_OVER_PI = "0.6366197723675814LF";

// Every local of the helpers is `precise`: GLSL lets a compiler contract
// a * b + c into an fma or split an fma, and reassociate sums, unless the
// value is precise, and the two-double sums and fma residuals below are
// exact only as written.
const std::vector<ShaderHelper>& helpers() {
  static const std::vector<ShaderHelper> all = {
      {"zy_d_bits", {}, [] {
         return "double zy_d_inf() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }\n"
                // A whole double as an int, 0 for NaN: a driver that drops
                // isnan for doubles must not meet a conversion of a NaN,
                // undefined, which lavapipe's LLVM turns into a dropped store.
                "int zy_d_to_int(double k) { return k >= -2147483648.0LF && k <= 2147483647.0LF ? int(k) : 0; }\n"
                "double zy_d_nan() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }\n"
                "bool zy_d_signbit(double x) { return (unpackDouble2x32(x).y & 0x80000000u) != 0u; }\n"
                "double zy_d_copysign(double m, double s) {\n"
                "  uvec2 b = unpackDouble2x32(m);\n"
                "  b.y = (b.y & 0x7fffffffu) | (unpackDouble2x32(s).y & 0x80000000u);\n"
                "  return packDouble2x32(b);\n"
                "}\n"
                // 2^k for -1022 <= k <= 1023
                "double zy_d_pow2(int k) { return packDouble2x32(uvec2(0u, uint(k + 1023) << 20)); }\n"
                // x 2^k in steps that stay normal until the last (one rounding)
                "double zy_d_ldexp(double x, int k) {\n"
                "  int a = clamp(k, -1022, 1023);\n"
                "  x *= zy_d_pow2(a);\n"
                "  k -= a;\n"
                "  a = clamp(k, -1022, 1023);\n"
                "  x *= zy_d_pow2(a);\n"
                "  return x * zy_d_pow2(clamp(k - a, -1022, 1023));\n"
                "}\n"
                // x = m 2^e with 0.5 <= m < 1, for finite x != 0
                "double zy_d_frexp(double x, out int e) {\n"
                "  int adjust = 0;\n"
                "  uvec2 b = unpackDouble2x32(x);\n"
                "  if (((b.y >> 20) & 0x7ffu) == 0u) {\n"  // subnormal: scaled by 2^54 first
                "    b = unpackDouble2x32(x * 18014398509481984.0LF);\n"
                "    adjust = 54;\n"
                "  }\n"
                "  e = int((b.y >> 20) & 0x7ffu) - 1022 - adjust;\n"
                "  b.y = (b.y & 0x800fffffu) | (1022u << 20);\n"
                "  return packDouble2x32(b);\n"
                "}\n"
                // a b = p + err exactly (Dekker, with Veltkamp's split: no fma,
                // which GLSL need not fuse); err 0 where a split would overflow
                "double zy_d_high_half(double x) {\n"  // the top 26 bits of the significand
                "  uvec2 b = unpackDouble2x32(x);\n"
                "  return packDouble2x32(uvec2(b.x & 0xf8000000u, b.y));\n"
                "}\n"
                "double zy_d_two_prod(double a, double b, out double err) {\n"
                "  precise double p = a * b;\n"
                "  if (abs(a) > 1.0e300LF || abs(b) > 1.0e300LF || isinf(p) || isnan(p)) {\n"
                "    err = 0.0LF;\n"
                "    return p;\n"
                "  }\n"
                "  precise double a_hi = zy_d_high_half(a), a_lo = a - a_hi;\n"
                "  precise double b_hi = zy_d_high_half(b), b_lo = b - b_hi;\n"
                "  precise double e = (((a_hi * b_hi - p) + a_hi * b_lo) + a_lo * b_hi) + a_lo * b_lo;\n"
                "  err = e;\n"
                "  return p;\n"
                "}\n";
       }},
      // Rounding to integers in double arithmetic alone: adding and taking
      // off 2^52 rounds |x| < 2^52 to the nearest even integer (doubles from
      // 2^52 on are integers). Drivers' roundEven, floor and trunc on doubles
      // may go through narrower types (Mesa's lavapipe 22.3 gets 1.7e14
      // wrong on some machines), so none of them is used.
      {"zy_d_round_even", {"zy_d_bits"}, [] {
         return "double zy_d_round_even(double x) {\n"
                "  if (!(abs(x) < 4503599627370496.0LF)) return x;\n"
                "  precise double two52 = 4503599627370496.0LF, r = (abs(x) + two52) - two52;\n"
                "  return zy_d_copysign(r, x);\n"
                "}\n";
       }},
      {"zy_d_floor", {"zy_d_round_even"}, [] {
         return "double zy_d_floor(double x) {\n"
                "  precise double r = zy_d_round_even(x);\n"
                "  return r > x ? r - 1.0LF : r;\n"
                "}\n";
       }},
      {"zy_d_trunc", {"zy_d_floor"}, [] {
         return "double zy_d_trunc(double x) { return zy_d_copysign(zy_d_floor(abs(x)), x); }\n";
       }},
      {"zy_d_ceil", {"zy_d_floor"}, [] {
         return "double zy_d_ceil(double x) { return zy_d_copysign(-zy_d_floor(-x), x); }\n";
       }},
      // e^r - 1 for |r| <= ln(2)/2 (+ a little): Taylor to r^14, below an ulp
      {"zy_d_expm1_r", {}, [] {
         return "double zy_d_expm1_r(double r) { return fma(r * r, " +
                horner("r", series(13, [](int n) { return 1 / factorial(n + 2); })) + ", r); }\n";
       }},
      // e^(hi + lo) for lo below hi's ulp: k ln 2 taken off exactly (LN2_HI
      // has 32 bits), 2^k (1 + expm1(r)) put back together.
      {"zy_d_exp_dd", {"zy_d_bits", "zy_d_expm1_r", "zy_d_round_even"}, [] {
         return "double zy_d_exp_dd(double hi, double lo) {\n"
                "  if (isnan(hi)) return hi;\n"
                "  if (hi > 710.0LF) return zy_d_inf();\n"
                "  if (hi < -746.0LF) return 0.0LF;\n"
                "  precise double k = zy_d_round_even(hi * " + INV_LN2 + ");\n"
                "  precise double r = (hi - k * " + LN2_HI + ") + (lo - k * " + LN2_LO + ");\n"
                "  return zy_d_ldexp(1.0LF + zy_d_expm1_r(r), zy_d_to_int(k));\n"
                "}\n"
                "double zy_d_exp(double x) { return zy_d_exp_dd(x, 0.0LF); }\n";
       }},
      {"zy_d_exp", {"zy_d_exp_dd"}, [] { return std::string(); }},
      {"zy_d_exp2", {"zy_d_bits", "zy_d_expm1_r", "zy_d_round_even"}, [] {
         return "double zy_d_exp2(double x) {\n"
                "  if (isnan(x)) return x;\n"
                "  if (x > 1025.0LF) return zy_d_inf();\n"
                "  if (x < -1076.0LF) return 0.0LF;\n"
                "  precise double k = zy_d_round_even(x), f = x - k;\n"  // exact
                "  precise double e;\n"
                "  precise double r = zy_d_two_prod(f, " + LN2 + ", e);\n"
                "  precise double r_lo = e + f * " + LN2_TAIL + ";\n"
                "  return zy_d_ldexp(1.0LF + zy_d_expm1_r(r + r_lo), zy_d_to_int(k));\n"
                "}\n";
       }},
      // e^x - 1 = 2^k expm1(r) + (2^k - 1), accurate near 0 as well
      {"zy_d_expm1", {"zy_d_bits", "zy_d_expm1_r", "zy_d_round_even"}, [] {
         return "double zy_d_expm1(double x) {\n"
                "  if (isnan(x) || abs(x) < 0.34657359027997264LF) return isnan(x) ? x : zy_d_expm1_r(x);\n"
                "  if (x > 710.0LF) return zy_d_inf();\n"
                "  if (x < -40.0LF) return -1.0LF;\n"
                "  precise double k = zy_d_round_even(x * " + INV_LN2 + ");\n"
                "  precise double p = zy_d_expm1_r((x - k * " + LN2_HI + ") - k * " + LN2_LO + ");\n"
                "  if (k > 1000.0LF) return zy_d_ldexp(1.0LF + p, zy_d_to_int(k));\n"
                "  return zy_d_ldexp(p, zy_d_to_int(k)) + (zy_d_pow2(zy_d_to_int(k)) - 1.0LF);\n"
                "}\n";
       }},
      {"zy_d_tanh", {"zy_d_bits", "zy_d_expm1"}, [] {
         return "double zy_d_tanh(double x) {\n"
                "  precise double a = abs(x);\n"
                "  if (isnan(x) || a < 1.0e-300LF) return x;\n"  // also keeps -0
                "  if (a > 22.0LF) return zy_d_copysign(1.0LF, x);\n"
                // Below 2^-7 the series to x^7 (its next term under 2^-60 x):
                // x plus a small correction, within an ulp, where e / (e + 2)
                // sums three roundings of x's size.
                "  if (a < 0.0078125LF) {\n"
                "    precise double s = x * x;\n"
                "    return x + x * (s * (-0.33333333333333331483LF + s * (0.13333333333333333287LF - s * 0.053968253968253970809LF)));\n"
                "  }\n"
                "  precise double e = zy_d_expm1(2.0LF * a);\n"
                "  return zy_d_copysign(e / (e + 2.0LF), x);\n"
                "}\n";
       }},
      {"zy_d_sinh", {"zy_d_bits", "zy_d_expm1", "zy_d_exp_dd"}, [] {
         return "double zy_d_sinh(double x) {\n"
                "  precise double a = abs(x), r;\n"
                "  if (isnan(x) || a < 1.0e-300LF) return x;\n"
                "  if (a < 22.0LF) {\n"
                "    precise double e = zy_d_expm1(a);\n"
                "    r = 0.5LF * (e + e / (e + 1.0LF));\n"
                "  } else if (a < 709.0LF) {\n"
                "    r = 0.5LF * zy_d_exp(a);\n"
                "  } else {\n"  // e^a overflows a little before e^a / 2 does
                "    precise double w = zy_d_exp(0.5LF * a);\n"
                "    r = (0.5LF * w) * w;\n"
                "  }\n"
                "  return zy_d_copysign(r, x);\n"
                "}\n";
       }},
      {"zy_d_cosh", {"zy_d_bits", "zy_d_exp_dd"}, [] {
         return "double zy_d_cosh(double x) {\n"
                "  precise double a = abs(x);\n"
                "  if (isnan(x)) return x;\n"
                "  if (a < 22.0LF) {\n"
                "    precise double e = zy_d_exp(a);\n"
                "    return 0.5LF * e + 0.5LF / e;\n"
                "  }\n"
                "  if (a < 709.0LF) return 0.5LF * zy_d_exp(a);\n"
                // e^a overflows a little before e^a / 2 does: the half
                // first, kept in that order (a precise result: a driver
                // may otherwise square w first, which overflows).
                "  precise double w = zy_d_exp(0.5LF * a);\n"
                "  precise double r = (0.5LF * w) * w;\n"
                "  return r;\n"
                "}\n";
       }},
      // log(m) as hi + lo for x = m 2^e, sqrt(1/2) <= m < sqrt(2), x finite
      // and > 0: 2 atanh(s) with s = (m - 1) / (m + 1), s kept to two doubles.
      {"zy_d_log_m", {"zy_d_bits"}, [] {
         return "double zy_d_log_m(double x, out int e, out double lo) {\n"
                "  precise double m = zy_d_frexp(x, e);\n"
                "  if (m < 0.70710678118654757LF) {\n"
                "    m *= 2.0LF;\n"
                "    e -= 1;\n"
                "  }\n"
                "  precise double f = m - 1.0LF;\n"  // exact
                "  precise double u = 2.0LF + f, u_lo = f - (u - 2.0LF);\n"  // 2 + f exactly
                "  precise double s = f / u;\n"
                "  precise double su_lo;\n"
                "  precise double su = zy_d_two_prod(s, u, su_lo);\n"
                "  precise double s_lo = (((f - su) - su_lo) - s * u_lo) / u;\n"
                "  precise double z = s * s;\n"
                "  precise double tail = 2.0LF * s * z * " + horner("z", series(11, [](int n) { return 1.0L / (2 * n + 3); })) + ";\n"
                "  precise double hi = 2.0LF * s;\n"
                "  precise double l = 2.0LF * s_lo + tail;\n"
                "  precise double h = hi + l, h_lo = l - (h - hi);\n"
                "  lo = h_lo;\n"
                "  return h;\n"
                "}\n"
                // NaN, -inf, +inf or the value for finite x > 0 (status 0)
                "double zy_d_log_special(double x, out bool done) {\n"
                "  done = true;\n"
                "  if (isnan(x)) return x;\n"
                "  if (x < 0.0LF) return zy_d_nan();\n"
                "  if (x == 0.0LF) return -zy_d_inf();\n"
                "  if (isinf(x)) return x;\n"
                "  done = false;\n"
                "  return 0.0LF;\n"
                "}\n";
       }},
      {"zy_d_log", {"zy_d_log_m"}, [] {
         return "double zy_d_log(double x) {\n"
                "  bool done;\n"
                "  precise double s = zy_d_log_special(x, done);\n"
                "  if (done) return s;\n"
                "  int e;\n"
                "  precise double lo, hi = zy_d_log_m(x, e, lo), fe = double(e);\n"
                "  return fe * " + LN2_HI + " + (hi + (lo + fe * " + LN2_LO + "));\n"
                "}\n";
       }},
      {"zy_d_log2", {"zy_d_log_m"}, [] {
         return "double zy_d_log2(double x) {\n"
                "  bool done;\n"
                "  precise double s = zy_d_log_special(x, done);\n"
                "  if (done) return s;\n"
                "  int e;\n"
                "  precise double lo, hi = zy_d_log_m(x, e, lo);\n"
                "  return double(e) + fma(hi, " + INV_LN2 + ", fma(hi, " + INV_LN2_TAIL + ", lo * " + INV_LN2 + "));\n"
                "}\n";
       }},
      {"zy_d_log10", {"zy_d_log_m"}, [] {
         return "double zy_d_log10(double x) {\n"
                "  bool done;\n"
                "  precise double s = zy_d_log_special(x, done);\n"
                "  if (done) return s;\n"
                "  int e;\n"
                "  precise double lo, hi = zy_d_log_m(x, e, lo), fe = double(e);\n"
                "  return fe * " + LOG10_2_HI + " + fma(hi + lo, " + INV_LN10 + ", fe * " + LOG10_2_LO + ");\n"
                "}\n";
       }},
      // C's pow (C99 F.9.4.4): y log(|x|) in two doubles, then e^ of them.
      {"zy_d_pow", {"zy_d_log_m", "zy_d_exp_dd", "zy_d_trunc"}, [] {
         return "double zy_d_pow(double x, double y) {\n"
                "  precise double inf = zy_d_inf();\n"
                "  if (y == 0.0LF || x == 1.0LF) return 1.0LF;\n"
                "  if (isnan(x) || isnan(y)) return x + y;\n"
                "  bool y_int = !isinf(y) && zy_d_trunc(y) == y;\n"
                "  bool y_odd = y_int && abs(y) < 9007199254740992.0LF && abs(y) - 2.0LF * zy_d_floor(abs(y) * 0.5LF) == 1.0LF;\n"
                "  if (isinf(y)) return abs(x) == 1.0LF ? 1.0LF : ((abs(x) < 1.0LF) == (y < 0.0LF) ? inf : 0.0LF);\n"
                "  if (x == 0.0LF) return y < 0.0LF ? (y_odd ? zy_d_copysign(inf, x) : inf) : (y_odd ? x : 0.0LF);\n"
                "  if (isinf(x)) return x > 0.0LF ? (y > 0.0LF ? inf : 0.0LF) : (y > 0.0LF ? (y_odd ? -inf : inf) : (y_odd ? -0.0LF : 0.0LF));\n"
                "  if (x < 0.0LF && !y_int) return zy_d_nan();\n"
                "  int e;\n"
                "  precise double lo, hi = zy_d_log_m(abs(x), e, lo), fe = double(e);\n"
                "  precise double a = fe * " + LN2_HI + ";\n"  // exact
                "  precise double s = a + hi, b = s - a;\n"
                "  precise double l_lo0 = ((a - (s - b)) + (hi - b)) + (lo + fe * " + LN2_LO + ");\n"
                "  precise double l = s + l_lo0, l_lo = l_lo0 - (l - s);\n"
                "  precise double p = y * l;\n"
                "  precise double p_err;\n"
                "  zy_d_two_prod(y, l, p_err);\n"
                "  precise double p_lo = isinf(p) ? 0.0LF : p_err + y * l_lo;\n"
                "  precise double r = zy_d_exp_dd(p, p_lo);\n"
                "  return x < 0.0LF && y_odd ? -r : r;\n"
                "}\n";
       }},
      // x = k pi/2 + (r + r_lo), |r| <= pi/4 or a little more; q = k mod 4.
      // k (pi/2) is taken off with pi/2 in three doubles: k PIO2_1 exactly
      // by an fma, the rest within |x| 2^-106.
      {"zy_d_reduce", {"zy_d_bits", "zy_d_floor"}, [] {
         return "double zy_d_reduce(double x, out int q, out double r_lo) {\n"
                "  precise double k = zy_d_round_even(x * " + TWO_OVER_PI + ");\n"
                "  precise double p_lo;\n"
                "  precise double p = zy_d_two_prod(k, " + PIO2_1 + ", p_lo);\n"
                "  precise double h = x - p;\n"  // exact: p is within a factor 2 of x
                "  precise double t = (p_lo + k * " + PIO2_2 + ") + k * " + PIO2_3 + ";\n"
                "  precise double r = h - t, rest = (h - r) - t;\n"
                "  r_lo = rest;\n"
                "  q = zy_d_to_int(k - 4.0LF * zy_d_floor(k * 0.25LF));\n"
                "  return r;\n"
                "}\n";
       }},
      // sin and cos of r + r_lo, |r| <= pi/4 (Taylor to r^17 and r^18)
      {"zy_d_sincos_r", {"zy_d_bits"}, [] {
         return "double zy_d_sin_r(double r, double r_lo) {\n"
                "  precise double z = r * r;\n"
                "  precise double s = fma(r * z, " + horner("z", series(8, [](int n) { return (n % 2 ? 1.0L : -1.0L) / factorial(2 * n + 3); })) +
                ", r);\n"
                "  return s + r_lo * (1.0LF - 0.5LF * z);\n"
                "}\n"
                "double zy_d_cos_r(double r, double r_lo) {\n"
                "  precise double z = r * r, hz = 0.5LF * z, w = 1.0LF - hz;\n"
                "  precise double c = w + (((1.0LF - w) - hz) + z * z * " +
                horner("z", series(8, [](int n) { return (n % 2 ? -1.0L : 1.0L) / factorial(2 * n + 4); })) +
                ");\n"
                "  return c - r_lo * r;\n"
                "}\n"
                // NaN for NaN and infinities; the run to the reference executor
                // for |x| >= 2^50 (see glsl_f64_math.hpp); done for tiny x.
                "bool zy_d_trig_special(double x, out double v) {\n"
                "  v = zy_d_nan();\n"
                "  if (isnan(x) || isinf(x)) return true;\n"
                "  if (abs(x) >= 1125899906842624.0LF) {\n"
                "    zy_fail(0xffffffffu);\n"
                "    return true;\n"
                "  }\n"
                "  return false;\n"
                "}\n";
       }},
      {"zy_d_sin", {"zy_d_reduce", "zy_d_sincos_r"}, [] {
         return "double zy_d_sin(double x) {\n"
                "  precise double v;\n"
                "  if (zy_d_trig_special(x, v)) return v;\n"
                "  if (abs(x) < 7.450580596923828e-09LF) return x;\n"
                "  int q;\n"
                "  precise double lo, r = zy_d_reduce(x, q, lo);\n"
                "  precise double s = (q & 1) == 0 ? zy_d_sin_r(r, lo) : zy_d_cos_r(r, lo);\n"
                "  return q >= 2 ? -s : s;\n"
                "}\n";
       }},
      {"zy_d_cos", {"zy_d_reduce", "zy_d_sincos_r"}, [] {
         return "double zy_d_cos(double x) {\n"
                "  precise double v;\n"
                "  if (zy_d_trig_special(x, v)) return v;\n"
                "  if (abs(x) < 7.450580596923828e-09LF) return 1.0LF;\n"
                "  int q;\n"
                "  precise double lo, r = zy_d_reduce(x, q, lo);\n"
                "  precise double c = (q & 1) == 0 ? zy_d_cos_r(r, lo) : zy_d_sin_r(r, lo);\n"
                "  return q == 1 || q == 2 ? -c : c;\n"
                "}\n";
       }},
      {"zy_d_tan", {"zy_d_reduce", "zy_d_sincos_r"}, [] {
         return "double zy_d_tan(double x) {\n"
                "  precise double v;\n"
                "  if (zy_d_trig_special(x, v)) return v;\n"
                "  if (abs(x) < 7.450580596923828e-09LF) return x;\n"
                "  int q;\n"
                "  precise double lo, r = zy_d_reduce(x, q, lo);\n"
                "  precise double s = zy_d_sin_r(r, lo), c = zy_d_cos_r(r, lo);\n"
                "  return (q & 1) == 0 ? s / c : -c / s;\n"
                "}\n";
       }},
      // atan: |x| moved next to the nearest tan(k pi/8) (atan(x) = k pi/8 +
      // atan((x - c) / (1 + x c))), then Taylor for |t| <= tan(pi/16).
      {"zy_d_atan", {"zy_d_bits"}, [] {
         long double pi = std::numbers::pi_v<long double>;
         return "double zy_d_atan(double x) {\n"
                "  precise double a = abs(x), t, base;\n"
                "  if (isnan(x) || a < 1.0e-300LF) return x;\n"
                "  if (a > " + d(std::tan(7 * pi / 16)) + ") {\n"
                "    t = -1.0LF / a;\n"
                "    base = " + PIO2 + ";\n"
                "  } else if (a > " + d(std::tan(5 * pi / 16)) + ") {\n"
                "    t = (a - " + d(std::tan(3 * pi / 8)) + ") / fma(a, " + d(std::tan(3 * pi / 8)) + ", 1.0LF);\n"
                "    base = " + d(3 * pi / 8) + ";\n"
                "  } else if (a > " + d(std::tan(3 * pi / 16)) + ") {\n"
                "    t = (a - 1.0LF) / (a + 1.0LF);\n"
                "    base = " + d(pi / 4) + ";\n"
                "  } else if (a > " + d(std::tan(pi / 16)) + ") {\n"
                "    t = (a - " + d(std::tan(pi / 8)) + ") / fma(a, " + d(std::tan(pi / 8)) + ", 1.0LF);\n"
                "    base = " + d(pi / 8) + ";\n"
                "  } else {\n"
                "    t = a;\n"
                "    base = 0.0LF;\n"
                "  }\n"
                "  precise double z = t * t;\n"
                "  precise double r = base + fma(t * z, " + horner("z", series(12, [](int n) { return (n % 2 ? 1.0L : -1.0L) / (2 * n + 3); })) +
                ", t);\n"
                "  return zy_d_copysign(r, x);\n"
                "}\n";
       }},
      // C's atan2 (C99 F.9.1.4)
      {"zy_d_atan2", {"zy_d_atan"}, [] {
         long double pi = std::numbers::pi_v<long double>;
         return "double zy_d_atan2(double y, double x) {\n"
                "  if (isnan(x) || isnan(y)) return x + y;\n"
                "  bool x_neg = zy_d_signbit(x);\n"
                "  if (y == 0.0LF) return zy_d_copysign(x_neg ? " + PI + " : 0.0LF, y);\n"
                "  if (x == 0.0LF) return zy_d_copysign(" + PIO2 + ", y);\n"
                "  if (isinf(x)) {\n"
                "    if (isinf(y)) return zy_d_copysign(x_neg ? " + d(3 * pi / 4) + " : " + d(pi / 4) + ", y);\n"
                "    return zy_d_copysign(x_neg ? " + PI + " : 0.0LF, y);\n"
                "  }\n"
                "  if (isinf(y)) return zy_d_copysign(" + PIO2 + ", y);\n"
                "  precise double a = zy_d_atan(abs(y) / abs(x));\n"
                "  return zy_d_copysign(x_neg ? (" + PI + " - a) + " + PI_LO + " : a, y);\n"
                "}\n";
       }},
      {"zy_d_asin", {"zy_d_atan2"}, [] {
         return "double zy_d_asin(double x) { return zy_d_atan2(x, sqrt((1.0LF - x) * (1.0LF + x))); }\n";
       }},
      {"zy_d_acos", {"zy_d_atan2"}, [] {
         return "double zy_d_acos(double x) { return zy_d_atan2(sqrt((1.0LF - x) * (1.0LF + x)), x); }\n";
       }},
      // erf: Taylor below 0.75; 2x/sqrt(pi) e^-x^2 sum (2x^2)^n / (2n+1)!!
      // (every term positive) below 2.5; 1 - erfc by its continued
      // fraction below 6; +-1 beyond.
      {"zy_d_erf", {"zy_d_bits", "zy_d_exp_dd"}, [] {
         long double pi = std::numbers::pi_v<long double>, two_over_sqrt_pi = 2 / std::sqrt(pi);
         std::string fraction = "a";  // a + (1/2) / (a + 1 / (a + (3/2) / (a + ...)))
         for (int k = 30; k >= 1; --k) fraction = "a + " + d(k / 2.0L) + " / (" + fraction + ")";
         return "double zy_d_erf(double x) {\n"
                "  precise double a = abs(x);\n"
                "  if (isnan(x)) return x;\n"
                "  if (a < 0.75LF) return x * " +
                horner("x * x", series(19, [&](int n) { return two_over_sqrt_pi * (n % 2 ? -1 : 1) / (factorial(n) * (2 * n + 1)); })) +
                ";\n"
                "  if (a >= 6.0LF) return zy_d_copysign(1.0LF, x);\n"
                "  precise double a2_lo;\n"
                "  precise double a2 = zy_d_two_prod(a, a, a2_lo);\n"
                "  precise double g = zy_d_exp_dd(-a2, -a2_lo);\n"  // e^-x^2
                "  precise double r;\n"
                "  if (a < 2.5LF) {\n"
                "    precise double w = 2.0LF * a2;\n"
                "    r = " + d(two_over_sqrt_pi) + " * a * g * " + horner("w", series(40, [](int n) {
                  long double f = 1;
                  for (int i = 1; i <= n; ++i) f *= 2 * i + 1;
                  return 1 / f;
                })) + ";\n"
                "  } else {\n"
                "    r = 1.0LF - g / (" + d(std::sqrt(pi)) + " * (" + fraction + "));\n"
                "  }\n"
                "  return zy_d_copysign(r, x);\n"
                "}\n";
       }},
      // erfc with small relative error where it is small: 1 - erf below 1
      // (erfc >= 0.157 there; above 1 for negative x), e^-x^2 / (sqrt(pi)
      // times the continued fraction) beyond, 200 terms (1e-16 at x = 1).
      {"zy_d_erfc", {"zy_d_erf", "zy_d_bits", "zy_d_exp_dd"}, [] {
         return "double zy_d_erfc(double x) {\n"
                "  if (isnan(x)) return x;\n"
                "  if (x < 1.0LF) return 1.0LF - zy_d_erf(x);\n"
                "  if (x > 27.3LF) return 0.0LF;\n"  // below the least subnormal
                "  precise double a2_lo;\n"
                "  precise double a2 = zy_d_two_prod(x, x, a2_lo);\n"
                "  precise double f = x;\n"
                "  for (int k = 200; k >= 1; --k) f = x + double(k) * 0.5LF / f;\n"
                "  return zy_d_exp_dd(-a2, -a2_lo) / (" + d(std::sqrt(std::numbers::pi_v<long double>)) + " * f);\n"
                "}\n";
       }},
      // C's fmod, exact: a - b trunc(a / b) by an fma, corrected where a / b
      // rounded up to the next integer.
      // a * b + c rounded once, in integers (GLSL need not fuse fma, and
      // lavapipe does not): the 106-bit product of the significands and c's
      // aligned in 128 bits (two uint64_t, what falls off kept as a sticky
      // bit), added, rounded to nearest even, subnormal and overflowing
      // results included; codegen/shader/f32_math's fma at 53 bits.
      // Infinities, NaN and zeros take the plain expression, exact there.
      {"zy_d_fma", {}, [] {
         return "int zy_d_msb64(uint64_t v) {\n"  // -1 for 0
                "  uint h = uint(v >> 32);\n"
                "  return h != 0u ? 32 + findMSB(h) : findMSB(uint(v));\n"
                "}\n"
                "uint64_t zy_d_unpack(uint64_t a, out int e) {\n"  // |x|'s bits, finite, nonzero: significand with bit 52 set
                "  int be = int(a >> 52);\n"
                "  uint64_t f = a & 0xfffffffffffffUL;\n"
                "  if (be == 0) {\n"
                "    int s = 52 - zy_d_msb64(f);\n"
                "    e = -1074 - s;\n"
                "    return f << s;\n"
                "  }\n"
                "  e = be - 1075;\n"
                "  return f | 0x10000000000000UL;\n"
                "}\n"
                "void zy_d_shl128(inout uint64_t hi, inout uint64_t lo, int n) {\n"  // 0 <= n < 128
                "  if (n == 0) return;\n"
                "  if (n >= 64) { hi = lo << (n - 64); lo = 0UL; return; }\n"
                "  hi = (hi << n) | (lo >> (64 - n));\n"
                "  lo = lo << n;\n"
                "}\n"
                "void zy_d_shr128_sticky(inout uint64_t hi, inout uint64_t lo, int n) {\n"
                "  if (n == 0) return;\n"
                "  if (n >= 128) { lo = (hi | lo) != 0UL ? 1UL : 0UL; hi = 0UL; return; }\n"
                "  uint64_t lost;\n"
                "  if (n >= 64) {\n"
                "    int m = n - 64;\n"
                "    lost = lo | (m != 0 ? hi << (64 - m) : 0UL);\n"
                "    lo = hi >> m;\n"
                "    hi = 0UL;\n"
                "  } else {\n"
                "    lost = lo << (64 - n);\n"
                "    lo = (lo >> n) | (hi << (64 - n));\n"
                "    hi = hi >> n;\n"
                "  }\n"
                "  if (lost != 0UL) lo |= 1UL;\n"
                "}\n"
                "double zy_d_fma(double a, double b, double c) {\n"
                "  uint64_t ua = doubleBitsToUint64(a), ub = doubleBitsToUint64(b), uc = doubleBitsToUint64(c);\n"
                "  uint64_t magnitude = 0x7fffffffffffffffUL, inf = 0x7ff0000000000000UL;\n"
                "  uint64_t fa = ua & magnitude, fb = ub & magnitude, fc = uc & magnitude;\n"
                "  if (fa >= inf || fb >= inf || fa == 0UL || fb == 0UL) return a * b + c;\n"
                "  if (fc >= inf) return c;\n"
                "  if (fc == 0UL) return a * b;\n"
                "  int ea, eb, ec;\n"
                "  uint64_t ma = zy_d_unpack(fa, ea), mb = zy_d_unpack(fb, eb), mc = zy_d_unpack(fc, ec);\n"
                "  uint64_t sp = (ua ^ ub) & 0x8000000000000000UL, sc = uc & 0x8000000000000000UL;\n"
                // the 106-bit product from 32-bit halves
                "  uint64_t al = ma & 0xffffffffUL, ah = ma >> 32, bl = mb & 0xffffffffUL, bh = mb >> 32;\n"
                "  uint64_t ll = al * bl, mid = al * bh + ah * bl;\n"
                "  uint64_t plo = ll + (mid << 32);\n"
                "  uint64_t phi = ah * bh + (mid >> 32) + (plo < ll ? 1UL : 0UL);\n"
                // both with their leading bit at 124 or 125
                "  zy_d_shl128(phi, plo, 20);\n"
                "  int ep = ea + eb - 20;\n"
                "  uint64_t qhi = mc << 9, qlo = 0UL;\n"
                "  int eq = ec - 73;\n"
                "  if (ep >= eq) zy_d_shr128_sticky(qhi, qlo, min(ep - eq, 128));\n"
                "  else { zy_d_shr128_sticky(phi, plo, min(eq - ep, 128)); ep = eq; }\n"
                "  uint64_t shi, slo, sgn = sp;\n"
                "  if (sp == sc) {\n"
                "    slo = plo + qlo;\n"
                "    shi = phi + qhi + (slo < plo ? 1UL : 0UL);\n"
                "  } else if (phi < qhi || (phi == qhi && plo < qlo)) {\n"
                "    slo = qlo - plo;\n"
                "    shi = qhi - phi - (qlo < plo ? 1UL : 0UL);\n"
                "    sgn = sc;\n"
                "  } else {\n"
                "    slo = plo - qlo;\n"
                "    shi = phi - qhi - (plo < qlo ? 1UL : 0UL);\n"
                "  }\n"
                "  if ((shi | slo) == 0UL) return 0.0LF;\n"
                "  int z = shi != 0UL ? 63 - zy_d_msb64(shi) : 127 - zy_d_msb64(slo);\n"
                "  zy_d_shl128(shi, slo, z);\n"
                "  int be = ep - z + 1150;\n"  // the biased exponent of the leading bit (127 + 1023)
                "  if (be >= 2047) return uint64BitsToDouble(sgn | inf);\n"
                "  if (be <= 0) {\n"
                "    zy_d_shr128_sticky(shi, slo, min(1 - be, 128));\n"
                "    be = 1;\n"
                "  }\n"
                "  uint64_t kept = shi >> 11;\n"
                "  bool first_lost = (shi & 0x400UL) != 0UL, rest_lost = ((shi & 0x3ffUL) | slo) != 0UL;\n"
                "  uint64_t bits = (uint64_t(be - 1) << 52) + kept;\n"  // the leading bit carries into the exponent
                "  if (first_lost && (rest_lost || (kept & 1UL) != 0UL)) bits += 1UL;\n"
                "  return uint64BitsToDouble(sgn | min(bits, inf));\n"
                "}\n";
       }},
      {"zy_d_fmod", {"zy_d_bits", "zy_d_trunc"}, [] {
         return "double zy_d_fmod(double a, double b) {\n"
                "  if (isnan(a) || isnan(b)) return a + b;\n"
                "  if (isinf(a) || b == 0.0LF) return zy_d_nan();\n"
                "  if (isinf(b)) return a;\n"
                "  precise double x = abs(a), y = abs(b), scale = 1.0LF;\n"
                "  if (x < y) return a;\n"
                "  if (y > 1.0e290LF) {\n"  // scaled down (exactly) for the split of zy_d_two_prod
                "    x *= 6.223015277861142e-61LF;\n"  // 2^-200
                "    y *= 6.223015277861142e-61LF;\n"
                "    scale = 1.6069380442589903e+60LF;\n"
                "  }\n"
                "  precise double q = zy_d_trunc(x / y);\n"
                "  if (q >= 9007199254740992.0LF) {\n"  // 2^53: see glsl_f64_math.hpp
                "    zy_fail(0xffffffffu);\n"
                "    return 0.0LF;\n"
                "  }\n"
                "  precise double e;\n"
                "  precise double p = zy_d_two_prod(q, y, e);\n"
                "  precise double r = (x - p) - e;\n"  // both exact: r is a double
                "  if (r < 0.0LF) r += y;\n"
                "  return zy_d_copysign(r * scale, a);\n"
                "}\n";
       }},
  };
  return all;
}

}  // namespace

const char* glsl_f64_function(MathFn fn) {
  switch (fn) {
    case MathFn::Sin: return "zy_d_sin";
    case MathFn::Cos: return "zy_d_cos";
    case MathFn::Tan: return "zy_d_tan";
    case MathFn::Asin: return "zy_d_asin";
    case MathFn::Acos: return "zy_d_acos";
    case MathFn::Atan: return "zy_d_atan";
    case MathFn::Sinh: return "zy_d_sinh";
    case MathFn::Cosh: return "zy_d_cosh";
    case MathFn::Tanh: return "zy_d_tanh";
    case MathFn::Exp: return "zy_d_exp";
    case MathFn::Exp2: return "zy_d_exp2";
    case MathFn::Log: return "zy_d_log";
    case MathFn::Log2: return "zy_d_log2";
    case MathFn::Log10: return "zy_d_log10";
    case MathFn::Erf: return "zy_d_erf";
    case MathFn::Pow: return "zy_d_pow";
    case MathFn::Atan2: return "zy_d_atan2";
    case MathFn::Round: return "zy_d_round_even";
    case MathFn::Floor: return "zy_d_floor";
    case MathFn::Ceil: return "zy_d_ceil";
    case MathFn::Trunc: return "zy_d_trunc";
    default: return nullptr;
  }
}

std::string glsl_f64_library(const std::set<std::string>& names) { return write_helpers(helpers(), names, "GLSL f64 math"); }

}  // namespace zyntax::codegen
