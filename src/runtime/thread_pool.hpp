// A persistent pool of worker threads: kernels split their outer parallel
// loop over it, so no launch creates threads. Several launches (from async
// compute blocks) may share it at once; the calling thread always works on
// its own job too, so every job finishes even when the workers are busy.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace zyntax {

class ThreadPool {
 public:
  // `threads` counts the caller: a pool of n runs n - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();

  // The process's pool: ZYNTAX_NUM_THREADS threads, else one per core.
  static ThreadPool& global();

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls f(begin, end) over chunks covering [0, n) and returns when all are
  // done. Each thread first runs the chunks that are its own (thread t of T:
  // chunks t, t + T, ...), then any left unclaimed: a call over the same
  // range gives each thread the same part as the last one (its data still in
  // that core's cache), and a thread that starts late loses its part to the
  // others.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& f);

 private:
  struct Job;
  void worker(int id);
  // `id`: the thread's place in the pool (0: the caller).
  void work_on(Job& job, int id) const;

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  // Atomic: spinning workers read these without the lock.
  std::atomic<bool> stopping_{false};
  std::atomic<int> queued_{0};
};

}  // namespace zyntax
