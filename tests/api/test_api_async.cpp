// Asynchronous work and memory through the C++ API: ops run on other
// threads while the caller goes on (from several threads at once, every
// result checked), await_all keeps the order, await_any gives the first to
// finish, get_for times out on a slow op, an op's error surfaces at get(),
// memory pools enforce their limit, to_device copies or shares.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "host_reference.hpp"
#include "zyntax/zyntax.hpp"

namespace {

using namespace zyntax;
using namespace std::chrono_literals;

// A matrix product slow enough on the reference executor to outlast a short wait.
Future<Buffer> slow_op(const ComputeDevice& reference, size_t n) {
  std::vector<float> a = host::random_floats(n * n, 1);
  return reference.async([a, n](const ComputeDevice& d) { return d.matmul(d.upload(a), d.upload(a), n, n, n); });
}

TEST(ApiAsync, OpsRunWhileTheCallerGoesOnAndResultsKeepTheirOrder) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  std::vector<Future<Buffer>> futures;
  for (int i = 0; i < 8; ++i)
    futures.push_back(dev.async([i](const ComputeDevice& d) {
      return d.elementwise({d.upload(std::vector<float>(100 + i, float(i)))}, 100 + i,
                           [](const std::vector<ExprId>& x) { return x[0] * 2.0f; });
    }));
  std::vector<Buffer> results = await_all(futures);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(results[i].to_vector(), std::vector<float>(100 + i, 2.0f * i)) << i;
}

TEST(ApiAsync, ManyHostThreadsLaunchingAsyncOpsGetTheirOwnResults) {
  std::vector<DeviceDescription> all = compute_devices();
  std::atomic<int> wrong{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      ComputeDevice dev = ComputeDevice::open(all[t % all.size()].id);
      std::vector<Future<Buffer>> fs;
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < 60; ++r) {
        inputs.push_back(host::random_floats(31 + r % 5, 1000 * t + r));
        std::vector<float> x = inputs.back();
        fs.push_back(dev.async([x](const ComputeDevice& d) { return d.softmax(d.upload(x), 1, x.size()); }));
      }
      for (size_t r = 0; r < fs.size(); ++r) {
        std::vector<float> got = fs[r].get().to_vector();
        host::Vec want = host::softmax(host::to_double(inputs[r]), 1, inputs[r].size());
        for (size_t i = 0; i < got.size(); ++i)
          if (std::fabs(got[i] - want[i]) > 1e-5) ++wrong;
        ++done;
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(done.load(), 240);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ApiAsync, AnyGivesTheFirstToFinishAndATimeoutFires) {
  ComputeDevice cpu = ComputeDevice::open("cpu"), reference = ComputeDevice::open("cpu:reference");
  Future<Buffer> slow = slow_op(reference, 96);
  EXPECT_FALSE(slow.get_for(1ms).has_value());  // the timeout fires; the op goes on
  std::vector<Future<Buffer>> racers = {slow_op(reference, 96),
                                        cpu.async([](const ComputeDevice& d) { return d.upload({1.0f, 2.0f}); })};
  auto [first, index] = await_any(racers);
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(first.to_vector(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_TRUE(slow.get_for(60s).has_value());
}

TEST(ApiAsync, AnOpsErrorSurfacesAtGet) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Future<Buffer> f = dev.async([](const ComputeDevice& d) { return d.matmul(d.alloc(6), d.alloc(5), 2, 3, 2); });
  try {
    f.get();
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "matmul: argument b has 5 elements, but [k, n] = [3, 2] needs 6");
  }
  // A future never waited for completes and frees its results all the same.
  dev.async([](const ComputeDevice& d) { return d.alloc(1000); });
}

TEST(ApiMemory, PoolsEnforceTheirLimitAndCountFreesAndResets) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  BufferPool pool = dev.memory_pool(4096);
  EXPECT_EQ(pool.capacity(), 4096u);
  Buffer a = pool.alloc(768);  // 3072 bytes
  EXPECT_EQ(pool.used(), 3072u);
  EXPECT_EQ(a.to_vector(), std::vector<float>(768, 0.0f));
  try {
    pool.alloc(512);
    FAIL() << "the limit was not enforced";
  } catch (const ComputeError& e) {
    EXPECT_STREQ(e.what(), "alloc: memory pool on cpu: [512] f32 needs 2048 bytes, but only 1024 bytes of 4096 bytes are free");
  }
  dev.add_assign(a, dev.upload(std::vector<float>(768, 1.0f)));  // in place: still the pool's buffer
  pool.free(a);
  EXPECT_EQ(pool.used(), 0u);
  EXPECT_THROW(pool.free(a), ComputeError);
  Buffer h = pool.alloc(1024, ElementType::F16);  // 2048 bytes
  EXPECT_EQ(pool.used(), 2048u);
  pool.reset();
  EXPECT_EQ(pool.used(), 0u);
  EXPECT_THROW(pool.free(h), ComputeError);
}

TEST(ApiMemory, ToDeviceCopiesOrShares) {
  ComputeDevice cpu = ComputeDevice::open("cpu"), other = ComputeDevice::open("cpu:reference");
  Buffer x = cpu.upload({1.0f, 2.0f});
  Buffer copy = other.to_device(x), view = other.to_device(x, /*copy=*/false);
  EXPECT_EQ(copy.device(), "cpu:reference");
  EXPECT_EQ(view.device(), "cpu:reference");
  cpu.zero_buffer(x);  // in place: the view sees it, the copy does not
  EXPECT_EQ(view.to_vector(), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(copy.to_vector(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(other.softmax(view, 1, 2).size(), 2u);  // usable on its new device
  EXPECT_THROW(cpu.softmax(view, 1, 2), ComputeError);  // and only there
}

// ------------------------------------------------------------ several devices

TEST(ApiDevices, AGroupOfDevicesGivesExactlyTheOneDeviceResult) {
  ComputeDevice one = ComputeDevice::open("cpu:0");
  for (Parallel mode : {Parallel::Data, Parallel::Model}) {
    ComputeDevice group = ComputeDevice::open({"cpu:0", "cpu:1"}, mode);
    EXPECT_EQ(group.id(), "cpu:0+cpu:1");
    size_t m = 33, k = 17, n = 20;
    std::vector<float> a = host::random_floats(m * k, 40), b = host::random_floats(k * n, 41);
    EXPECT_EQ(group.matmul(group.upload(a), group.upload(b), m, k, n).to_vector(),
              one.matmul(one.upload(a), one.upload(b), m, k, n).to_vector());
    EXPECT_EQ(group.softmax(group.upload(a), m, k).to_vector(), one.softmax(one.upload(a), m, k).to_vector());
    auto chain = [](const std::vector<ExprId>& x) { return zyntax::gelu(x[0]) * x[0]; };
    EXPECT_EQ(group.elementwise({group.upload(a)}, m * k, chain).to_vector(), one.elementwise({one.upload(a)}, m * k, chain).to_vector());
  }
  EXPECT_THROW(ComputeDevice::open({"cpu:0", "tpu:3"}, Parallel::Data), ComputeError);
}

}  // namespace
