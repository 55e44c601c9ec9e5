// Results computed on another thread: ComputeDevice::async runs a function
// of the device (any ops) while the caller goes on; get() waits for it and
// rethrows its error (a ShapeError or ComputeError, with the op's words); a
// future dropped without get() still completes and frees what it made.
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace zyntax {

template <class T>
class Future {
 public:
  Future() = default;
  explicit Future(std::shared_future<T> f) : f_(std::move(f)) {}

  // Waits for the result; rethrows the error the function threw.
  T get() const { return f_.get(); }
  bool ready() const { return f_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  // The result if it is ready within `timeout`, else nothing (it keeps running).
  std::optional<T> get_for(std::chrono::milliseconds timeout) const {
    if (f_.wait_for(timeout) != std::future_status::ready) return std::nullopt;
    return f_.get();
  }

 private:
  std::shared_future<T> f_;
};

// Every result, in the order of the futures.
template <class T>
std::vector<T> await_all(const std::vector<Future<T>>& futures) {
  std::vector<T> out;
  out.reserve(futures.size());
  for (const Future<T>& f : futures) out.push_back(f.get());
  return out;
}

// The first result to be ready, and its index.
template <class T>
std::pair<T, size_t> await_any(const std::vector<Future<T>>& futures) {
  if (futures.empty()) throw std::invalid_argument("await_any: no futures");
  for (;;) {
    for (size_t i = 0; i < futures.size(); ++i)
      if (futures[i].ready()) return {futures[i].get(), i};
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace zyntax
