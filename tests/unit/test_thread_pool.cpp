// runtime/thread_pool: every iteration run once, in chunks whose sizes
// differ by one at most; each thread's own chunks first; several callers at
// once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/thread_pool.hpp"

namespace zyntax {
namespace {

TEST(ThreadPool, RunsEveryIterationOnceInChunksDifferingByOneAtMost) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 3, 7, 10, 31, 100, 1001}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      std::mutex mu;
      std::vector<int64_t> sizes;
      pool.parallel_for(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) runs[static_cast<size_t>(i)].fetch_add(1);
        std::lock_guard<std::mutex> lock(mu);
        sizes.push_back(end - begin);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << threads << " threads, n = " << n << ", at " << i;
      auto [least, most] = std::minmax_element(sizes.begin(), sizes.end());
      EXPECT_LE(*most - *least, 1) << threads << " threads, n = " << n;
      if (threads > 1) EXPECT_EQ(static_cast<int64_t>(sizes.size()), std::min<int64_t>(n, 4 * threads)) << threads << " threads, n = " << n;
    }
  }
}

// The caller's own chunks are 0, T, 2T, ...: it starts with chunk 0, which
// another thread reaches only after running all of its own (here 50 ms each).
TEST(ThreadPool, TheCallerRunsItsOwnFirstChunk) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id first_chunk;
  pool.parallel_for(8, [&](int64_t begin, int64_t) {
    if (begin == 0) first_chunk = std::this_thread::get_id();
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  EXPECT_EQ(first_chunk, caller);
}

// A thread that never joins (here: busy in another job) loses its chunks to
// the caller, so a job finishes whatever the workers are doing.
TEST(ThreadPool, ChunksOfABusyThreadAreRunByTheOthers) {
  ThreadPool pool(2);
  std::atomic<bool> release{false};
  std::thread blocker([&] {
    pool.parallel_for(2, [&](int64_t begin, int64_t) {
      if (begin == 1) while (!release.load()) std::this_thread::yield();
    });
  });
  // The blocker's job holds one thread until released; this caller's job must still finish.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::atomic<int64_t> total{0};
  pool.parallel_for(16, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
  EXPECT_EQ(total.load(), 16);
  release = true;
  blocker.join();
}

TEST(ThreadPool, SeveralCallersAtOnce) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int r = 0; r < 200; ++r) pool.parallel_for(37, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 200 * 37);
}

}  // namespace
}  // namespace zyntax
