// HostBlockCache: large blocks are reused for the same size class; small
// ones and blocks past the limit are not kept.
#include <gtest/gtest.h>

#include "runtime/host_block_cache.hpp"
#include "runtime/tensor.hpp"

namespace zyntax {
namespace {

TEST(HostBlockCache, ReusesALargeBlockOfTheSameSizeClass) {
  HostBlockCache& cache = HostBlockCache::global();
  cache.clear();
  size_t bytes = 3 << 20;
  void* first = nullptr;
  {
    std::shared_ptr<unsigned char> a = cache.acquire(bytes);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  EXPECT_GE(cache.cached_bytes(), bytes);
  std::shared_ptr<unsigned char> b = cache.acquire(bytes - 1000);  // same class
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(HostBlockCache, SmallBlocksAreNotKept) {
  HostBlockCache& cache = HostBlockCache::global();
  cache.clear();
  { std::shared_ptr<unsigned char> a = cache.acquire(4096); }
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(HostBlockCache, TensorsForOverwriteRecycleAndPlainTensorsAreZero) {
  HostBlockCache::global().clear();
  const void* p = nullptr;
  {
    Tensor t = Tensor::for_overwrite(DType::F32, {1 << 19});
    p = t.data();
    t.data_as<float>()[7] = 3.0f;
  }
  Tensor again = Tensor::for_overwrite(DType::F32, {1 << 19});
  EXPECT_EQ(again.data(), p);
  Tensor z = Tensor::zeros(DType::F32, {1 << 19});
  EXPECT_EQ(z.data_as<float>()[7], 0.0f);
}

}  // namespace
}  // namespace zyntax
