// Uses only <zyntax/zyntax.hpp>: a matrix product, a fused element-wise
// kernel and a softmax on the default device, checked against plain C++.
// Exit status 0 when every result is right.
#include <zyntax/zyntax.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  zyntax::ComputeDevice dev = zyntax::ComputeDevice::open("auto");
  std::printf("zyntax %s on %s (%s)\n", zyntax::version(), dev.id().c_str(), dev.description().name.c_str());
  const size_t m = 3, k = 4, n = 5;
  std::vector<float> a(m * k), b(k * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * static_cast<float>(i) - 1.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.5f - 0.125f * static_cast<float>(i % 7);
  zyntax::Buffer c = dev.matmul(dev.upload(a), dev.upload(b), m, k, n);
  zyntax::Buffer y = dev.elementwise({c}, m * n, [](const std::vector<zyntax::ExprId>& x) { return zyntax::relu(x[0]) * 2.0f + 1.0f; });
  zyntax::Buffer p = dev.softmax(y, m, n);
  std::vector<float> got = p.to_vector();
  int bad = 0;
  for (size_t i = 0; i < m; ++i) {
    double row[5], sum = 0, mx = -1e30;
    for (size_t j = 0; j < n; ++j) {
      double s = 0;
      for (size_t q = 0; q < k; ++q) s += double(a[i * k + q]) * b[q * n + j];
      row[j] = std::max(s, 0.0) * 2 + 1;
      mx = std::max(mx, row[j]);
    }
    for (size_t j = 0; j < n; ++j) sum += std::exp(row[j] - mx);
    for (size_t j = 0; j < n; ++j)
      if (std::fabs(got[i * n + j] - std::exp(row[j] - mx) / sum) > 1e-5) ++bad;
  }
  try {
    dev.matmul(dev.upload(a), dev.upload(b), m, k + 1, n);
    ++bad;
  } catch (const zyntax::ShapeError& e) {
    std::printf("shape error as expected: %s\n", e.what());
  }
  std::printf(bad ? "FAILED: %d wrong results\n" : "ok\n", bad);
  return bad ? 1 : 0;
}
