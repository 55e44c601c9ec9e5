// The caching allocator GPU memory goes through, over host memory here:
// size classes, reuse without the raw allocator, the limit, a retry after
// giving the cache back, and errors that name the device and the sizes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "runtime/size_class_pool.hpp"
#include "runtime/tensor.hpp"

namespace zyntax {
namespace {

struct HostMemory {
  std::set<uint64_t> live;
  uint64_t capacity = UINT64_MAX, used = 0;
  std::map<uint64_t, size_t> sizes;
  SizeClassPool::RawAllocate allocate() {
    return [this](size_t bytes) -> uint64_t {
      if (bytes > capacity - used) return 0;
      void* p = std::malloc(bytes);
      used += bytes;
      sizes[reinterpret_cast<uint64_t>(p)] = bytes;
      live.insert(reinterpret_cast<uint64_t>(p));
      return reinterpret_cast<uint64_t>(p);
    };
  }
  SizeClassPool::RawFree free() {
    return [this](uint64_t a) {
      ASSERT_TRUE(live.erase(a)) << "freed twice or never allocated";
      used -= sizes[a];
      std::free(reinterpret_cast<void*>(a));
    };
  }
};

TEST(SizeClassPool, ClassesArePowersOfTwoThenMultiplesOfTwoMiB) {
  EXPECT_EQ(SizeClassPool::size_class(0), 256u);
  EXPECT_EQ(SizeClassPool::size_class(1), 256u);
  EXPECT_EQ(SizeClassPool::size_class(257), 512u);
  EXPECT_EQ(SizeClassPool::size_class(1000000), 1u << 20);
  EXPECT_EQ(SizeClassPool::size_class(2u << 20), 2u << 20);
  EXPECT_EQ(SizeClassPool::size_class((2u << 20) + 1), 4u << 20);
  EXPECT_EQ(SizeClassPool::size_class((6u << 20) + 5), 8u << 20);
  EXPECT_EQ(SizeClassPool::size_class(SIZE_MAX), 0u);
}

TEST(SizeClassPool, ReleasedBlocksAreReusedWithoutTheRawAllocator) {
  HostMemory host;
  {
    SizeClassPool pool("gpu:test", host.allocate(), host.free());
    uint64_t a = pool.allocate(1000);
    uint64_t b = pool.allocate(3000);
    EXPECT_EQ(pool.stats().raw_allocations, 2u);
    EXPECT_EQ(pool.stats().in_use, 1024u + 4096u);
    pool.release(a);
    EXPECT_EQ(pool.stats().cached, 1024u);
    uint64_t c = pool.allocate(900);  // same class: the cached block
    EXPECT_EQ(c, a);
    EXPECT_EQ(pool.stats().raw_allocations, 2u);
    pool.release(b);
    pool.release(c);
    pool.trim();
    EXPECT_EQ(pool.stats().cached, 0u);
    EXPECT_TRUE(host.live.empty());
    pool.allocate(10);  // live at destruction: given back too
  }
  EXPECT_TRUE(host.live.empty());
}

TEST(SizeClassPool, TheLimitIsEnforcedWithAClearError) {
  HostMemory host;
  SizeClassPool pool("cuda:3", host.allocate(), host.free(), 8192);
  uint64_t a = pool.allocate(4096);
  try {
    pool.allocate(5000);
    FAIL() << "the limit was not enforced";
  } catch (const DataError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cuda:3"), std::string::npos) << m;
    EXPECT_NE(m.find("asked for 4.9 KiB"), std::string::npos) << m;
    EXPECT_NE(m.find("4.0 KiB left of the 8.0 KiB limit"), std::string::npos) << m;
  }
  pool.release(a);
  EXPECT_NO_THROW(pool.release(pool.allocate(8192)));
  pool.set_limit(1024);
  EXPECT_THROW(pool.allocate(2048), DataError);
}

TEST(SizeClassPool, OutOfMemoryGivesTheCacheBackAndRetries) {
  HostMemory host;
  host.capacity = 4 << 20;
  SizeClassPool pool("cuda:0", host.allocate(), host.free());
  pool.release(pool.allocate(2 << 20));
  pool.release(pool.allocate(1 << 20));
  EXPECT_EQ(pool.stats().cached, 3u << 20);  // 3 of the 4 MiB held in the cache
  uint64_t a = pool.allocate((2 << 20) + 1);  // a 4 MiB block: fits once the cache is given back
  EXPECT_EQ(pool.stats().cached, 0u);
  EXPECT_EQ(pool.stats().in_use, 4u << 20);
  pool.release(a);
  try {
    pool.allocate(6 << 20);
    FAIL() << "6 MiB cannot fit in 4 MiB";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0: out of memory: asked for 6.0 MiB"), std::string::npos) << e.what();
  }
}

TEST(SizeClassPool, ReleasingAnUnknownAddressIsAnError) {
  HostMemory host;
  SizeClassPool pool("cuda:0", host.allocate(), host.free());
  EXPECT_THROW(pool.release(12345), DataError);
  uint64_t a = pool.allocate(10);
  pool.release(a);
  EXPECT_THROW(pool.release(a), DataError);  // twice
}

}  // namespace
}  // namespace zyntax
