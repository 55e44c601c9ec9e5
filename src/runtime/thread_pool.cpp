#include "runtime/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

namespace zyntax {

namespace {

// Waking a sleeping thread costs tens of microseconds, as much as a small
// kernel's whole run: threads spin this long for work before they sleep.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until `ready()` or kSpin has passed; returns ready().
template <class Ready>
bool spin_until(Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return ready();
  }
}

}  // namespace

struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)>* f;
  int64_t n, chunk, chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mu;
  std::condition_variable finished;
};

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool([] {
    if (const char* env = std::getenv("ZYNTAX_NUM_THREADS")) {
      int n = std::atoi(env);
      if (n > 0 && n <= 1024) return n;
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
  }());
  return pool;
}

// Claims chunks until none is left; the last one done wakes the caller.
void ThreadPool::work_on(Job& job) {
  while (true) {
    int64_t c = job.next.fetch_add(1);
    if (c >= job.chunks) return;
    int64_t begin = c * job.chunk;
    (*job.f)(begin, std::min(job.n, begin + job.chunk));
    if (job.done.fetch_add(1) + 1 == job.chunks) {
      std::lock_guard<std::mutex> lock(job.mu);
      job.finished.notify_all();
    }
  }
}

void ThreadPool::worker() {
  while (true) {
    std::shared_ptr<Job> job;
    spin_until([this] { return queued_.load(std::memory_order_acquire) > 0 || stopping_.load(); });
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = jobs_.front();
      if (job->next.load() >= job->chunks) {  // fully claimed: nothing left for workers
        jobs_.pop_front();
        queued_.fetch_sub(1, std::memory_order_release);
        continue;
      }
    }
    work_on(*job);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  // A few chunks per thread balance uneven iterations without much overhead.
  int64_t chunks = std::min<int64_t>(n, static_cast<int64_t>(size()) * 4);
  if (workers_.empty() || chunks == 1) {
    f(0, n);
    return;
  }
  auto job = std::make_shared<Job>();
  job->f = &f;
  job->n = n;
  job->chunk = (n + chunks - 1) / chunks;
  job->chunks = (n + job->chunk - 1) / job->chunk;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
    queued_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  work_on(*job);
  if (spin_until([&] { return job->done.load() == job->chunks; })) return;
  std::unique_lock<std::mutex> lock(job->mu);
  job->finished.wait(lock, [&] { return job->done.load() == job->chunks; });
}

}  // namespace zyntax
