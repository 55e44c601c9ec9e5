// The public C++ API, through the installed headers and libzyntax only:
// devices and buffers, traced element-wise kernels, every op against an
// independent double-precision host computation and against the reference
// executor (cpu:reference), backward ops against central finite
// differences in f64, AdamW against a step-by-step hand computation, and
// the errors for shapes that do not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "host_reference.hpp"
#include "zyntax/zyntax.hpp"

namespace {

using namespace zyntax;
using host::Vec;

// |got - want| <= tol * (|want| + 1) everywhere.
void expect_close(const std::vector<float>& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (std::fabs(want[i]) + 1.0)) << what << " element " << i;
}

// The devices each op runs on: every device here except the reference
// executor (it is what they are compared with, on small sizes).
std::vector<ComputeDevice> devices() {
  std::vector<ComputeDevice> out;
  for (const DeviceDescription& d : compute_devices())
    if (d.id != "cpu:reference") out.push_back(ComputeDevice::open(d.id));
  return out;
}

ComputeDevice reference() { return ComputeDevice::open("cpu:reference"); }

std::vector<ComputeDevice> devices_and_reference() {
  std::vector<ComputeDevice> all = devices();
  all.push_back(reference());
  return all;
}

// Sizes with odd and unit extents.
const size_t kSizes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 31, 65}, {2, 128, 3}};

// ------------------------------------------------------------ devices and buffers

TEST(Api, DevicesAreListedAndOpened) {
  std::vector<DeviceDescription> all = compute_devices();
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[0].id, "cpu");
  EXPECT_GT(all[0].cores, 0);
  ComputeDevice any = ComputeDevice::open("auto");
  EXPECT_FALSE(any.id().empty());
  EXPECT_EQ(ComputeDevice::open("cpu").description().type, "cpu");
  try {
    ComputeDevice::open("tpu:9");
    FAIL() << "opened a device that does not exist";
  } catch (const ComputeError& e) {
    EXPECT_NE(std::string(e.what()).find("device 'tpu:9' is not available (available: cpu"), std::string::npos) << e.what();
  }
  EXPECT_STREQ(version(), "0.1.0");
}

TEST(Api, BuffersRoundTripAndShareStorage) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Buffer a = dev.upload({1.5f, -2.0f, 3.25f});
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(a.element_type(), ElementType::F32);
  EXPECT_EQ(a.device(), "cpu");
  EXPECT_EQ(dev.download(a), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  Buffer ids = dev.upload_u32({7, 0, 4294967295u});
  EXPECT_EQ(ids.to_vector_u32(), (std::vector<uint32_t>{7, 0, 4294967295u}));
  EXPECT_THROW(a.to_vector_u32(), ShapeError);
  EXPECT_EQ(dev.alloc(4).to_vector(), std::vector<float>(4, 0.0f));
  // f16/bf16 storage: rounded to nearest even, read back as f32.
  Buffer h = dev.upload_as({1.0f + 1.0f / 4096, 65504.0f, 1e-8f}, ElementType::F16);
  EXPECT_EQ(h.element_type(), ElementType::F16);
  EXPECT_EQ(h.to_vector(), (std::vector<float>{1.0f, 65504.0f, 0.0f}));
  Buffer b16 = dev.upload_as({1.0f + 1.0f / 256, 3.0f}, ElementType::BF16);
  EXPECT_EQ(b16.to_vector(), (std::vector<float>{1.0f, 3.0f}));
  // Handles share; copy_buffer does not.
  Buffer same = a;
  Buffer copy = dev.copy_buffer(a);
  dev.zero_buffer(a);
  EXPECT_EQ(same.to_vector(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(copy.to_vector(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  dev.sync();
}

// ------------------------------------------------------------ element-wise

TEST(Api, ElementwiseFusesATracedExpression) {
  for (ComputeDevice& dev : devices()) {
    for (size_t n : {1u, 7u, 1000u, 4099u}) {
      std::vector<float> x = host::random_floats(n, 1), y = host::random_floats(n, 2);
      Buffer out = dev.elementwise({dev.upload(x), dev.upload(y)}, n, [](const std::vector<ExprId>& v) {
        ExprId s = v[0] * 0.5f + v[1];  // used twice: computed once
        return gelu(s) * s - exp(-abs(v[1])) / (1.0f + sigmoid(v[0])) + where(v[0] > 0.0f, 1.0f, -1.0f);
      });
      Vec want(n);
      for (size_t i = 0; i < n; ++i) {
        double s = double(x[i]) * 0.5 + y[i];
        double gelu = 0.5 * s * (1.0 + std::erf(s / std::sqrt(2.0)));
        want[i] = gelu * s - std::exp(-std::fabs(y[i])) / (1.0 + 1.0 / (1.0 + std::exp(-x[i]))) + (x[i] > 0 ? 1.0 : -1.0);
      }
      expect_close(out.to_vector(), want, 1e-5, dev.id() + " n=" + std::to_string(n));
    }
  }
}

TEST(Api, ElementwiseBroadcastsShortInputsAndHasSeveralOutputs) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  size_t rows = 5, dim = 7;
  std::vector<float> m = host::random_floats(rows * dim, 3), bias = host::random_floats(dim, 4);
  std::vector<Buffer> outs = dev.elementwise_multi({dev.upload(m), dev.upload(bias)}, rows * dim, [](const std::vector<ExprId>& v) {
    return std::vector<ExprId>{v[0] + v[1], v[0] * v[1], 2.0f};
  });
  ASSERT_EQ(outs.size(), 3u);
  std::vector<float> sum = outs[0].to_vector(), prod = outs[1].to_vector(), two = outs[2].to_vector();
  for (size_t i = 0; i < rows * dim; ++i) {
    EXPECT_EQ(sum[i], m[i] + bias[i % dim]);
    EXPECT_EQ(prod[i], m[i] * bias[i % dim]);
    EXPECT_EQ(two[i], 2.0f);
  }
  // u32 and f16 inputs are read as f32.
  Buffer ids = dev.upload_u32({1, 2, 3});
  Buffer half = dev.upload_as({0.5f, 0.25f, 2.0f}, ElementType::F16);
  EXPECT_EQ(dev.elementwise({ids, half}, 3, [](const std::vector<ExprId>& v) { return v[0] * v[1]; }).to_vector(),
            (std::vector<float>{0.5f, 0.5f, 6.0f}));
}

TEST(Api, ElementwiseRejectsInputsThatDoNotFit) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  try {
    dev.elementwise({dev.alloc(10), dev.alloc(3)}, 10, [](const std::vector<ExprId>& v) { return v[0] + v[1]; });
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "elementwise: argument inputs[1] has 3 elements, which neither equals nor divides numel = 10");
  }
}

// ------------------------------------------------------------ ops against the host and the reference

// Runs `op` on every device and on the reference executor; both must match `want`.
void check_op(const std::function<std::vector<float>(const ComputeDevice&)>& op, const Vec& want, double tol,
              const std::string& what) {
  for (const ComputeDevice& dev : devices()) expect_close(op(dev), want, tol, what + " on " + dev.id());
  expect_close(op(reference()), want, tol, what + " on cpu:reference");
}

TEST(Api, MatmulAndItsTransposedForms) {
  for (const auto& s : kSizes) {
    size_t m = s[0], k = s[1], n = s[2];
    std::vector<float> a = host::random_floats(m * k, 5), b = host::random_floats(k * n, 6);
    Vec A = host::to_double(a), B = host::to_double(b);
    std::string shape = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    double tol = 1e-5 * std::sqrt(double(k));
    check_op([&](const ComputeDevice& d) { return d.matmul(d.upload(a), d.upload(b), m, k, n).to_vector(); },
             host::matmul(A, B, m, k, n), tol, "matmul " + shape);
    Vec At = host::transpose(A, m, k);  // stored [k, m]
    std::vector<float> at(At.begin(), At.end());
    check_op([&](const ComputeDevice& d) { return d.matmul_transposed_a(d.upload(at), d.upload(b), m, k, n).to_vector(); },
             host::matmul(A, B, m, k, n), tol, "matmul_transposed_a " + shape);
    Vec Bt = host::transpose(B, k, n);  // stored [n, k]
    std::vector<float> bt(Bt.begin(), Bt.end());
    check_op([&](const ComputeDevice& d) { return d.matmul_transposed_b(d.upload(a), d.upload(bt), m, k, n).to_vector(); },
             host::matmul(A, B, m, k, n), tol, "matmul_transposed_b " + shape);
    std::vector<float> c0 = host::random_floats(m * n, 7);
    Vec want = host::matmul(A, B, m, k, n);
    for (size_t i = 0; i < want.size(); ++i) want[i] += c0[i];
    check_op([&](const ComputeDevice& d) {
      Buffer c = d.upload(c0);
      d.matmul_accumulate(c, d.upload(a), d.upload(b), m, k, n);
      return c.to_vector();
    }, want, tol, "matmul_accumulate " + shape);
    check_op([&](const ComputeDevice& d) { return d.transpose_2d(d.upload(a), m, k).to_vector(); }, At, 0, "transpose_2d " + shape);
  }
}

TEST(Api, RowOpsAndReductions) {
  for (const auto& s : kSizes) {
    size_t rows = s[0], dim = s[1];
    std::vector<float> x = host::random_floats(rows * dim, 8, 2.0f), w = host::random_floats(dim, 9),
                       b = host::random_floats(dim, 10);
    Vec X = host::to_double(x), W = host::to_double(w), B = host::to_double(b);
    std::string shape = std::to_string(rows) + "x" + std::to_string(dim);
    check_op([&](const ComputeDevice& d) { return d.softmax(d.upload(x), rows, dim).to_vector(); },
             host::softmax(X, rows, dim), 1e-5, "softmax " + shape);
    check_op([&](const ComputeDevice& d) { return d.rms_norm(d.upload(x), d.upload(w), rows, dim, 1e-5f).to_vector(); },
             host::rms_norm(X, W, rows, dim, 1e-5), 1e-5, "rms_norm " + shape);
    check_op([&](const ComputeDevice& d) { return d.layer_norm(d.upload(x), d.upload(w), d.upload(b), rows, dim, 1e-5f).to_vector(); },
             host::layer_norm(X, W, B, rows, dim, 1e-5), 1e-4, "layer_norm " + shape);
    Vec biased(X);
    for (size_t i = 0; i < biased.size(); ++i) biased[i] += B[i % dim];
    check_op([&](const ComputeDevice& d) { return d.bias_add(d.upload(x), d.upload(b), rows * dim, dim).to_vector(); }, biased, 1e-6,
             "bias_add " + shape);
    Vec twice(X);
    for (double& v : twice) v *= 2;
    check_op([&](const ComputeDevice& d) {
      Buffer dst = d.upload(x);
      d.add_assign(dst, d.upload(x));
      return dst.to_vector();
    }, twice, 0, "add_assign " + shape);
    // reduce_sum over each axis of [rows, dim, 3].
    std::vector<size_t> shape3 = {rows, dim, 3};
    std::vector<float> t = host::random_floats(rows * dim * 3, 11);
    for (size_t axis = 0; axis < 3; ++axis) {
      Vec want(rows * dim * 3 / shape3[axis], 0.0);
      for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < dim; ++j)
          for (size_t l = 0; l < 3; ++l) {
            size_t o = axis == 0 ? j * 3 + l : axis == 1 ? i * 3 + l : i * dim + j;
            want[o] += t[(i * dim + j) * 3 + l];
          }
      check_op([&](const ComputeDevice& d) { return d.reduce_sum(d.upload(t), shape3, axis).to_vector(); }, want, 1e-5,
               "reduce_sum axis " + std::to_string(axis) + " " + shape);
    }
  }
}

TEST(Api, EmbeddingLooksUpRowsAndReportsABadId) {
  size_t vocab = 11, dim = 5;
  std::vector<float> w = host::random_floats(vocab * dim, 12);
  std::vector<uint32_t> ids = {3, 0, 10, 3, 7};
  check_op([&](const ComputeDevice& d) { return d.embedding(d.upload(w), d.upload_u32(ids), ids.size(), dim).to_vector(); },
           host::embedding(host::to_double(w), ids, dim), 0, "embedding");
  ComputeDevice dev = ComputeDevice::open("cpu");
  try {
    // The op waits (it may fuse with the next); its error comes where its values are needed.
    Buffer rows = dev.embedding(dev.upload(w), dev.upload_u32({2, 11}), 2, dim);
    rows.to_vector();
    FAIL() << "an id past the vocabulary was accepted";
  } catch (const ComputeError& e) {
    EXPECT_NE(std::string(e.what()).find("embedding: index out of bounds: weight[11, 0]: axis 0 has size 11"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(dev.embedding(dev.upload(w), dev.upload({1.0f}), 1, dim), ShapeError);
}

// Convolutions with odd sizes, unit and larger strides, padding from none to
// more than the kernel's half, square and oblong kernels.
const Conv2dShape kConvs[] = {
    {.batch = 1, .in_channels = 1, .height = 1, .width = 1, .out_channels = 1, .kernel_h = 1, .kernel_w = 1},
    {.batch = 2, .in_channels = 3, .height = 7, .width = 9, .out_channels = 5, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1},
    {.batch = 1, .in_channels = 4, .height = 11, .width = 8, .out_channels = 3, .kernel_h = 3, .kernel_w = 3, .stride_h = 2,
     .stride_w = 2, .pad_h = 1, .pad_w = 1},
    {.batch = 3, .in_channels = 2, .height = 6, .width = 5, .out_channels = 2, .kernel_h = 5, .kernel_w = 3, .stride_h = 1,
     .stride_w = 2, .pad_h = 2, .pad_w = 0},
    {.batch = 2, .in_channels = 5, .height = 4, .width = 4, .out_channels = 7, .kernel_h = 1, .kernel_w = 1},
    {.batch = 1, .in_channels = 2, .height = 5, .width = 6, .out_channels = 3, .kernel_h = 2, .kernel_w = 3, .stride_h = 3,
     .stride_w = 1, .pad_h = 2, .pad_w = 2},
};

std::string conv_text(const Conv2dShape& s) {
  return "conv " + std::to_string(s.batch) + "x" + std::to_string(s.in_channels) + "x" + std::to_string(s.height) + "x" +
         std::to_string(s.width) + " * " + std::to_string(s.out_channels) + "x" + std::to_string(s.kernel_h) + "x" +
         std::to_string(s.kernel_w) + " stride " + std::to_string(s.stride_h) + "," + std::to_string(s.stride_w) + " pad " +
         std::to_string(s.pad_h) + "," + std::to_string(s.pad_w);
}

TEST(Api, Conv2dWithStridesPaddingAndOddSizes) {
  for (const Conv2dShape& s : kConvs) {
    std::vector<float> x = host::random_floats(s.batch * s.in_channels * s.height * s.width, 40),
                       w = host::random_floats(s.out_channels * s.in_channels * s.kernel_h * s.kernel_w, 41),
                       b = host::random_floats(s.out_channels, 42);
    Vec X = host::to_double(x), W = host::to_double(w), B = host::to_double(b);
    double tol = 1e-5 * std::sqrt(double(s.in_channels * s.kernel_h * s.kernel_w));
    check_op([&](const ComputeDevice& d) { return d.conv2d(d.upload(x), d.upload(w), d.upload(b), s).to_vector(); },
             host::conv2d(X, W, B, s), tol, conv_text(s));
    check_op([&](const ComputeDevice& d) { return d.conv2d(d.upload(x), d.upload(w), s).to_vector(); },
             host::conv2d(X, W, Vec(s.out_channels, 0.0), s), tol, conv_text(s) + " without bias");
  }
}

// ------------------------------------------------------------ gradients against finite differences

// d(sum(g * f(x))) / dx by central differences in f64.
Vec finite_difference(const std::function<Vec(const Vec&)>& f, const Vec& x, const Vec& g, double h = 1e-6) {
  Vec grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    Vec up = x, down = x;
    up[i] += h;
    down[i] -= h;
    Vec fu = f(up), fd = f(down);
    double s = 0;
    for (size_t j = 0; j < fu.size(); ++j) s += g[j] * (fu[j] - fd[j]);
    grad[i] = s / (2 * h);
  }
  return grad;
}

TEST(Api, SoftmaxBackwardMatchesFiniteDifferences) {
  for (const auto& s : kSizes) {
    size_t rows = s[0], cols = std::min<size_t>(s[1], 40);
    std::vector<float> x = host::random_floats(rows * cols, 13), g = host::random_floats(rows * cols, 14);
    Vec X = host::to_double(x), G = host::to_double(g);
    Vec want = finite_difference([&](const Vec& v) { return host::softmax(v, rows, cols); }, X, G);
    Vec y = host::softmax(X, rows, cols);
    std::vector<float> yf(y.begin(), y.end());
    check_op([&](const ComputeDevice& d) { return d.softmax_backward(d.upload(yf), d.upload(g), rows, cols).to_vector(); }, want,
             1e-4, "softmax_backward");
  }
}

// Rows and widths of the norms' backward tests: the sizes above, and more
// rows than the blocks the parameter gradients are summed in (131 = 43
// blocks of 3 and one of 2).
const size_t kNormSizes[][2] = {{1, 1}, {3, 5}, {17, 33}, {64, 31}, {2, 40}, {131, 7}};

TEST(Api, RmsNormBackwardMatchesFiniteDifferences) {
  for (const auto& s : kNormSizes) {
    size_t groups = s[0], dim = s[1];
    std::vector<float> x = host::random_floats(groups * dim, 15), w = host::random_floats(dim, 16),
                       g = host::random_floats(groups * dim, 17);
    Vec X = host::to_double(x), W = host::to_double(w), G = host::to_double(g);
    double eps = 1e-5;
    Vec want_dx = finite_difference([&](const Vec& v) { return host::rms_norm(v, W, groups, dim, eps); }, X, G);
    Vec want_dw = finite_difference([&](const Vec& v) { return host::rms_norm(X, v, groups, dim, eps); }, W, G);
    for (const ComputeDevice& d : devices()) {
      auto [dx, dw] = d.rms_norm_backward(d.upload(x), d.upload(w), d.upload(g), groups, dim, 1e-5f);
      expect_close(dx.to_vector(), want_dx, 1e-4, "rms_norm_backward dx on " + d.id());
      expect_close(dw.to_vector(), want_dw, 1e-4, "rms_norm_backward dw on " + d.id());
    }
  }
}

TEST(Api, LayerNormBackwardMatchesFiniteDifferences) {
  for (const auto& s : kNormSizes) {
    size_t rows = s[0], dim = s[1];
    std::vector<float> x = host::random_floats(rows * dim, 43, 2.0f), gamma = host::random_floats(dim, 44),
                       beta = host::random_floats(dim, 45), g = host::random_floats(rows * dim, 46);
    Vec X = host::to_double(x), Gm = host::to_double(gamma), Bt = host::to_double(beta), G = host::to_double(g);
    double eps = 1e-5;
    Vec want_dx = finite_difference([&](const Vec& v) { return host::layer_norm(v, Gm, Bt, rows, dim, eps); }, X, G);
    Vec want_dg = finite_difference([&](const Vec& v) { return host::layer_norm(X, v, Bt, rows, dim, eps); }, Gm, G);
    Vec want_db = finite_difference([&](const Vec& v) { return host::layer_norm(X, Gm, v, rows, dim, eps); }, Bt, G);
    std::string what = "layer_norm_backward " + std::to_string(rows) + "x" + std::to_string(dim);
    for (const ComputeDevice& d : devices_and_reference()) {
      auto [dx, dgamma, dbeta] = d.layer_norm_backward(d.upload(x), d.upload(gamma), d.upload(g), rows, dim, 1e-5f);
      expect_close(dx.to_vector(), want_dx, 1e-4, what + " dx on " + d.id());
      expect_close(dgamma.to_vector(), want_dg, 1e-4, what + " dgamma on " + d.id());
      expect_close(dbeta.to_vector(), want_db, 1e-4, what + " dbeta on " + d.id());
    }
  }
}

// No rows: nothing to normalise, and zero gradients for the parameters.
TEST(Api, NormBackwardsOfNoRows) {
  for (const ComputeDevice& d : devices_and_reference()) {
    Buffer none = d.alloc(0), w = d.upload({1.0f, 2.0f, 3.0f});
    auto [dx, dgamma, dbeta] = d.layer_norm_backward(none, w, none, 0, 3, 1e-5f);
    EXPECT_EQ(dx.size(), 0u) << d.id();
    EXPECT_EQ(dgamma.to_vector(), std::vector<float>(3, 0.0f)) << d.id();
    EXPECT_EQ(dbeta.to_vector(), std::vector<float>(3, 0.0f)) << d.id();
    auto [rdx, rdw] = d.rms_norm_backward(none, w, none, 0, 3, 1e-5f);
    EXPECT_EQ(rdx.size(), 0u) << d.id();
    EXPECT_EQ(rdw.to_vector(), std::vector<float>(3, 0.0f)) << d.id();
  }
}

TEST(Api, Conv2dBackwardMatchesFiniteDifferences) {
  for (const Conv2dShape& s : kConvs) {
    size_t nx = s.batch * s.in_channels * s.height * s.width, nw = s.out_channels * s.in_channels * s.kernel_h * s.kernel_w;
    size_t ny = s.batch * s.out_channels * s.out_height() * s.out_width();
    std::vector<float> x = host::random_floats(nx, 47), w = host::random_floats(nw, 48), b = host::random_floats(s.out_channels, 49),
                       g = host::random_floats(ny, 50);
    Vec X = host::to_double(x), W = host::to_double(w), B = host::to_double(b), G = host::to_double(g);
    Vec want_dx = finite_difference([&](const Vec& v) { return host::conv2d(v, W, B, s); }, X, G);
    Vec want_dw = finite_difference([&](const Vec& v) { return host::conv2d(X, v, B, s); }, W, G);
    Vec want_db = finite_difference([&](const Vec& v) { return host::conv2d(X, W, v, s); }, B, G);
    double tol = 1e-5 * std::sqrt(double(ny));
    for (const ComputeDevice& d : devices_and_reference()) {
      auto [dx, dw, db] = d.conv2d_backward(d.upload(g), d.upload(x), d.upload(w), s);
      std::string what = conv_text(s) + " backward on " + d.id();
      expect_close(dx.to_vector(), want_dx, tol, what + ": grad_input");
      expect_close(dw.to_vector(), want_dw, tol, what + ": grad_weight");
      expect_close(db.to_vector(), want_db, tol, what + ": grad_bias");
    }
  }
}

TEST(Api, EmbeddingBackwardMatchesFiniteDifferences) {
  size_t vocab = 9, dim = 4;
  std::vector<uint32_t> ids = {2, 8, 2, 0, 5, 2};
  std::vector<float> w = host::random_floats(vocab * dim, 18), g = host::random_floats(ids.size() * dim, 19);
  Vec want = finite_difference([&](const Vec& v) { return host::embedding(v, ids, dim); }, host::to_double(w),
                               host::to_double(g));
  check_op([&](const ComputeDevice& d) {
    return d.embedding_backward(d.upload(g), d.upload_u32(ids), vocab, ids.size(), dim).to_vector();
  }, want, 1e-6, "embedding_backward");
}

// ------------------------------------------------------------ rotary embedding

TEST(Api, RopeRotatesPairsAndItsBackwardMatchesFiniteDifferences) {
  for (size_t offset : {0u, 5u}) {
    size_t seq = 7, heads = 3, hd = 8;
    std::vector<float> x = host::random_floats(seq * heads * hd, 29), g = host::random_floats(seq * heads * hd, 30);
    Vec X = host::to_double(x);
    check_op([&](const ComputeDevice& d) { return d.rope(d.upload(x), seq, heads, hd, offset).to_vector(); },
             host::rope(X, seq, heads, hd, offset), 1e-5, "rope offset " + std::to_string(offset));
    Vec want = finite_difference([&](const Vec& v) { return host::rope(v, seq, heads, hd, offset); }, X, host::to_double(g));
    check_op([&](const ComputeDevice& d) { return d.rope_backward(d.upload(g), seq, heads, hd, offset).to_vector(); }, want,
             1e-5, "rope_backward");
  }
  ComputeDevice dev = ComputeDevice::open("cpu");
  EXPECT_THROW(dev.rope(dev.alloc(6), 1, 2, 3), ShapeError);
}

// ------------------------------------------------------------ attention

// (seq, n_heads, n_kv_heads, head_dim): MHA, GQA, MQA, odd sizes.
const size_t kHeads[][4] = {{1, 1, 1, 1}, {5, 2, 2, 3}, {9, 4, 2, 8}, {17, 6, 1, 5}, {33, 4, 4, 16}};

TEST(Api, CausalAttentionWithGroupedQueryHeads) {
  for (const auto& c : kHeads) {
    size_t seq = c[0], nh = c[1], nkv = c[2], hd = c[3];
    std::vector<float> q = host::random_floats(seq * nh * hd, 21), k = host::random_floats(seq * nkv * hd, 22),
                       v = host::random_floats(seq * nkv * hd, 23);
    Vec want = host::attention(host::to_double(q), host::to_double(k), host::to_double(v), seq, seq, nh, nkv, hd);
    check_op([&](const ComputeDevice& d) {
      return d.causal_attention(d.upload(q), d.upload(k), d.upload(v), seq, nh, nkv, hd).to_vector();
    }, want, 1e-5, "causal_attention seq " + std::to_string(seq));
    // Decode and prefill over a cache: the last q_len queries see what causal attention gives them.
    for (size_t q_len : {size_t{1}, (seq + 1) / 2}) {
      size_t start = seq - q_len;
      std::vector<float> tail(q.begin() + start * nh * hd, q.end());
      Vec tail_want(want.begin() + start * nh * hd, want.end());
      check_op([&](const ComputeDevice& d) {
        return d.kv_attention(d.upload(tail), d.upload(k), d.upload(v), start, q_len, nh, nkv, hd).to_vector();
      }, tail_want, 1e-5, "kv_attention q_len " + std::to_string(q_len));
    }
  }
  ComputeDevice dev = ComputeDevice::open("cpu");
  try {
    dev.causal_attention(dev.alloc(12), dev.alloc(12), dev.alloc(12), 2, 3, 2, 2);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "causal_attention: n_heads = 3 is not a multiple of n_kv_heads = 2");
  }
}

TEST(Api, CausalAttentionBackwardMatchesFiniteDifferences) {
  for (const auto& c : kHeads) {
    size_t seq = std::min<size_t>(c[0], 9), nh = c[1], nkv = c[2], hd = std::min<size_t>(c[3], 8);
    std::vector<float> q = host::random_floats(seq * nh * hd, 24), k = host::random_floats(seq * nkv * hd, 25),
                       v = host::random_floats(seq * nkv * hd, 26), g = host::random_floats(seq * nh * hd, 27);
    Vec Q = host::to_double(q), K = host::to_double(k), V = host::to_double(v), G = host::to_double(g);
    auto f = [&](const Vec& qq, const Vec& kk, const Vec& vv) { return host::attention(qq, kk, vv, seq, seq, nh, nkv, hd); };
    Vec dq = finite_difference([&](const Vec& x) { return f(x, K, V); }, Q, G);
    Vec dk = finite_difference([&](const Vec& x) { return f(Q, x, V); }, K, G);
    Vec dv = finite_difference([&](const Vec& x) { return f(Q, K, x); }, V, G);
    for (const ComputeDevice& d : devices()) {
      auto [gq, gk, gv] = d.causal_attention_backward(d.upload(g), d.upload(q), d.upload(k), d.upload(v), seq, nh, nkv, hd);
      std::string what = " seq " + std::to_string(seq) + " heads " + std::to_string(nh) + "/" + std::to_string(nkv) + " on " + d.id();
      expect_close(gq.to_vector(), dq, 1e-4, "dq" + what);
      expect_close(gk.to_vector(), dk, 1e-4, "dk" + what);
      expect_close(gv.to_vector(), dv, 1e-4, "dv" + what);
    }
  }
}

// ------------------------------------------------------------ cross-entropy

TEST(Api, CrossEntropyLossAndGradientMatchFiniteDifferences) {
  size_t n = 7, vocab = 13;
  uint32_t pad = 0;
  std::vector<uint32_t> t = {3, 0, 12, 5, 0, 1, 3};  // two padding positions
  std::vector<float> logits = host::random_floats(n * vocab, 28, 2.0f);
  Vec L = host::to_double(logits);
  double want_loss = host::cross_entropy(L, t, vocab, pad);
  Vec want_grad(L.size());
  for (size_t i = 0; i < L.size(); ++i) {
    Vec up = L, down = L;
    up[i] += 1e-6;
    down[i] -= 1e-6;
    want_grad[i] = (host::cross_entropy(up, t, vocab, pad) - host::cross_entropy(down, t, vocab, pad)) / 2e-6;
  }
  for (const ComputeDevice& d : devices()) {
    auto [loss, grad] = d.cross_entropy_forward_backward(d.upload(logits), d.upload_u32(t), n, vocab, pad);
    EXPECT_NEAR(loss, want_loss, 1e-5 * (std::fabs(want_loss) + 1)) << d.id();
    expect_close(grad.to_vector(), want_grad, 1e-5, "cross-entropy gradient on " + d.id());
    std::vector<float> g = grad.to_vector();
    for (size_t c = 0; c < vocab; ++c) EXPECT_EQ(g[1 * vocab + c], 0.0f) << "padding position has a gradient";
  }
  ComputeDevice dev = ComputeDevice::open("cpu");
  EXPECT_THROW(dev.cross_entropy_forward_backward(dev.upload(logits), dev.upload_u32({1, 2}), n, vocab, pad), ShapeError);
  EXPECT_THROW(dev.cross_entropy_forward_backward(dev.upload(logits), dev.upload_u32({13, 1, 1, 1, 1, 1, 1}), n, vocab, pad),
               ComputeError);  // a target past the vocabulary
}

// ------------------------------------------------------------ AdamW

TEST(Api, AdamWMatchesAStepByStepHandComputation) {
  const float lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.1f;
  size_t n = 37;
  std::vector<float> p0 = host::random_floats(n, 20);
  for (const ComputeDevice& d : devices()) {
    Buffer p = d.upload(p0), m = d.alloc(n), v = d.alloc(n);
    Vec P = host::to_double(p0), M(n, 0.0), V(n, 0.0);
    for (size_t t = 1; t <= 3; ++t) {
      std::vector<float> g = host::random_floats(n, 100 + uint32_t(t));
      d.adamw_step(p, d.upload(g), m, v, lr, b1, b2, eps, wd, t);
      for (size_t i = 0; i < n; ++i) {
        M[i] = b1 * M[i] + (1 - b1) * g[i];
        V[i] = b2 * V[i] + (1 - b2) * double(g[i]) * g[i];
        double mhat = M[i] / (1 - std::pow(b1, t)), vhat = V[i] / (1 - std::pow(b2, t));
        P[i] = P[i] - lr * wd * P[i];  // decoupled weight decay first
        P[i] -= lr * mhat / (std::sqrt(vhat) + eps);
      }
      expect_close(p.to_vector(), P, 1e-5, "adamw param step " + std::to_string(t) + " on " + d.id());
      expect_close(m.to_vector(), M, 1e-5, "adamw m");
      expect_close(v.to_vector(), V, 1e-5, "adamw v");
    }
  }
}

// ------------------------------------------------------------ errors

// f() throws a ShapeError saying exactly `message`.
void expect_shape_error(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const ShapeError& e) {
    EXPECT_EQ(e.what(), message);
  }
}

TEST(Api, ShapeMismatchesNameTheOpTheArgumentAndBothShapes) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Buffer a = dev.alloc(6), b = dev.alloc(12);
  expect_shape_error([&] { dev.matmul(a, b, 2, 3, 5); }, "matmul: argument b has 12 elements, but [k, n] = [3, 5] needs 15");
  expect_shape_error([&] { dev.rms_norm(a, dev.alloc(4), 2, 3, 1e-5f); }, "rms_norm: argument weight has 4 elements, but [dim] = [3] needs 3");
  EXPECT_THROW(dev.reduce_sum(a, {2, 3}, 2), ShapeError);
  Conv2dShape conv{.batch = 1, .in_channels = 2, .height = 3, .width = 1, .out_channels = 2, .kernel_h = 1, .kernel_w = 1};
  expect_shape_error([&] { dev.conv2d(a, dev.alloc(3), conv); }, "conv2d: argument weight has 3 elements, but [out_channels, in_channels, kernel_h, kernel_w] = [2, 2, 1, 1] needs 4");
  conv.kernel_w = 3;
  expect_shape_error([&] { dev.conv2d(a, dev.alloc(12), conv); }, "conv2d: kernel_w = 3 is larger than width + 2 * pad_w = 1");
  conv.kernel_w = 1;
  conv.stride_h = 0;
  expect_shape_error([&] { dev.conv2d_backward(a, a, dev.alloc(4), conv); }, "conv2d_backward: stride_h is 0");
  expect_shape_error([&] { dev.layer_norm_backward(a, dev.alloc(3), dev.alloc(5), 2, 3, 1e-5f); }, "layer_norm_backward: argument grad_output has 5 elements, but [n_rows, dim] = [2, 3] needs 6");
  EXPECT_THROW(dev.bias_add(a, dev.alloc(4), 6, 4), ShapeError);
  Buffer none;
  EXPECT_THROW(dev.softmax(none, 1, 1), ShapeError);
  Buffer on_reference = reference().alloc(6);
  EXPECT_THROW(dev.softmax(on_reference, 2, 3), ComputeError);
}

}  // namespace

// Misuse is an error that says what is wrong, never a crash: a moved-from
// device, sizes whose product leaves 63 bits, a pool larger than any.
TEST(Api, MisuseIsAClearError) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Buffer a = dev.upload(std::vector<float>(8, 1.0f));
  ComputeDevice moved = std::move(dev);
  try {
    (void)dev.alloc(4);
    ADD_FAILURE() << "a moved-from device ran";
  } catch (const ComputeError& e) {
    EXPECT_NE(std::string(e.what()).find("moved from"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)dev.description(), ComputeError);
  EXPECT_THROW((void)dev.matmul(a, a, 2, 2, 2), ComputeError);
  // 2^63 + 3 rows: the product of the sizes wraps in 64 bits.
  size_t huge = (size_t{1} << 63) + 3;
  try {
    (void)moved.matmul(a, a, huge, 2, 4);
    ADD_FAILURE() << "a wrapped size passed the check";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("more elements than a buffer can hold"), std::string::npos) << e.what();
  }
  // An ExprId no operation made (a forged index) is refused, not read past the graph.
  try {
    (void)moved.elementwise({a}, 8, [](auto& x) { return ExprId(x[0].trace(), 1000); });
    ADD_FAILURE() << "a forged ExprId was traced";
  } catch (const ComputeError& e) {
    EXPECT_NE(std::string(e.what()).find("no operation of this call made"), std::string::npos) << e.what();
  }
  try {
    (void)moved.memory_pool(SIZE_MAX);
    ADD_FAILURE() << "a pool of SIZE_MAX bytes was made";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()).find("-1"), std::string::npos) << e.what();
  }
}
