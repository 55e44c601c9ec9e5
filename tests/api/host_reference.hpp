// Independent host implementations of the ops, in double, for the API tests:
// what each op must compute, written plainly (no zyntax code involved).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace zyntax::host {

using Vec = std::vector<double>;

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

inline Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

inline Vec matmul(const Vec& a, const Vec& b, size_t m, size_t k, size_t n) {
  Vec c(m * n, 0.0);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j)
      for (size_t p = 0; p < k; ++p) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

inline Vec transpose(const Vec& x, size_t rows, size_t cols) {
  Vec t(x.size());
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < cols; ++j) t[j * rows + i] = x[i * cols + j];
  return t;
}

inline Vec softmax(const Vec& x, size_t rows, size_t cols) {
  Vec y(x.size());
  for (size_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (size_t c = 0; c < cols; ++c) m = std::max(m, x[r * cols + c]);
    for (size_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
    for (size_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(x[r * cols + c] - m) / s;
  }
  return y;
}

inline Vec rms_norm(const Vec& x, const Vec& w, size_t groups, size_t dim, double eps) {
  Vec y(x.size());
  for (size_t g = 0; g < groups; ++g) {
    double ss = 0;
    for (size_t j = 0; j < dim; ++j) ss += x[g * dim + j] * x[g * dim + j];
    double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (size_t j = 0; j < dim; ++j) y[g * dim + j] = x[g * dim + j] * inv * w[j];
  }
  return y;
}

inline Vec layer_norm(const Vec& x, const Vec& gamma, const Vec& beta, size_t rows, size_t dim, double eps) {
  Vec y(x.size());
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (size_t j = 0; j < dim; ++j) mean += x[r * dim + j];
    mean /= dim;
    for (size_t j = 0; j < dim; ++j) var += (x[r * dim + j] - mean) * (x[r * dim + j] - mean);
    var /= dim;
    for (size_t j = 0; j < dim; ++j) y[r * dim + j] = (x[r * dim + j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
  }
  return y;
}

inline Vec embedding(const Vec& w, const std::vector<uint32_t>& ids, size_t dim) {
  Vec y(ids.size() * dim);
  for (size_t t = 0; t < ids.size(); ++t)
    for (size_t j = 0; j < dim; ++j) y[t * dim + j] = w[ids[t] * dim + j];
  return y;
}

// Causal attention with grouped-query heads; q [seq, nh, hd], k/v [total, nkv, hd];
// query i sees keys 0..start + i (start = total - seq for a KV cache, 0 otherwise).
inline Vec attention(const Vec& q, const Vec& k, const Vec& v, size_t seq, size_t total, size_t nh, size_t nkv, size_t hd) {
  Vec out(seq * nh * hd, 0.0);
  size_t group = nh / nkv, start = total - seq;
  double scale = 1.0 / std::sqrt(double(hd));
  for (size_t i = 0; i < seq; ++i)
    for (size_t h = 0; h < nh; ++h) {
      size_t kh = h / group;
      std::vector<double> s(start + i + 1);
      double m = -INFINITY, l = 0;
      for (size_t j = 0; j <= start + i; ++j) {
        double d = 0;
        for (size_t e = 0; e < hd; ++e) d += q[(i * nh + h) * hd + e] * k[(j * nkv + kh) * hd + e];
        s[j] = d * scale;
        m = std::max(m, s[j]);
      }
      for (double& x : s) l += std::exp(x - m);
      for (size_t j = 0; j <= start + i; ++j)
        for (size_t e = 0; e < hd; ++e) out[(i * nh + h) * hd + e] += std::exp(s[j] - m) / l * v[(j * nkv + kh) * hd + e];
    }
  return out;
}

// Per-position -log softmax(logits)[target], 0 at padding; and the count.
inline double cross_entropy(const Vec& logits, const std::vector<uint32_t>& t, size_t vocab, uint32_t pad) {
  double total = 0;
  size_t count = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    if (t[r] == pad) continue;
    double m = -INFINITY, s = 0;
    for (size_t c = 0; c < vocab; ++c) m = std::max(m, logits[r * vocab + c]);
    for (size_t c = 0; c < vocab; ++c) s += std::exp(logits[r * vocab + c] - m);
    total += std::log(s) + m - logits[r * vocab + t[r]];
    ++count;
  }
  return total / double(std::max<size_t>(count, 1));
}

// Rotary embedding, x [seq, heads, hd], positions offset + t.
inline Vec rope(const Vec& x, size_t seq, size_t heads, size_t hd, size_t offset) {
  Vec y(x.size());
  for (size_t t = 0; t < seq; ++t)
    for (size_t h = 0; h < heads; ++h)
      for (size_t p = 0; p < hd / 2; ++p) {
        double angle = double(offset + t) * std::pow(10000.0, -2.0 * double(p) / double(hd));
        size_t i = (t * heads + h) * hd + 2 * p;
        y[i] = x[i] * std::cos(angle) - x[i + 1] * std::sin(angle);
        y[i + 1] = x[i] * std::sin(angle) + x[i + 1] * std::cos(angle);
      }
  return y;
}

// 2-D convolution over NCHW x [b, ic, h, w] with weights [oc, ic, kh, kw],
// zero padding; `S` holds the sizes by the names of zyntax::Conv2dShape.
template <class S>
Vec conv2d(const Vec& x, const Vec& w, const Vec& bias, const S& s) {
  size_t oh = (s.height + 2 * s.pad_h - s.kernel_h) / s.stride_h + 1, ow = (s.width + 2 * s.pad_w - s.kernel_w) / s.stride_w + 1;
  Vec y(s.batch * s.out_channels * oh * ow);
  for (size_t n = 0; n < s.batch; ++n)
    for (size_t o = 0; o < s.out_channels; ++o)
      for (size_t i = 0; i < oh; ++i)
        for (size_t j = 0; j < ow; ++j) {
          double sum = bias[o];
          for (size_t c = 0; c < s.in_channels; ++c)
            for (size_t dy = 0; dy < s.kernel_h; ++dy)
              for (size_t dx = 0; dx < s.kernel_w; ++dx) {
                long iy = long(i * s.stride_h + dy) - long(s.pad_h), ix = long(j * s.stride_w + dx) - long(s.pad_w);
                if (iy < 0 || ix < 0 || iy >= long(s.height) || ix >= long(s.width)) continue;
                sum += x[((n * s.in_channels + c) * s.height + iy) * s.width + ix] *
                       w[((o * s.in_channels + c) * s.kernel_h + dy) * s.kernel_w + dx];
              }
          y[((n * s.out_channels + o) * oh + i) * ow + j] = sum;
        }
  return y;
}

}  // namespace zyntax::host
