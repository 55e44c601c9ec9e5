// The parity cases every backend runs against the reference executor: one
// kernel of each kind (element-wise, math, f16/bf16, integers, saturating
// casts, broadcasts, reductions, argmin/argmax, matmul, softmax, layernorm,
// shared arrays, guards, tile kernels, attention, flash attention, scatter
// updates, runtime errors), each on random inputs of six shape variants (odd sizes, 1,
// non-square; NaN and -inf in one).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/registry.hpp"
#include "runtime/device.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"
#include "kernel_source.hpp"

namespace zyntax::testing {

// Identical, or for `approximate` kernels |a - b| <= 1e-4 |b| + 1e-5; NaN
// and infinities must match either way.
inline bool agree(const Tensor& a, const Tensor& b, bool approximate, std::string* where) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    *where = "shape/dtype " + shape_str(a.shape()) + " vs " + shape_str(b.shape());
    return false;
  }
  if (std::memcmp(a.data(), b.data(), a.nbytes()) == 0) return true;
  for (int64_t i = 0; i < a.numel(); ++i) {
    Scalar x = a.get(i), y = b.get(i);
    bool both_nan = is_float(a.dtype()) && std::isnan(x.f) && std::isnan(y.f);
    bool close = approximate && is_float(a.dtype()) && std::isfinite(x.f) && std::isfinite(y.f) &&
                 std::fabs(x.f - y.f) <= 1e-4 * std::fabs(y.f) + 1e-5;
    if (!both_nan && !close && x.str() != y.str()) {
      *where = "element " + std::to_string(i) + ": " + x.str() + " vs " + y.str();
      return false;
    }
  }
  return true;
}

struct Case {
  const char* name;
  const char* source;  // `DT` in the source stands for the cases's dtype
  std::vector<int> ranks;
  DType dtype = DType::F32;
  bool approximate = false;  // goes through f32 exp or tanh, or a running sum
  bool tf32_inputs = false;  // inputs rounded to TF32: a @precision(tf32) product is then exact
};

// Shapes per rank: the same few sizes in every position.
inline std::vector<Shape> shapes_for(int rank, int variant) {
  // Smaller sizes for many axes keep the reference executor quick.
  static const int64_t kSizes[] = {1, 3, 17, 127, 64, 5};
  static const int64_t kSmall[] = {1, 3, 17, 7, 2, 5};
  const int64_t* sizes = rank >= 3 ? kSmall : kSizes;
  Shape s;
  for (int a = 0; a < rank; ++a) s.push_back(sizes[(variant + a * 2) % 6]);
  return {s};
}

inline const Case kParityCases[] = {
    {"relu", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = relu(x[i])\n }\n}", {1}},
    // LLVM 19 folded relu's compare through abs (relu(abs(x)) gave 0 for x < 0).
    {"relu_of_abs", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
                    "  out[i] = relu(abs(x[i])) + relu(-abs(x[i])) * 3.0 + sign(abs(x[i]))\n }\n}", {1}},
    {"mul_add", "def f(x: tensor[n, DT], y: tensor[n, DT]) {\n return compute(x, y) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * y[i] + 1.0\n }\n}", {1, 1}},
    {"math", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
             "  out[i] = exp(x[i]) + tanh(x[i]) * gelu(x[i]) - sigmoid(x[i]) / (1.0 + abs(x[i])) + rsqrt(abs(x[i]) + 1.0)"
             " + max(x[i], 0.5) + min(x[i], -0.5) + floor(x[i]) + sqrt(abs(x[i])) + erf(x[i]) + silu(x[i]) + gelu_tanh(x[i]) + fma(x[i], x[i], -0.25)\n }\n}",
     {1}, DType::F32, true},
    {"math_f64", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = log(abs(x[i]) + 1e-3) * 2.5 + pow(abs(x[i]), 1.5) + x[i] % 0.7 + fma(x[i], 1.25, x[i] * 0.5)\n }\n}",
     {1}, DType::F64},
    // Every float operator on every pair of special values (signed zeros,
    // infinities, NaN, quotients past 2^24), with run-time operands and with
    // literal ones that shader compilers must not fold into something else:
    // bit for bit. atan2 and ** within the approximate bound, but NaN and
    // infinities exactly.
    {"ieee_operators", "def f(x: tensor[n, DT]) {\n return compute(x) {\n  for i in 0..n, j in 0..12:\n   var a = 0.0\n   if i % 12 == 1:\n    a = -0.0\n   if i % 12 == 2:\n    a = 1.0\n   if i % 12 == 3:\n    a = -1.0\n   if i % 12 == 4:\n    a = 2.5\n   if i % 12 == 5:\n    a = -7.5\n   if i % 12 == 6:\n    a = 1e10\n   if i % 12 == 7:\n    a = 3.0\n   if i % 12 == 8:\n    a = 1.0 / 0.0\n   if i % 12 == 9:\n    a = -1.0 / 0.0\n   if i % 12 == 10:\n    a = 0.0 / 0.0\n   if i % 12 == 11:\n    a = 0.5\n   var b = 0.0\n   if j == 1:\n    b = -0.0\n   if j == 2:\n    b = 1.0\n   if j == 3:\n    b = -1.0\n   if j == 4:\n    b = 2.5\n   if j == 5:\n    b = -7.5\n   if j == 6:\n    b = 1e10\n   if j == 7:\n    b = 3.0\n   if j == 8:\n    b = 1.0 / 0.0\n   if j == 9:\n    b = -1.0 / 0.0\n   if j == 10:\n    b = 0.0 / 0.0\n   if j == 11:\n    b = 0.5\n   out[i, j * 11 + 0] = a + b\n   out[i, j * 11 + 1] = a - b\n   out[i, j * 11 + 2] = a * b\n   out[i, j * 11 + 3] = a / b\n   out[i, j * 11 + 4] = a % b\n   out[i, j * 11 + 5] = min(a, b)\n   out[i, j * 11 + 6] = max(a, b)\n   out[i, j * 11 + 7] = a / 0.0\n   out[i, j * 11 + 8] = a / -0.0\n   out[i, j * 11 + 9] = a % 0.0\n   out[i, j * 11 + 10] = a % -0.5\n }\n}", {1}},
    {"ieee_functions", "def f(x: tensor[n, DT]) {\n return compute(x) {\n  for i in 0..n, j in 0..12:\n   var a = 0.0\n   if i % 12 == 1:\n    a = -0.0\n   if i % 12 == 2:\n    a = 1.0\n   if i % 12 == 3:\n    a = -1.0\n   if i % 12 == 4:\n    a = 2.5\n   if i % 12 == 5:\n    a = -7.5\n   if i % 12 == 6:\n    a = 1e10\n   if i % 12 == 7:\n    a = 3.0\n   if i % 12 == 8:\n    a = 1.0 / 0.0\n   if i % 12 == 9:\n    a = -1.0 / 0.0\n   if i % 12 == 10:\n    a = 0.0 / 0.0\n   if i % 12 == 11:\n    a = 0.5\n   var b = 0.0\n   if j == 1:\n    b = -0.0\n   if j == 2:\n    b = 1.0\n   if j == 3:\n    b = -1.0\n   if j == 4:\n    b = 2.5\n   if j == 5:\n    b = -7.5\n   if j == 6:\n    b = 1e10\n   if j == 7:\n    b = 3.0\n   if j == 8:\n    b = 1.0 / 0.0\n   if j == 9:\n    b = -1.0 / 0.0\n   if j == 10:\n    b = 0.0 / 0.0\n   if j == 11:\n    b = 0.5\n   out[i, j * 4 + 0] = atan2(a, b)\n   out[i, j * 4 + 1] = a ** b\n   out[i, j * 4 + 2] = atan2(a, -0.0)\n   out[i, j * 4 + 3] = atan2(-0.0, b)\n }\n}", {1}, DType::F32, true},
    // Operands a shader compiler comes to know itself (an index of a
    // one-element axis, a loop it unrolls): zero there, with NaN, infinities
    // and signed zeros on the other side, bit for bit.
    {"ieee_known_zero_operands", "def f(x: tensor[n, DT]) {\n return compute(x) {\n  for i in 0..n, j in 0..1:\n   var a = 0.0\n   if i % 8 == 1:\n    a = -0.0\n"
                                 "   if i % 8 == 2:\n    a = 1.0 / 0.0\n   if i % 8 == 3:\n    a = -1.0 / 0.0\n   if i % 8 == 4:\n    a = 0.0 / 0.0\n   if i % 8 == 5:\n    a = -2.5\n"
                                 "   if i % 8 == 6:\n    a = 3.0\n   if i % 8 == 7:\n    a = x[i]\n   let z = DT(j)\n"
                                 "   out[i, 0] = a * z\n   out[i, 1] = fma(a, z, -0.0)\n   out[i, 2] = a + z\n   out[i, 3] = a / z\n   out[i, 4] = z / a\n"
                                 "   out[i, 5] = a % z\n   out[i, 6] = a - -z\n   out[i, 7] = a * -z\n   var s = 1.0\n   for k in 0..2:\n    s = s * (a * DT(k))\n   out[i, 8] = s\n }\n}", {1}},
    // Float vars a driver comes to know once it unrolls their loop (an
    // accumulator from 0.0 or 1.0): NaN and infinities in x still reach them.
    {"float_vars_known_to_the_driver", "def f(x: tensor[n, DT]) {\n return compute(x) {\n  for i in 0..n:\n   var s = 0.0\n   var p = 1.0\n"
                                       "   for k in 0..2:\n    s = s * x[(i + k) % n]\n    p = p * x[(i + k) % n] - p * x[(i + k) % n]\n"
                                       "   out[i] = s + p\n }\n}", {1}},
    // A condition as a number times a value: 0 times an infinity is NaN (a
    // driver may rewrite c * x as c ? x : 0).
    {"condition_times_value", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
                              "  out[i] = DT(x[i] > 0.0) * x[i] + DT(x[i] < 0.5) * (x[i] * 3.0)\n }\n}", {1}},
    // fma with a literal zero factor and a factor the driver may know
    // (infinite where i % 3 == 0): inf times zero is NaN, whichever factor
    // the zero is, and whatever the driver folds.
    {"fma_of_known_factor_and_zero", "def f(x: tensor[n, DT]) {\n return compute(x) {\n  for i in 0..n, j in 0..1:\n   let a = floor(2.1 / DT(i % 3))\n"
                                     "   out[i, 0] = fma(a, -0.0, 0.303)\n   out[i, 1] = fma(0.0, a, x[i])\n   out[i, 2] = fma(a, DT(j), 0.5)\n"
                                     "   out[i, 3] = fma(DT(j), a, -0.0)\n }\n}", {1}},
    // Zero less a value: -a, but +0 where the value is a zero (a driver
    // folding 0 - a into -a gives -0, and a division by it the wrong infinity).
    {"zero_less_value", "def f(x: tensor[n, DT]) {\n return compute(x) {\n  for i in 0..n, j in 0..1:\n   var a = x[i]\n   if i % 4 == 1:\n    a = 0.0\n"
                        "   if i % 4 == 2:\n    a = -0.0\n   let z = DT(j)\n   out[i, 0] = 1.0 / (0.0 - a)\n   out[i, 1] = 1.0 / (z - a)\n"
                        "   out[i, 2] = 1.0 / (-0.0 - a)\n   out[i, 3] = -1.0 / (DT(i64(0.5)) - floor(a * 0.0))\n }\n}", {1}},
    // One value less itself, or plus its negation: NaN where the value is
    // infinite or NaN (a driver that sees one value may fold it to 0).
    {"value_less_itself", "def f(x: tensor[n, DT]) {\n return compute(x) {\n  for i in 0..n, j in 0..1:\n   var a = x[i]\n   if i % 4 == 1:\n"
                          "    a = 1.0 / 0.0\n   if i % 4 == 2:\n    a = 0.0 / 0.0\n   if i % 4 == 3:\n    a = -1.0 / 0.0\n"
                          "   out[i, 0] = a - a\n   out[i, 1] = x[i] - x[i]\n   out[i, 2] = a + -a\n   out[i, 3] = -a + a\n }\n}", {1}},
    {"f16", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * x[i] + 0.1\n }\n}", {1}, DType::F16},
    {"bf16", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 3.0 - x[i] / 7.0\n }\n}", {1}, DType::BF16},
    {"int_ops", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
                "  out[i] = (x[i] * 7 + 3) / 2 - x[i] % 3 + max(x[i], 0)\n }\n}", {1}, DType::I32},
    {"cast_sat", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = i8(x[i] * 100.0)\n }\n}", {1}},
    {"broadcast", "def f(m: tensor[r, c, DT], v: tensor[c, DT]) {\n return compute(m, v) {\n @kernel elementwise\n for i in 0..r, j in 0..c:\n  out[i, j] = m[i, j] * v[j]\n }\n}",
     {2, 1}},
    {"reduce_sum", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel reduce(+)\n for i in 0..n:\n  yield x[i] * x[i]\n }\n}", {1}},
    {"reduce_max", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel reduce(max)\n for i in 0..n:\n  yield x[i]\n }\n}", {1}},
    {"row_sums", "def f(m: tensor[r, c, DT]) {\n return compute(m) {\n @kernel reduce(+, axis=1)\n for i in 0..r, j in 0..c:\n  yield m[i, j]\n }\n}", {2}},
    {"col_min", "def f(m: tensor[r, c, DT]) {\n return compute(m) {\n @kernel reduce(min, axis=0)\n for i in 0..r, j in 0..c:\n  yield m[i, j]\n }\n}", {2}},
    {"argmax", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel reduce(argmax)\n for i in 0..n:\n  yield (x[i], i)\n }\n}", {1}},
    {"argmin_rows", "def f(m: tensor[r, c, DT]) {\n return compute(m) {\n @kernel reduce(argmin, axis=1)\n for i in 0..r, j in 0..c:\n  yield (m[i, j], j)\n }\n}", {2}},
    {"matmul", "def f(A: tensor[M, K, DT], B: tensor[K, N, DT]) {\n return compute(A, B) {\n @kernel matmul\n for i in 0..M, j in 0..N:\n"
               "  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j]\n  out[i, j] = sum\n }\n}",
     {2, 2}},
    // On tensor cores: bf16 factors with f32 sums, and f32 ones read as TF32.
    {"matmul_bf16", "def f(A: tensor[M, K, DT], B: tensor[K, N, DT]) {\n return compute(A, B) {\n @kernel matmul\n for i in 0..M, j in 0..N:\n"
                    "  var sum: f32 = 0.0\n  for k in 0..K:\n   sum += f32(A[i, k]) * f32(B[k, j])\n  out[i, j] = sum\n }\n}",
     {2, 2}, DType::BF16, true},
    // A bf16 result, as training writes it: the sums rounded once, at the store.
    {"matmul_bf16_out", "def f(A: tensor[M, K, DT], B: tensor[K, N, DT]) {\n return compute(A, B) {\n @kernel matmul\n for i in 0..M, j in 0..N:\n"
                        "  var sum: f32 = 0.0\n  for k in 0..K:\n   sum += f32(A[i, k]) * f32(B[k, j])\n  out[i, j] = DT(sum)\n }\n}",
     {2, 2}, DType::BF16, true},
    {"matmul_tf32", "def f(A: tensor[M, K, DT], B: tensor[K, N, DT]) {\n return compute(A, B) {\n @kernel matmul\n @precision(tf32)\n"
                    " for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j]\n  out[i, j] = sum\n }\n}",
     {2, 2}, DType::F32, true, true},
    {"softmax_rows", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n  for j in 0..c:\n   m = max(m, x[i, j])\n"
                     "  var s = 0.0\n  for j in 0..c:\n   s += exp(x[i, j] - m)\n  for j in 0..c:\n   out[i, j] = exp(x[i, j] - m) / s\n }\n}",
     {2}, DType::F32, true},
    {"layernorm", "def f(x: tensor[r, c, DT], g: tensor[c, DT]) {\n return compute(x, g) {\n @kernel fused\n for b in 0..r:\n  var mean = 0.0\n  for i in 0..c:\n   mean += x[b, i]\n"
                  "  mean /= c\n  var var = 0.0\n  for i in 0..c:\n   let d = x[b, i] - mean\n   var += d * d\n  var /= c\n  let inv = rsqrt(var + 1e-5)\n"
                  "  for i in 0..c:\n   out[b, i] = (x[b, i] - mean) * inv * g[i]\n }\n}",
     {2, 1}, DType::F32, true},
    {"shared_ffn", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n for b in 0..r:\n  shared var up[c]\n  for i in 0..c:\n   up[i] = x[b, i] * 2.0\n"
                   "  barrier()\n  for i in 0..c:\n   var s = 0.0\n   for j in 0..c:\n    s += up[j]\n   out[b, i] = s - up[i]\n }\n}",
     {2}, DType::F32, true},
    {"guarded", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n"
                "  if i > 0 and x[i - 1] > 0.0:\n   out[i] = x[i - 1]\n  else:\n   out[i] = where(x[i] > 0.0, x[i], -x[i])\n }\n}",
     {1}},
    // Tile kernels: scalarised into loops, then compiled.
    {"softmax_tiles", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel fused\n let m = reduce(max, x)\n let e = exp(x - m)\n"
                      " out = e / reduce(+, e)\n }\n}", {1}, DType::F32, true},
    {"row_tiles", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n let m = row_max(x)\n let e = exp(x - m)\n"
                  " out = e / row_sum(e)\n }\n}", {2}, DType::F32, true},
    {"attention_dot", "def f(Q: tensor[b, h, s, d, DT], K: tensor[b, h, s, d, DT], V: tensor[b, h, s, d, DT]) {\n return compute(Q, K, V) {\n"
                      " @kernel attention\n for i0 in 0..b, i1 in 0..h, i in 0..s:\n  var mx = -inf\n  for j in 0..s:\n"
                      "   mx = max(mx, dot(Q[i0, i1, i], K[i0, i1, j]))\n  var den = 0.0\n  for j in 0..s:\n"
                      "   den += exp(dot(Q[i0, i1, i], K[i0, i1, j]) - mx)\n  for e in 0..d:\n   var acc = 0.0\n   for j in 0..s:\n"
                      "    acc += exp(dot(Q[i0, i1, i], K[i0, i1, j]) - mx) / den * V[i0, i1, j, e]\n   out[i0, i1, i, e] = acc\n }\n}",
     {4, 4, 4}, DType::F32, true},
    {"flash", "def f(q: tensor[b, h, s, d, DT], k: tensor[b, h, s, d, DT], v: tensor[b, h, s, d, DT]) {\n return compute(q, k, v) {\n"
              " @kernel flash_attention\n for bb in 0..b, hh in 0..h:\n  for q0 in 0..s step 4:\n   let rows = min(4, s - q0)\n"
              "   var m = -inf\n   var l = 0.0\n   var o = zeros(rows, d)\n   let Qb = q[bb, hh, q0:q0 + 4]\n"
              "   for k0 in 0..s step 4:\n    let Kb = k[bb, hh, k0:k0 + 4]\n    let Vb = v[bb, hh, k0:k0 + 4]\n"
              "    let S = Qb @ transpose(Kb) / sqrt(d)\n    let m_new = max(m, row_max(S))\n"
              "    let l_new = exp(m - m_new) * l + row_sum(exp(S - m_new))\n    o = exp(m - m_new) * o + exp(S - m_new) @ Vb\n"
              "    m = m_new\n    l = l_new\n   out[bb, hh, q0:q0 + 4] = o / l\n }\n}",
     {4, 4, 4}, DType::F32, true},
    {"argmax_tile", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  out[i] = reduce(argmax, x[i])\n }\n}", {2}},
    // Updates at indices read from data: atomic where iterations run at once.
    // Sums of whole numbers, so that any order gives the same result.
    {"scatter_add", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n out = zeros(4, c)\n for i in 0..r, j in 0..c:\n"
                    "  let b = i64(abs(x[i, 0]) * 3.0) % 4\n  out[b, j] += floor(x[i, j] * 8.0)\n }\n}", {2}},
    {"scatter_max", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel fused\n out = zeros(4)\n for i in 0..n:\n"
                    "  let b = i64(abs(x[i]) * 3.0) % 4\n  out[b] = max(out[b], x[i])\n }\n}", {1}},
    {"scatter_min_bf16", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel fused\n out = zeros(3)\n for i in 0..n:\n"
                         "  out[i64(abs(x[i]) * 2.0) % 3] = min(out[i64(abs(x[i]) * 2.0) % 3], x[i])\n }\n}", {1}, DType::BF16},
    {"histogram_int", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel fused\n out = DT(zeros(5))\n for i in 0..n:\n"
                      "  out[i64(abs(x[i])) % 5] -= x[i] * 3\n }\n}", {1}, DType::I32},
    {"scatter_max_int", "def f(x: tensor[r, c, DT]) {\n return compute(x) {\n @kernel fused\n out = DT(zeros(3, c))\n for i in 0..r, j in 0..c:\n"
                        "  let b = i64(abs(x[i, j])) % 3\n  out[b, j] = max(out[b, j], x[i, j] * 5 - 2)\n }\n}", {2}, DType::I64},
    {"scatter_out_of_range", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel fused\n out = zeros(2)\n for i in 0..n:\n"
                             "  out[i64(x[i] * 3.0)] += 1.0\n }\n}", {1}},
    {"out_of_bounds", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i + 1]\n }\n}", {1}},
    {"division_by_zero", "def f(x: tensor[n, DT]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = 10 / (x[i] - x[i])\n }\n}",
     {1}, DType::I64},
};

// The kernel's source with the case's dtype.
inline std::string parity_source(const Case& c) {
  std::string src = c.source;
  for (size_t at; (at = src.find("DT")) != std::string::npos;) src.replace(at, 2, dtype_name(c.dtype));
  return src;
}

// Random inputs of shape variant 0..5; variant 2 holds NaN and -inf.
inline std::vector<Tensor> parity_inputs(const Case& c, int variant, Random& rng) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.ranks.size(); ++i) {
    // Inputs of one case share their sizes so that dimensions agree.
    Shape s = shapes_for(c.ranks[i], variant)[0];
    if (c.ranks.size() > 1 && c.ranks[i] == c.ranks[0]) s = shapes_for(c.ranks[0], variant)[0];
    Tensor t = rand_normal(rng, DType::F32, s).astype(c.dtype);
    if (c.tf32_inputs)
      for (int64_t e = 0; e < t.numel(); ++e) t.data_as<float>()[e] = round_to_tf32(t.data_as<float>()[e]);
    if (variant == 2 && t.numel() > 2 && is_float(c.dtype)) {  // specials must propagate the same way
      t.set(0, Scalar::of_float(NAN, c.dtype));
      t.set(1, Scalar::of_float(-INFINITY, c.dtype));
    }
    inputs.push_back(t);
  }
  return inputs;
}

// The case on `device` and on the reference executor: the same error, or
// results that agree (within agree()'s bound where `approximate`).
inline void expect_matches_reference(Device& device, const Case& c, bool approximate) {
  cir::Kernel generic = kernel_of(parity_source(c));
  ASSERT_FALSE(generic.name.empty());
  CompiledCompute compiled(generic);
  Device* ref = device_registry().find("cpu:reference");
  Random rng(42);
  for (int variant = 0; variant < 6; ++variant) {
    std::vector<Tensor> inputs = parity_inputs(c, variant, rng);
    // The result, or the error the launch reports.
    auto launch = [&](Device* d, Tensor* result) -> std::string {
      try {
        *result = compiled.launch(*d, inputs, {}, {});
      } catch (const Error& e) {
        return e.what();
      } catch (const DataError& e) {
        return e.what();
      }
      return "";
    };
    Tensor want, got;
    std::string ref_error = launch(ref, &want), error = launch(&device, &got);
    ASSERT_EQ(ref_error, error) << c.name << " variant " << variant;
    if (!ref_error.empty()) continue;
    std::string where;
    EXPECT_TRUE(agree(want, got, approximate, &where)) << c.name << " variant " << variant << ": " << where;
  }
}

}  // namespace zyntax::testing
