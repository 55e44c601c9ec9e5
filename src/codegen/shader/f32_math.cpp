#include "codegen/shader/f32_math.hpp"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "codegen/shader/shader_helpers.hpp"
#include "codegen/shader/wgsl_to_c_like.hpp"
#include "support/normal_tail.hpp"

namespace zyntax::codegen {
namespace {

// An f32 constant, as both languages read it.
std::string f(long double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// c[0] + z (c[1] + z (c[2] + ...)).
std::string horner(const std::string& z, const std::vector<long double>& c) {
  if (c.size() == 1) return f(c[0]);
  std::string s = f(c.back());
  for (size_t i = c.size() - 1; i-- > 0;) s = "(" + s + ") * " + z + " + " + f(c[i]);
  return "(" + s + ")";
}

// A constant and the rest of it (`bits` significant bits in the first, so
// that its product with a small integer is exact).
struct Split {
  std::string hi, lo;
};
Split split(long double v, int bits) {
  int e;
  std::frexp(v, &e);
  long double hi = std::ldexp(std::floor(std::ldexp(v, bits - e)), e - bits);
  return {f(hi), f(v - hi)};
}
Split f32_split(long double v) {
  float hi = static_cast<float>(v);
  return {f(hi), f(v - hi)};
}

const long double kLn2 = std::numbers::ln2_v<long double>;
const long double kPi = std::numbers::pi_v<long double>;

// Listed after the helpers each calls.
const std::vector<ShaderHelper>& helpers() {
  static const std::vector<ShaderHelper> all = {
      {"zy_f_bits", {}, [] {
         // (bit patterns of constants through a function: WGSL refuses NaN and
         // infinity in constant expressions)
         return "fn zy_f_from_bits(b: u32) -> f32 { return bitcast<f32>(b); }\n"
                "fn zy_f_is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"
                "fn zy_f_nan() -> f32 { return zy_f_from_bits(0x7fc00000u); }\n"
                "fn zy_f_copysign(m: f32, s: f32) -> f32 {\n"
                "  return bitcast<f32>((bitcast<u32>(m) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));\n"
                "}\n"
                // x 2^k in two steps that stay normal until the last
                "fn zy_f_scale(x: f32, k: i32) -> f32 {\n"
                "  let a: i32 = clamp(k, -126, 127);\n"
                "  let b: i32 = clamp(k - a, -126, 127);\n"
                "  return (x * bitcast<f32>(u32(a + 127) << 23u)) * bitcast<f32>(u32(b + 127) << 23u);\n"
                "}\n";
       }},
      // Unsigned integers of 64 bits as vec2<u32>(low, high).
      {"zy_f_u64", {}, [] {
         return "fn zy_f_mul64(a: u32, b: u32) -> vec2<u32> {\n"
                "  let ll: u32 = (a & 0xffffu) * (b & 0xffffu);\n"
                "  let lh: u32 = (a & 0xffffu) * (b >> 16u);\n"
                "  let hl: u32 = (a >> 16u) * (b & 0xffffu);\n"
                "  let mid: u32 = lh + (ll >> 16u) + (hl & 0xffffu);\n"
                "  return vec2<u32>((mid << 16u) | (ll & 0xffffu), (a >> 16u) * (b >> 16u) + (hl >> 16u) + (mid >> 16u));\n"
                "}\n"
                "fn zy_f_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {\n"
                "  let lo: u32 = a.x + b.x;\n"
                "  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));\n"
                "}\n"
                "fn zy_f_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {\n"  // a >= b
                "  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));\n"
                "}\n"
                "fn zy_f_less64(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }\n"
                "fn zy_f_clz64(a: vec2<u32>) -> u32 { return select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u); }\n"
                "fn zy_f_shl64(a: vec2<u32>, n: u32) -> vec2<u32> {\n"  // n < 64
                "  if (n == 0u) { return a; }\n"
                "  if (n >= 32u) { return vec2<u32>(0u, a.x << (n - 32u)); }\n"
                "  return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));\n"
                "}\n"
                // a >> n, the bits shifted out kept as one in the last bit
                "fn zy_f_shr64_sticky(a: vec2<u32>, n: u32) -> vec2<u32> {\n"
                "  if (n == 0u) { return a; }\n"
                "  if (n >= 64u) { return vec2<u32>(select(0u, 1u, (a.x | a.y) != 0u), 0u); }\n"
                "  var r: vec2<u32> = vec2<u32>(0u, 0u);\n"
                "  var lost: u32 = 0u;\n"
                "  if (n >= 32u) {\n"
                "    let m: u32 = n - 32u;\n"
                "    r = vec2<u32>(a.y >> m, 0u);\n"
                "    lost = a.x | select(0u, a.y << (32u - m), m != 0u);\n"
                "  } else {\n"
                "    r = vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n);\n"
                "    lost = a.x << (32u - n);\n"
                "  }\n"
                "  return vec2<u32>(r.x | select(0u, 1u, lost != 0u), r.y);\n"
                "}\n";
       }},
      // a * b + c rounded once, in integers: the 48-bit product and c's
      // significand aligned in 64 bits (what falls off kept as a sticky bit),
      // added, rounded to nearest even, subnormal and overflowing results
      // included. Infinities, NaN and zeros take the plain expression, exact
      // there (an infinite c with finite factors is c).
      {"zy_f_fma", {"zy_f_bits", "zy_f_u64"}, [] {
         return "fn zy_f_unpack(a: u32) -> vec2<i32> {\n"  // a finite, nonzero: (significand with bit 23 set, exponent of its last bit)
                "  let e: u32 = a >> 23u;\n"
                "  if (e == 0u) {\n"
                "    let s: u32 = 23u - firstLeadingBit(a);\n"
                "    return vec2<i32>(i32(a << s), -149 - i32(s));\n"
                "  }\n"
                "  return vec2<i32>(i32((a & 0x7fffffu) | 0x800000u), i32(e) - 150);\n"
                "}\n"
                "fn zy_f_fma(a: f32, b: f32, c: f32) -> f32 {\n"
                "  let ua: u32 = bitcast<u32>(a);\n"
                "  let ub: u32 = bitcast<u32>(b);\n"
                "  let uc: u32 = bitcast<u32>(c);\n"
                "  let fa: u32 = ua & 0x7fffffffu;\n"
                "  let fb: u32 = ub & 0x7fffffffu;\n"
                "  let fc: u32 = uc & 0x7fffffffu;\n"
                "  if (fa >= 0x7f800000u || fb >= 0x7f800000u || fa == 0u || fb == 0u) { return a * b + c; }\n"
                "  if (fc >= 0x7f800000u) { return c; }\n"
                "  if (fc == 0u) { return a * b; }\n"
                "  let xa: vec2<i32> = zy_f_unpack(fa);\n"
                "  let xb: vec2<i32> = zy_f_unpack(fb);\n"
                "  let xc: vec2<i32> = zy_f_unpack(fc);\n"
                "  let sp: u32 = (ua ^ ub) & 0x80000000u;\n"
                "  let sc: u32 = uc & 0x80000000u;\n"
                // both significands with their leading bit at 60 or 61
                "  var p: vec2<u32> = zy_f_shl64(zy_f_mul64(u32(xa.x), u32(xb.x)), 14u);\n"
                "  var ep: i32 = xa.y + xb.y - 14;\n"
                "  var q: vec2<u32> = vec2<u32>(0u, u32(xc.x) << 6u);\n"
                "  var eq: i32 = xc.y - 38;\n"
                "  if (ep >= eq) {\n"
                "    q = zy_f_shr64_sticky(q, u32(min(ep - eq, 64)));\n"
                "  } else {\n"
                "    p = zy_f_shr64_sticky(p, u32(min(eq - ep, 64)));\n"
                "    ep = eq;\n"
                "  }\n"
                "  var s: vec2<u32> = vec2<u32>(0u, 0u);\n"
                "  var sgn: u32 = sp;\n"
                "  if (sp == sc) {\n"
                "    s = zy_f_add64(p, q);\n"
                "  } else if (zy_f_less64(p, q)) {\n"
                "    s = zy_f_sub64(q, p);\n"
                "    sgn = sc;\n"
                "  } else {\n"
                "    s = zy_f_sub64(p, q);\n"
                "  }\n"
                "  if ((s.x | s.y) == 0u) { return 0.0; }\n"
                "  let z: u32 = zy_f_clz64(s);\n"
                "  s = zy_f_shl64(s, z);\n"
                "  var be: i32 = ep - i32(z) + 190;\n"  // the biased exponent of the leading bit (63 + 127)
                "  if (be >= 255) { return bitcast<f32>(sgn | 0x7f800000u); }\n"
                "  if (be <= 0) {\n"
                "    s = zy_f_shr64_sticky(s, u32(min(1 - be, 64)));\n"
                "    be = 1;\n"
                "  }\n"
                "  let kept: u32 = s.y >> 8u;\n"
                "  let first_lost: bool = (s.y & 0x80u) != 0u;\n"
                "  let rest_lost: bool = ((s.y & 0x7fu) | s.x) != 0u;\n"
                "  var bits: u32 = (u32(be - 1) << 23u) + kept;\n"  // the leading bit carries into the exponent
                "  if (first_lost && (rest_lost || (kept & 1u) != 0u)) { bits = bits + 1u; }\n"
                "  return bitcast<f32>(sgn | min(bits, 0x7f800000u));\n"
                "}\n";
       }},
      // C's fmod, exact: shift-and-subtract on the integer significands, so
      // that subnormal operands and results are exact on devices that flush
      // them in float arithmetic.
      {"zy_f_fmod", {"zy_f_bits"}, [] {
         return "fn zy_f_fmod_significand(u: u32) -> vec2<i32> {\n"  // (significand, exponent)
                "  let e: i32 = i32(u >> 23u);\n"
                "  if (e != 0) { return vec2<i32>(i32((u & 0x7fffffu) | 0x800000u), e); }\n"
                "  let shift: u32 = 23u - firstLeadingBit(u);\n"
                "  return vec2<i32>(i32(u << shift), 1 - i32(shift));\n"
                "}\n"
                "fn zy_f_fmod(a: f32, b: f32) -> f32 {\n"
                "  let ua: u32 = bitcast<u32>(a);\n"
                "  let ux: u32 = ua & 0x7fffffffu;\n"
                "  let uy: u32 = bitcast<u32>(b) & 0x7fffffffu;\n"
                "  let sgn: u32 = ua & 0x80000000u;\n"
                "  if (ux > 0x7f800000u || uy > 0x7f800000u) { return a + b; }\n"
                "  if (ux == 0x7f800000u || uy == 0u) { return zy_f_from_bits(0x7fc00000u); }\n"
                "  if (ux < uy) { return a; }\n"
                "  if (ux == uy) { return bitcast<f32>(sgn); }\n"
                "  let x: vec2<i32> = zy_f_fmod_significand(ux);\n"
                "  let y: vec2<i32> = zy_f_fmod_significand(uy);\n"
                "  var mx: u32 = u32(x.x);\n"
                "  let my: u32 = u32(y.x);\n"
                "  var ex: i32 = x.y;\n"
                "  for (; ex > y.y; ex--) {\n"
                "    if (mx >= my) {\n"
                "      if (mx == my) { return bitcast<f32>(sgn); }\n"
                "      mx -= my;\n"
                "    }\n"
                "    mx <<= 1u;\n"
                "  }\n"
                "  if (mx >= my) {\n"
                "    if (mx == my) { return bitcast<f32>(sgn); }\n"
                "    mx -= my;\n"
                "  }\n"
                "  let shift: u32 = 23u - firstLeadingBit(mx);\n"
                "  mx <<= shift;\n"
                "  ex -= i32(shift);\n"
                "  var r: u32 = mx >> u32(clamp(1 - ex, 0, 31));\n"
                "  if (ex > 0) { r = (u32(ex) << 23u) | (mx & 0x7fffffu); }\n"
                "  return bitcast<f32>(r | sgn);\n"
                "}\n";
       }},
      // exp(x) 2^s: x = k ln2 + r with |r| <= ln2 / 2 (k ln2 in two parts, the
      // first exact in its product with k), exp(r) - 1 by its series.
      {"zy_f_exp", {"zy_f_bits"}, [] {
         Split ln2 = split(kLn2, 16);
         std::string series_r = horner("r", series(7, [](int n) { return 1 / factorial(n + 2); }));
         return "fn zy_f_expm1_series(r: f32) -> f32 { return r + r * r * " + series_r + "; }\n" +
                "fn zy_f_exp_scaled(x: f32, s: i32) -> f32 {\n"  // x not NaN
                "  let c: f32 = clamp(x, -110.0, 100.0);\n"
                "  let k: f32 = round(c * " + f(1 / kLn2) + ");\n"
                "  let r: f32 = (c - k * " + ln2.hi + ") - k * " + ln2.lo + ";\n"
                "  return zy_f_scale(1.0 + zy_f_expm1_series(r), i32(k) + s);\n"
                "}\n"
                "fn zy_f_exp(x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x)) { return x; }\n"
                "  return zy_f_exp_scaled(x, 0);\n"
                "}\n"
                "fn zy_f_exp2(x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x)) { return x; }\n"
                "  let c: f32 = clamp(x, -160.0, 160.0);\n"
                "  let k: f32 = round(c);\n"
                "  return zy_f_scale(1.0 + zy_f_expm1_series((c - k) * " + f(kLn2) + "), i32(k));\n"
                "}\n"
                // exp(x) - 1 for x not NaN: 2^k (exp(r) - 1) + (2^k - 1), the
                // last exact where it matters
                "fn zy_f_expm1(x: f32) -> f32 {\n"
                "  if (abs(x) <= 0.3465) { return zy_f_expm1_series(x); }\n"
                "  if (x > 20.0) { return zy_f_exp_scaled(x, 0); }\n"
                "  let c: f32 = max(x, -40.0);\n"
                "  let k: f32 = round(c * " + f(1 / kLn2) + ");\n"
                "  let t: f32 = zy_f_scale(1.0, i32(k));\n"
                "  return t * zy_f_expm1_series((c - k * " + ln2.hi + ") - k * " + ln2.lo + ") + (t - 1.0);\n"
                "}\n";
       }},
      {"zy_f_hyperbolic", {"zy_f_exp"}, [] {
         return "fn zy_f_tanh(x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x)) { return x; }\n"
                "  let a: f32 = abs(x);\n"
                "  var t: f32 = 1.0;\n"
                "  if (a < 9.1) {\n"
                "    let e: f32 = zy_f_expm1(2.0 * a);\n"
                "    t = e / (e + 2.0);\n"
                "  }\n"
                "  return zy_f_copysign(t, x);\n"
                "}\n"
                "fn zy_f_sinh(x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x)) { return x; }\n"
                "  let a: f32 = abs(x);\n"
                "  var s: f32 = 0.0;\n"
                "  if (a < 1.0) {\n"
                "    let e: f32 = zy_f_expm1(a);\n"
                "    s = 0.5 * (e + e / (e + 1.0));\n"
                "  } else if (a < 10.0) {\n"
                "    let e: f32 = zy_f_exp_scaled(a, 0);\n"
                "    s = 0.5 * (e - 1.0 / e);\n"
                "  } else {\n"
                "    s = zy_f_exp_scaled(a, -1);\n"
                "  }\n"
                "  return zy_f_copysign(s, x);\n"
                "}\n"
                "fn zy_f_cosh(x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x)) { return x; }\n"
                "  let a: f32 = abs(x);\n"
                "  if (a < 10.0) {\n"
                "    let e: f32 = zy_f_exp_scaled(a, 0);\n"
                "    return 0.5 * (e + 1.0 / e);\n"
                "  }\n"
                "  return zy_f_exp_scaled(a, -1);\n"
                "}\n";
       }},
      // x = 2^e m with m in [sqrt(1/2), sqrt(2)) from the bits (subnormal x
      // too, wherever the device flushes them in arithmetic), then
      // log(m) = 2 atanh((m - 1) / (m + 1)) by its series.
      {"zy_f_log", {"zy_f_bits"}, [] {
         Split ln2 = split(kLn2, 16), log10_2 = split(std::log10(2.0L), 16);
         std::string series_z = horner("z", series(6, [](int n) { return 2.0L / (2 * n + 3); }));
         return "fn zy_f_log_parts(x: f32) -> vec2<f32> {\n"  // x finite, > 0: (e, log(m))
                "  var u: u32 = bitcast<u32>(x);\n"
                "  var e: i32 = i32(u >> 23u) - 127;\n"
                "  if ((u >> 23u) == 0u) {\n"
                "    let shift: u32 = 23u - firstLeadingBit(u);\n"
                "    u = u << shift;\n"
                "    e = -126 - i32(shift);\n"
                "  }\n"
                "  var m: f32 = bitcast<f32>((u & 0x7fffffu) | 0x3f800000u);\n"
                "  if (m > 1.41421354) {\n"
                "    m = m * 0.5;\n"
                "    e = e + 1;\n"
                "  }\n"
                "  let s: f32 = (m - 1.0) / (m + 1.0);\n"
                "  let z: f32 = s * s;\n"
                "  return vec2<f32>(f32(e), 2.0 * s + s * z * " + series_z + ");\n"
                "}\n"
                // finite and > 0, else the value C gives
                "fn zy_f_log_domain(x: f32) -> bool { return bitcast<u32>(x) - 1u < 0x7f7fffffu; }\n"
                "fn zy_f_log_special(x: f32) -> f32 {\n"
                "  let u: u32 = bitcast<u32>(x);\n"
                "  if ((u & 0x7fffffffu) > 0x7f800000u || u == 0x7f800000u) { return x; }\n"
                "  if ((u & 0x7fffffffu) == 0u) { return zy_f_from_bits(0xff800000u); }\n"
                "  return zy_f_from_bits(0x7fc00000u);\n"
                "}\n"
                "fn zy_f_log(x: f32) -> f32 {\n"
                "  if (!zy_f_log_domain(x)) { return zy_f_log_special(x); }\n"
                "  let p: vec2<f32> = zy_f_log_parts(x);\n"
                "  return p.x * " + ln2.hi + " + (p.y + p.x * " + ln2.lo + ");\n"
                "}\n"
                "fn zy_f_log2(x: f32) -> f32 {\n"
                "  if (!zy_f_log_domain(x)) { return zy_f_log_special(x); }\n"
                "  let p: vec2<f32> = zy_f_log_parts(x);\n"
                "  return p.x + p.y * " + f(1 / kLn2) + ";\n"
                "}\n"
                "fn zy_f_log10(x: f32) -> f32 {\n"
                "  if (!zy_f_log_domain(x)) { return zy_f_log_special(x); }\n"
                "  let p: vec2<f32> = zy_f_log_parts(x);\n"
                "  return p.x * " + log10_2.hi + " + (p.y * " + f(1 / std::log(10.0L)) + " + p.x * " + log10_2.lo + ");\n"
                "}\n";
       }},
      // sin, cos and tan: |x| = q pi/2 + r with |r| <= pi/4, reduced in
      // integers over the whole f32 range (Payne and Hanek's method: the
      // bits of 2/pi that matter for x's exponent, times x's significand),
      // then the series of sin and cos on r.
      {"zy_f_trig", {"zy_f_bits", "zy_f_u64"}, [] {
         Split pio2 = f32_split(kPi / 2);
         std::string sin_z = horner("z", series(4, [](int n) { return (n % 2 ? 1 : -1) / factorial(2 * n + 3); }));
         std::string cos_z = horner("z", series(4, [](int n) { return (n % 2 ? -1 : 1) / factorial(2 * n + 4); }));
         return "fn zy_f_rem_pio2(a: f32) -> vec2<f32> {\n"  // a = |x|, finite: (r, q mod 4)
                "  let u: u32 = bitcast<u32>(a);\n"
                "  if (u <= 0x3f490fdau) { return vec2<f32>(a, 0.0); }\n"
                "  let e: i32 = i32(u >> 23u) - 150;\n"  // a = m 2^e
                "  let m: u32 = (u & 0x7fffffu) | 0x800000u;\n"
                // 2/pi in binary after 32 zero bits: the bits from e + 30 on
                // (those before it make multiples of 4)
                "  var t: array<u32, 10> = array<u32, 10>(0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,"
                " 0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au);\n"
                "  let j: u32 = u32(e + 30);\n"
                "  let w: u32 = j >> 5u;\n"
                "  let o: u32 = j & 31u;\n"
                "  let w2: u32 = (t[w] << o) | select(0u, t[w + 1u] >> (32u - o), o != 0u);\n"
                "  let w1: u32 = (t[w + 1u] << o) | select(0u, t[w + 2u] >> (32u - o), o != 0u);\n"
                "  let w0: u32 = (t[w + 2u] << o) | select(0u, t[w + 3u] >> (32u - o), o != 0u);\n"
                // m times the 96 bits: a 120-bit product, 2^-94 its unit
                "  let p0: vec2<u32> = zy_f_mul64(m, w0);\n"
                "  let p1: vec2<u32> = zy_f_mul64(m, w1);\n"
                "  let p2: vec2<u32> = zy_f_mul64(m, w2);\n"
                "  let a1: u32 = p1.x + p0.y;\n"
                "  let b2: u32 = p1.y + select(0u, 1u, a1 < p1.x);\n"
                "  let a2: u32 = p2.x + b2;\n"
                "  let a3: u32 = p2.y + select(0u, 1u, a2 < b2);\n"
                "  var q: u32 = (a3 << 2u) | (a2 >> 30u);\n"
                "  var f2: u32 = a2 & 0x3fffffffu;\n"
                "  var f1: u32 = a1;\n"
                "  var f0: u32 = p0.x;\n"
                "  var neg: bool = false;\n"
                "  if ((f2 & 0x20000000u) != 0u) {\n"  // past half way: r from the next multiple of pi/2
                "    q = q + 1u;\n"
                "    neg = true;\n"
                "    f2 = (~f2) & 0x3fffffffu;\n"
                "    f1 = ~f1;\n"
                "    f0 = ~f0;\n"
                "  }\n"
                "  var hi: u32 = (f2 << 2u) | (f1 >> 30u);\n"
                "  var lo: u32 = (f1 << 2u) | (f0 >> 30u);\n"
                "  var sc: i32 = 32;\n"
                "  if (hi == 0u) {\n"
                "    hi = lo;\n"
                "    lo = f0 << 2u;\n"
                "    sc = 64;\n"
                "  }\n"
                "  let z: u32 = countLeadingZeros(hi);\n"
                "  if (z != 0u && z < 32u) { hi = (hi << z) | (lo >> (32u - z)); }\n"
                "  let fr: f32 = zy_f_scale(f32(hi), -(sc + i32(z)));\n"
                "  let r: f32 = fr * " + pio2.hi + " + fr * " + pio2.lo + ";\n"
                "  return vec2<f32>(select(r, -r, neg), f32(q & 3u));\n"
                "}\n"
                "fn zy_f_sin_series(r: f32) -> f32 {\n"
                "  let z: f32 = r * r;\n"
                "  return r + r * z * " + sin_z + ";\n"
                "}\n"
                "fn zy_f_cos_series(r: f32) -> f32 {\n"
                "  let z: f32 = r * r;\n"
                "  return (1.0 - 0.5 * z) + z * z * " + cos_z + ";\n"
                "}\n"
                "fn zy_f_sin(x: f32) -> f32 {\n"
                "  let u: u32 = bitcast<u32>(x) & 0x7fffffffu;\n"
                "  if (u >= 0x7f800000u) { return select(zy_f_nan(), x, u > 0x7f800000u); }\n"
                "  let rq: vec2<f32> = zy_f_rem_pio2(abs(x));\n"
                "  let q: u32 = u32(rq.y);\n"
                "  var s: f32 = select(zy_f_sin_series(rq.x), zy_f_cos_series(rq.x), (q & 1u) != 0u);\n"
                "  if (q >= 2u) { s = -s; }\n"
                "  return select(s, -s, (bitcast<u32>(x) & 0x80000000u) != 0u);\n"
                "}\n"
                "fn zy_f_cos(x: f32) -> f32 {\n"
                "  let u: u32 = bitcast<u32>(x) & 0x7fffffffu;\n"
                "  if (u >= 0x7f800000u) { return select(zy_f_nan(), x, u > 0x7f800000u); }\n"
                "  let rq: vec2<f32> = zy_f_rem_pio2(abs(x));\n"
                "  let q: u32 = u32(rq.y);\n"
                "  let c: f32 = select(zy_f_cos_series(rq.x), zy_f_sin_series(rq.x), (q & 1u) != 0u);\n"
                "  return select(c, -c, q == 1u || q == 2u);\n"
                "}\n"
                "fn zy_f_tan(x: f32) -> f32 {\n"
                "  let u: u32 = bitcast<u32>(x) & 0x7fffffffu;\n"
                "  if (u >= 0x7f800000u) { return select(zy_f_nan(), x, u > 0x7f800000u); }\n"
                "  let rq: vec2<f32> = zy_f_rem_pio2(abs(x));\n"
                "  let s: f32 = zy_f_sin_series(rq.x);\n"
                "  let c: f32 = zy_f_cos_series(rq.x);\n"
                "  let t: f32 = select(s / c, -c / s, (u32(rq.y) & 1u) != 0u);\n"
                "  return select(t, -t, (bitcast<u32>(x) & 0x80000000u) != 0u);\n"
                "}\n";
       }},
      // atan: |x| past tan(3 pi/8) from pi/2, past tan(pi/8) from pi/4,
      // then the series on |z| <= tan(pi/8); asin, acos and atan2 from it.
      {"zy_f_atan", {"zy_f_bits"}, [] {
         Split pio2 = f32_split(kPi / 2), pio4 = f32_split(kPi / 4), pi = f32_split(kPi);
         std::string atan_w = horner("w", series(10, [](int n) { return (n % 2 ? 1.0L : -1.0L) / (2 * n + 3); }));
         return "fn zy_f_atan(x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x)) { return x; }\n"
                "  let a: f32 = abs(x);\n"
                "  var base: f32 = 0.0;\n"
                "  var base_lo: f32 = 0.0;\n"
                "  var z: f32 = a;\n"
                "  if (a > 2.41421356) {\n"
                "    base = " + pio2.hi + ";\n"
                "    base_lo = " + pio2.lo + ";\n"
                "    z = -1.0 / a;\n"
                "  } else if (a > 0.414213562) {\n"
                "    base = " + pio4.hi + ";\n"
                "    base_lo = " + pio4.lo + ";\n"
                "    z = (a - 1.0) / (a + 1.0);\n"
                "  }\n"
                "  let w: f32 = z * z;\n"
                "  return zy_f_copysign(base + (base_lo + (z + z * w * " + atan_w + ")), x);\n"
                "}\n"
                "fn zy_f_asin(x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x)) { return x; }\n"
                "  let a: f32 = abs(x);\n"
                "  if (a > 1.0) { return zy_f_nan(); }\n"
                "  return zy_f_copysign(zy_f_atan(a / sqrt((1.0 - a) * (1.0 + a))), x);\n"
                "}\n"
                "fn zy_f_acos(x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x)) { return x; }\n"
                "  if (abs(x) > 1.0) { return zy_f_nan(); }\n"
                "  return 2.0 * zy_f_atan(sqrt((1.0 - x) / (1.0 + x)));\n"
                "}\n"
                // C's atan2 (C99 F.9.1.4): signed zeros and infinities
                "fn zy_f_atan2(y: f32, x: f32) -> f32 {\n"
                "  if (zy_f_is_nan(x) || zy_f_is_nan(y)) { return x + y; }\n"
                "  let x_neg: bool = (bitcast<u32>(x) & 0x80000000u) != 0u;\n"
                "  let x_inf: bool = (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;\n"
                "  let y_inf: bool = (bitcast<u32>(y) & 0x7fffffffu) == 0x7f800000u;\n"
                "  var r: f32 = 0.0;\n"
                "  if (y == 0.0) {\n"
                "    r = select(0.0, " + pi.hi + ", x_neg);\n"
                "  } else if (x_inf && y_inf) {\n"
                "    r = select(" + pio4.hi + ", " + f(static_cast<float>(3 * kPi / 4)) + ", x_neg);\n"
                "  } else if (y_inf || x == 0.0) {\n"
                "    r = " + pio2.hi + ";\n"
                "  } else if (x_inf) {\n"
                "    r = select(0.0, " + pi.hi + ", x_neg);\n"
                "  } else {\n"
                "    let t: f32 = zy_f_atan(abs(y) / abs(x));\n"
                "    r = select(t, (" + pi.hi + " - t) + " + pi.lo + ", x_neg);\n"
                "  }\n"
                "  return select(r, -r, (bitcast<u32>(y) & 0x80000000u) != 0u);\n"
                "}\n";
       }},
      // C's pow, special values included (C99 F.9.4.4), as exp2(y log2 |x|).
      {"zy_f_pow", {"zy_f_exp", "zy_f_log"}, [] {
         return "fn zy_f_pow(x: f32, y: f32) -> f32 {\n"
                "  let inf: f32 = zy_f_from_bits(0x7f800000u);\n"
                "  if (y == 0.0 || x == 1.0) { return 1.0; }\n"
                "  if (zy_f_is_nan(x) || zy_f_is_nan(y)) { return x + y; }\n"
                "  let y_inf: bool = abs(y) == inf;\n"
                "  let y_odd: bool = !y_inf && trunc(y) == y && trunc(abs(y) * 0.5) != abs(y) * 0.5;\n"
                "  if (y_inf) {\n"
                "    if (abs(x) == 1.0) { return 1.0; }\n"
                "    return select(0.0, inf, (abs(x) < 1.0) == (y < 0.0));\n"
                "  }\n"
                "  let neg: bool = (bitcast<u32>(x) & 0x80000000u) != 0u;\n"
                "  if (x == 0.0) {\n"
                "    if (y < 0.0) { return select(inf, select(inf, -inf, neg), y_odd); }\n"
                "    return select(0.0, x, y_odd);\n"
                "  }\n"
                "  if (abs(x) == inf) {\n"
                "    if (x > 0.0) { return select(0.0, inf, y > 0.0); }\n"
                "    if (y > 0.0) { return select(inf, -inf, y_odd); }\n"
                "    return select(0.0, zy_f_from_bits(0x80000000u), y_odd);\n"
                "  }\n"
                "  if (x < 0.0 && trunc(y) != y) { return zy_f_nan(); }\n"
                "  let r: f32 = zy_f_exp2(y * zy_f_log2(abs(x)));\n"
                "  return select(r, -r, x < 0.0 && y_odd);\n"
                "}\n";
       }},
      // The activations in the reference's forms: sigmoid e / (1 + e) below
      // 0 (e = exp(-|x|), reaching the subnormals), -0 at -inf for the
      // others; gelu as 0.5 x erfc(-x / sqrt(2)) (no cancellation in the
      // negative tail: support/normal_tail), with x^2 / 2 in three exact
      // parts, so that exp(-x^2 / 2) keeps its accuracy.
      {"zy_f_activations", {"zy_f_exp"}, [] {
         using namespace normal_tail;
         std::vector<long double> erf_series(std::rbegin(kErfSeries), std::rend(kErfSeries));
         std::vector<long double> erfcx(std::rbegin(kErfcxPoly), std::rend(kErfcxPoly));
         return "fn zy_f_sigmoid(x: f32) -> f32 {\n"
                "  let e: f32 = zy_f_exp(-abs(x));\n"
                "  return select(1.0, e, x < 0.0) / (1.0 + e);\n"
                "}\n"
                "fn zy_f_at_minus_inf(x: f32) -> bool { return bitcast<u32>(x) == 0xff800000u; }\n"
                "fn zy_f_silu(x: f32) -> f32 {\n"
                "  if (zy_f_at_minus_inf(x)) { return zy_f_from_bits(0x80000000u); }\n"
                "  let e: f32 = zy_f_exp(-abs(x));\n"
                "  return x * select(1.0, e, x < 0.0) / (1.0 + e);\n"
                "}\n"
                "fn zy_f_gelu_tanh(x: f32) -> f32 {\n"
                "  if (zy_f_at_minus_inf(x)) { return zy_f_from_bits(0x80000000u); }\n"
                "  return x / (1.0 + zy_f_exp(" + f(-2 * 0.79788456080286535588L) + " * (x + " + f(0.044715L) + " * x * x * x)));\n"
                "}\n"
                "fn zy_f_gelu(x: f32) -> f32 {\n"
                "  if (zy_f_at_minus_inf(x) || zy_f_is_nan(x)) { return select(zy_f_from_bits(0x80000000u), x, zy_f_is_nan(x)); }\n"
                "  let s: f32 = x * " + f(0.70710678118654752440L) + ";\n"
                "  let z: f32 = abs(s);\n"
                "  if (z < " + f(kErfSeriesEnd) + ") { return 0.5 * x * (1.0 + s * " + horner("(s * s)", erf_series) + "); }\n"
                "  if (z > " + f(kErfcxLast) + ") { return select(x, zy_f_from_bits(0x80000000u), x < 0.0); }\n"
                "  let xh: f32 = bitcast<f32>(bitcast<u32>(x) & 0xfffff000u);\n"
                "  let xl: f32 = x - xh;\n"
                "  let ez: f32 = zy_f_exp(-0.5 * (xh * xh)) * zy_f_exp(-(xh * xl + 0.5 * (xl * xl)));\n"
                "  let u: f32 = (1.0 / (2.0 + z) - " + f(kErfcxCenter) + ") * " + f(1 / kErfcxHalfWidth) + ";\n"
                "  let erfc: f32 = ez * " + horner("u", erfcx) + ";\n"
                "  return 0.5 * x * select(2.0 - erfc, erfc, x < 0.0);\n"
                "}\n";
       }},
      // x P(x^2) / Q(x^2), the rational of LLVM's lowering (the CPU's erf).
      {"zy_f_erf", {}, [] {
         return "fn zy_f_erf(x: f32) -> f32 {\n"
                "  let d: f32 = clamp(x, -3.92, 3.92);\n"
                "  let s: f32 = d * d;\n"
                "  let p: f32 = ((((2.0428020050672346e-06 * s + 0.0002857252011551452) * s + 0.00380419366925265) * s"
                " + 0.05286758831280999) * s + 0.19130654475081452) * s + 1.1283791670955126;\n"
                "  let q: f32 = ((((3.806039534569143e-05 * s + 0.0011718445442006392) * s + 0.015046480707136246) * s"
                " + 0.11448093915405412) * s + 0.5028736534848581) * s + 1.0;\n"
                "  if (x != x) { return x; }\n"
                "  return d * p / q;\n"
                "}\n";
       }},
  };
  return all;
}

// The helper that defines function `fn` (a helper's own name names it).
const char* defining(const std::string& fn) {
  static const std::map<std::string, std::string> owner = {
      {"zy_f_fma", "zy_f_fma"},       {"zy_f_fmod", "zy_f_fmod"},   {"zy_f_exp", "zy_f_exp"},   {"zy_f_exp2", "zy_f_exp"},
      {"zy_f_tanh", "zy_f_hyperbolic"}, {"zy_f_sinh", "zy_f_hyperbolic"}, {"zy_f_cosh", "zy_f_hyperbolic"},
      {"zy_f_log", "zy_f_log"},       {"zy_f_log2", "zy_f_log"},    {"zy_f_log10", "zy_f_log"}, {"zy_f_sin", "zy_f_trig"},
      {"zy_f_cos", "zy_f_trig"},      {"zy_f_tan", "zy_f_trig"},    {"zy_f_atan", "zy_f_atan"}, {"zy_f_asin", "zy_f_atan"},
      {"zy_f_acos", "zy_f_atan"},     {"zy_f_atan2", "zy_f_atan"},  {"zy_f_pow", "zy_f_pow"},   {"zy_f_erf", "zy_f_erf"},
      {"zy_f_sigmoid", "zy_f_activations"}, {"zy_f_silu", "zy_f_activations"}, {"zy_f_gelu", "zy_f_activations"},
      {"zy_f_gelu_tanh", "zy_f_activations"}};
  auto it = owner.find(fn);
  return it == owner.end() ? fn.c_str() : it->second.c_str();
}

}  // namespace

const char* shader_f32_function(MathFn fn) {
  switch (fn) {
    case MathFn::Sin: return "zy_f_sin";
    case MathFn::Cos: return "zy_f_cos";
    case MathFn::Tan: return "zy_f_tan";
    case MathFn::Asin: return "zy_f_asin";
    case MathFn::Acos: return "zy_f_acos";
    case MathFn::Atan: return "zy_f_atan";
    case MathFn::Sinh: return "zy_f_sinh";
    case MathFn::Cosh: return "zy_f_cosh";
    case MathFn::Tanh: return "zy_f_tanh";
    case MathFn::Exp: return "zy_f_exp";
    case MathFn::Exp2: return "zy_f_exp2";
    case MathFn::Log: return "zy_f_log";
    case MathFn::Log2: return "zy_f_log2";
    case MathFn::Log10: return "zy_f_log10";
    case MathFn::Erf: return "zy_f_erf";
    case MathFn::Pow: return "zy_f_pow";
    case MathFn::Atan2: return "zy_f_atan2";
    case MathFn::Fma: return "zy_f_fma";
    case MathFn::Sigmoid: return "zy_f_sigmoid";
    case MathFn::Silu: return "zy_f_silu";
    case MathFn::Gelu: return "zy_f_gelu";
    case MathFn::GeluTanh: return "zy_f_gelu_tanh";
    default: return nullptr;
  }
}

std::string shader_f32_library(const std::set<std::string>& names, ShaderLanguage language) {
  std::set<std::string> wanted;
  for (const std::string& n : names) wanted.insert(defining(n));
  // Kernels ask for few distinct sets, and translating one to GLSL or MSL
  // runs regular expressions over all of its text: each set is written once
  // per language and process.
  static std::mutex mutex;
  static std::map<std::pair<ShaderLanguage, std::set<std::string>>, std::string> written;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(language, wanted);
  if (auto it = written.find(key); it != written.end()) return it->second;
  std::string wgsl = write_helpers(helpers(), wanted, "shader f32 math");
  std::string text = wgsl;
  if (language == ShaderLanguage::Glsl) text = wgsl_to_glsl(wgsl);
  if (language == ShaderLanguage::Msl) text = wgsl_to_msl(wgsl);
  return written.emplace(std::move(key), std::move(text)).first->second;
}

}  // namespace zyntax::codegen
