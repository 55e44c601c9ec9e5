// The device registry: the host's devices are found without opening the
// deferred (GPU) backends; anything beyond them opens those once.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "backends/reference/reference_device.hpp"
#include "runtime/device.hpp"

namespace zyntax {
namespace {

// A registry with a reference device as "cpu" and "cpu:reference" now, and a
// deferred backend adding "gpu:0" that counts how often it was opened.
struct CountingRegistry {
  DeviceRegistry registry;
  std::atomic<int> opened{0};
  CountingRegistry() {
    registry.add(make_reference_device("cpu"));
    registry.add(make_reference_device("cpu:reference"));
    registry.defer([this](DeviceRegistry& r) {
      ++opened;
      r.add(make_reference_device("gpu:0"));
      r.add_unavailable("cuda", "no CUDA driver here", true);
    });
  }
};

TEST(DeviceRegistry, HostDevicesAreFoundWithoutOpeningTheDeferredBackends) {
  CountingRegistry c;
  ASSERT_NE(c.registry.find("cpu"), nullptr);
  ASSERT_NE(c.registry.find("cpu:reference"), nullptr);
  EXPECT_EQ(c.opened, 0);
  EXPECT_EQ(c.registry.find("cpu")->info().id, "cpu");
}

TEST(DeviceRegistry, AnythingElseOpensThemOnce) {
  {
    CountingRegistry c;
    EXPECT_NE(c.registry.find("gpu:0"), nullptr);
    EXPECT_EQ(c.opened, 1);
    EXPECT_EQ(c.registry.devices().size(), 3u);
    EXPECT_EQ(c.opened, 1);
  }
  {
    CountingRegistry c;
    EXPECT_EQ(c.registry.available(), "cpu, cpu:reference, gpu:0");
    EXPECT_EQ(c.opened, 1);
  }
  {
    CountingRegistry c;  // "auto" looks for a GPU among them: none of type "gpu" here
    EXPECT_EQ(c.registry.find("auto"), c.registry.find("cpu"));
    EXPECT_EQ(c.opened, 1);
  }
  {
    CountingRegistry c;  // why a device is missing is known only once opened
    EXPECT_EQ(c.registry.find("cuda:0"), nullptr);
    EXPECT_EQ(c.registry.unavailable_reason("cuda:0"), "no CUDA driver here");
    EXPECT_EQ(c.opened, 1);
  }
}

TEST(DeviceRegistry, OpensOnceWhenManyThreadsAskAtOnce) {
  CountingRegistry c;
  std::vector<std::thread> threads;
  std::atomic<int> found{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      if (c.registry.find(i % 2 ? "gpu:0" : "cpu")) ++found;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(found, 8);
  EXPECT_EQ(c.opened, 1);
}

}  // namespace
}  // namespace zyntax
