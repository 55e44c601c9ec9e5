// The op library's deferred ops: an op of one result waits until a value is
// needed and fuses with the ops around it. Each chain runs with fusion on
// and off (set_fusion(false): every op when called) on every device and the
// reference executor: the same bits, fewer kernels; in-place writes, freed
// memory and memory handed to the application never change what a waiting
// op reads; an op's error comes where its values are needed.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "host_reference.hpp"
#include "zyntax/zyntax.hpp"

namespace {

using namespace zyntax;

std::vector<ComputeDevice> every_device() {
  std::vector<ComputeDevice> out;
  for (const DeviceDescription& d : compute_devices()) out.push_back(ComputeDevice::open(d.id));
  return out;
}

// What `chain` gives on `dev` with fusion on and off, and the kernels each launched.
struct Both {
  std::vector<float> fused, unfused;
  uint64_t fused_launches = 0, unfused_launches = 0;
};

Both run_both(ComputeDevice dev, const std::function<Buffer(const ComputeDevice&)>& chain) {
  Both r;
  dev.set_fusion(false);
  uint64_t before = dev.kernel_launches();
  r.unfused = chain(dev).to_vector();
  r.unfused_launches = dev.kernel_launches() - before;
  dev.set_fusion(true);
  before = dev.kernel_launches();
  r.fused = chain(dev).to_vector();
  r.fused_launches = dev.kernel_launches() - before;
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST(ApiFusion, AProductAndItsBiasAreOneKernel) {
  const size_t shapes[][2] = {{1, 1}, {7, 5}, {33, 64}};
  for (const auto& [m, n] : shapes) {
    size_t k = 9;
    {
      std::vector<float> a = host::random_floats(m * k, 1), w = host::random_floats(k * n, 2), b = host::random_floats(n, 3);
      for (ComputeDevice& dev : every_device()) {
        Both r = run_both(dev, [&](const ComputeDevice& d) {
          return d.bias_add(d.matmul(d.upload(a), d.upload(w), m, k, n), d.upload(b), m * n, n);
        });
        std::string what = dev.id() + " m=" + std::to_string(m) + " n=" + std::to_string(n);
        EXPECT_TRUE(same_bits(r.fused, r.unfused)) << what;
        EXPECT_EQ(r.unfused_launches, 2u) << what;
        EXPECT_EQ(r.fused_launches, 1u) << what;
      }
    }
  }
}

// A chain of the transformer's ops, with results read as other shapes
// (a product's [n, h * d] as rope's [n, h, d]): the same bits.
TEST(ApiFusion, ChainsOfOpsGiveTheSameBitsFusedAndNot) {
  size_t vocab = 13, n = 11, dim = 8, heads = 2, hd = 4;
  std::vector<float> emb = host::random_floats(vocab * dim, 4), norm = host::random_floats(dim, 5);
  std::vector<float> wq = host::random_floats(dim * heads * hd, 6), bias = host::random_floats(dim, 7);
  std::vector<uint32_t> ids = {1, 12, 0, 5, 5, 7, 3, 9, 2, 11, 4};
  for (ComputeDevice& dev : every_device()) {
    Both r = run_both(dev, [&](const ComputeDevice& d) {
      Buffer h = d.embedding(d.upload(emb), d.upload_u32(ids), n, dim);
      Buffer a = d.rms_norm(h, d.upload(norm), n, dim, 1e-5f);
      Buffer q = d.rope(d.matmul(a, d.upload(wq), n, dim, heads * hd), n, heads, hd);
      Buffer s = d.softmax(d.bias_add(d.matmul_transposed_b(q, a, n, heads * hd, n), d.upload(std::vector<float>(n, 0.5f)), n * n, n),
                           n, n);
      return d.reduce_sum(s, {n, n}, 0);
    });
    EXPECT_TRUE(same_bits(r.fused, r.unfused)) << dev.id();
    EXPECT_LT(r.fused_launches, r.unfused_launches) << dev.id();
    (void)bias;
  }
}

// An op that waits reads its inputs as they were when it was called.
TEST(ApiFusion, InPlaceWritesComeAfterTheOpsThatReadTheBuffer) {
  for (ComputeDevice& dev : every_device()) {
    Buffer w = dev.upload({1, 2, 3, 4});
    Buffer x = dev.upload({1, 1});
    Buffer before = dev.matmul(x, w, 1, 2, 2);  // waits, reading w
    dev.add_assign(w, dev.upload({10, 10, 10, 10}));
    EXPECT_EQ(before.to_vector(), (std::vector<float>{4, 6})) << dev.id();
    Buffer after = dev.matmul(x, w, 1, 2, 2);
    dev.zero_buffer(w);
    EXPECT_EQ(after.to_vector(), (std::vector<float>{24, 26})) << dev.id();
    Buffer zero = dev.matmul(x, w, 1, 2, 2);
    Buffer m = dev.alloc(4), v = dev.alloc(4);
    Buffer grad = dev.upload({1, 1, 1, 1});
    Buffer grad_seen = dev.bias_add(grad, dev.upload({0}), 4, 1);  // waits, reading grad
    dev.adamw_step(grad, grad, m, v, 0.5f, 0.9f, 0.999f, 1e-8f, 0.0f, 1);
    EXPECT_EQ(zero.to_vector(), (std::vector<float>{0, 0})) << dev.id();
    EXPECT_EQ(grad_seen.to_vector(), (std::vector<float>{1, 1, 1, 1})) << dev.id();
  }
}

TEST(ApiFusion, BuffersFreedOrHandedToTheApplicationAreReadFirst) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  BufferPool pool = dev.memory_pool(1 << 16);
  Buffer p = pool.alloc(4);
  dev.add_assign(p, dev.upload({1, 2, 3, 4}));
  Buffer twice = dev.bias_add(p, p, 4, 4);  // waits, reading p
  pool.free(p);
  Buffer reused = pool.alloc(4);
  dev.zero_buffer(reused);
  EXPECT_EQ(twice.to_vector(), (std::vector<float>{2, 4, 6, 8}));

  // An array whose memory the application holds: an op reading it runs when called.
  Array a = Array::from_vector(dev, std::vector<float>{1, 2, 3}, {3});
  float* mine = static_cast<float*>(a.host_data());
  ASSERT_NE(mine, nullptr);
  uint64_t launches = dev.kernel_launches();
  Buffer y = dev.bias_add(a.buffer(), dev.upload({1}), 3, 1);
  EXPECT_EQ(dev.kernel_launches(), launches + 1);
  mine[0] = 100;
  EXPECT_EQ(y.to_vector(), (std::vector<float>{2, 3, 4}));
}

TEST(ApiFusion, AnOpsErrorComesWhereItsValuesAreNeeded) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  std::vector<float> w = host::random_floats(11 * 5, 12);
  Buffer good = dev.bias_add(dev.upload({1, 2}), dev.upload({3}), 2, 1);  // waits with the failing op, before it
  Buffer bad = dev.embedding(dev.upload(w), dev.upload_u32({2, 11}), 2, 5);
  EXPECT_EQ(bad.size(), 10u);  // its size is known at once
  try {
    dev.sync();
    FAIL() << "an id past the vocabulary was accepted";
  } catch (const ComputeError& e) {
    EXPECT_NE(std::string(e.what()).find("embedding: index out of bounds"), std::string::npos) << e.what();
  }
  // The op before it kept its result; reading the failed op's says so; the device goes on.
  EXPECT_EQ(good.to_vector(), (std::vector<float>{4, 5}));
  EXPECT_THROW(bad.to_vector(), ComputeError);
  Buffer fine = dev.bias_add(dev.upload({1, 2}), dev.upload({1}), 2, 1);
  EXPECT_EQ(fine.to_vector(), (std::vector<float>{2, 3}));
  // Shapes are checked when the op is called, as always.
  EXPECT_THROW(dev.matmul(dev.upload({1, 2, 3}), dev.upload({1, 2}), 2, 2, 1), ShapeError);
}

TEST(ApiFusion, ResultsNobodyReadsStillRunWithTheirChecks) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  uint64_t launches = dev.kernel_launches();
  for (int i = 0; i < 300; ++i) dev.bias_add(dev.upload({1, 2}), dev.upload({1}), 2, 1);  // 128 wait at most
  dev.sync();
  EXPECT_EQ(dev.kernel_launches(), launches + 300);
  dev.embedding(dev.upload(std::vector<float>(10, 1.0f)), dev.upload_u32({7}), 1, 5);  // never read: still checked
  EXPECT_THROW(dev.sync(), ComputeError);
}

// What waits runs when the device's last handle goes; with no caller left,
// an error is said on stderr.
TEST(ApiFusion, TheLastHandleOfADeviceComputesWhatWaits) {
  std::vector<float> w(10, 1.0f);
  testing::internal::CaptureStderr();
  {
    ComputeDevice a = ComputeDevice::open("cpu");
    {
      ComputeDevice b = ComputeDevice::open("cpu");
      b.embedding(b.upload(w), b.upload_u32({7}), 1, 5);  // past the vocabulary of 2, never read
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // `a` is still open: it waits
    testing::internal::CaptureStderr();
  }
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("an op whose result was never read failed: embedding: index out of bounds"), std::string::npos) << said;
}

}  // namespace
