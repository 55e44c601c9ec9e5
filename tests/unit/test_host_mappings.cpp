// The table of host memory a GPU's kernels read in place: which ranges are
// mapped, when they are unmapped, what kernels find. The driver's side
// (register, unregister) is recorded here; on a GPU the CudaRuntime tests
// run it for real.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "backends/host_mappings.hpp"

namespace zyntax {
namespace {

constexpr uint64_t kDeviceBase = 0x7000'0000'0000;

// A table whose driver maps every range at kDeviceBase + its host offset in `memory`.
struct Recorded {
  std::vector<unsigned char> memory = std::vector<unsigned char>(4096);
  std::vector<std::pair<size_t, size_t>> mapped;  // (offset, bytes) of each map call
  std::vector<size_t> unmapped;                   // offsets
  HostMappings table{[this](void* p, size_t bytes) {
                       size_t at = static_cast<unsigned char*>(p) - memory.data();
                       mapped.push_back({at, bytes});
                       return kDeviceBase + at;
                     },
                     [this](void* p) { unmapped.push_back(static_cast<unsigned char*>(p) - memory.data()); }};
  unsigned char* at(size_t offset) { return memory.data() + offset; }
};

TEST(HostMappings, AViewMapsItsRangeUntilTheLastViewGoes) {
  Recorded r;
  std::shared_ptr<void> view = r.table.share(r.at(100), 400);
  ASSERT_EQ(r.mapped.size(), 1u);
  EXPECT_EQ(r.mapped[0], std::make_pair(size_t{100}, size_t{400}));

  // A second view of the range, or of bytes inside it, holds the same mapping.
  std::shared_ptr<void> again = r.table.share(r.at(100), 400);
  std::shared_ptr<void> inner = r.table.share(r.at(200), 16);
  EXPECT_EQ(r.mapped.size(), 1u);
  EXPECT_EQ(r.table.size(), 1u);

  view.reset();
  again.reset();
  EXPECT_TRUE(r.unmapped.empty());
  inner.reset();
  EXPECT_EQ(r.unmapped, std::vector<size_t>{100});
  EXPECT_EQ(r.table.size(), 0u);
}

TEST(HostMappings, KernelsFindEveryByteOfASharedRangeAtItsDeviceAddress) {
  Recorded r;
  EXPECT_FALSE(r.table.find(r.at(0), 4));
  std::shared_ptr<void> view = r.table.share(r.at(64), 256);
  std::optional<HostMappings::Found> whole = r.table.find(r.at(64), 256);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->address, kDeviceBase + 64);
  std::optional<HostMappings::Found> part = r.table.find(r.at(128), 32);
  ASSERT_TRUE(part);
  EXPECT_EQ(part->address, kDeviceBase + 128);
  // Not inside: before, across the end, after.
  EXPECT_FALSE(r.table.find(r.at(60), 8));
  EXPECT_FALSE(r.table.find(r.at(300), 32));
  EXPECT_FALSE(r.table.find(r.at(320), 4));

  // What a kernel found stays mapped while the kernel runs, the view gone.
  view.reset();
  EXPECT_TRUE(r.unmapped.empty());
  EXPECT_FALSE(r.table.find(r.at(64), 256)) << "no view shares it any more";
  whole.reset();
  part.reset();
  EXPECT_EQ(r.unmapped, std::vector<size_t>{64});
}

TEST(HostMappings, NeighboursOnOnePageAreMappedApart) {
  Recorded r;
  std::shared_ptr<void> a = r.table.share(r.at(0), 80);
  std::shared_ptr<void> b = r.table.share(r.at(80), 20);
  ASSERT_EQ(r.mapped.size(), 2u);
  EXPECT_EQ(r.table.find(r.at(80), 20)->address, kDeviceBase + 80);
  EXPECT_FALSE(r.table.find(r.at(70), 20)) << "spans two mappings";
  a.reset();
  EXPECT_EQ(r.unmapped, std::vector<size_t>{0});
  EXPECT_TRUE(r.table.find(r.at(80), 20));
}

// Memory allocated mapped (pinned tensors) is recorded, read in place only
// while a view shares it, and never unmapped by the table.
TEST(HostMappings, AdoptedMemoryIsSharedByViewsAndNeverUnmapped) {
  Recorded r;
  std::shared_ptr<void> pinned = r.table.adopt(r.at(1024), 512, 0xABC000);
  EXPECT_FALSE(r.table.find(r.at(1024), 512)) << "pinned memory is for copies until a view shares it";
  std::shared_ptr<void> view = r.table.share(r.at(1024), 512);
  EXPECT_TRUE(r.mapped.empty());
  EXPECT_EQ(r.table.find(r.at(1040), 8)->address, 0xABC000u + 16);
  view.reset();
  EXPECT_FALSE(r.table.find(r.at(1024), 512));
  pinned.reset();
  EXPECT_TRUE(r.unmapped.empty());
  EXPECT_EQ(r.table.size(), 0u);
}

// A driver error while mapping reaches the caller and records nothing.
TEST(HostMappings, AFailedMapRecordsNothing) {
  std::vector<unsigned char> memory(64);
  HostMappings table([](void*, size_t) -> uint64_t { throw std::runtime_error("mapping 64 B of host memory failed"); },
                     [](void*) { ADD_FAILURE() << "nothing was mapped"; });
  EXPECT_THROW(table.share(memory.data(), 64), std::runtime_error);
  EXPECT_EQ(table.size(), 0u);
}

// Views made and dropped on several threads at once (async compute blocks)
// leave every range mapped exactly while a view holds it.
TEST(HostMappings, ViewsFromSeveralThreads) {
  Recorded r;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&r, t] {
      for (int i = 0; i < 500; ++i) {
        std::shared_ptr<void> v = r.table.share(r.at(256 * (i % 8)), 256);
        std::optional<HostMappings::Found> f = r.table.find(r.at(256 * (i % 8) + 4 * t), 4);
        ASSERT_TRUE(f);
        EXPECT_EQ(f->address, kDeviceBase + 256 * (i % 8) + 4 * t);
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(r.table.size(), 0u);
  EXPECT_EQ(r.mapped.size(), r.unmapped.size());
}

}  // namespace
}  // namespace zyntax
