// What several API test files share: an error's message, and random values.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace zyntax::test {

// The message `f` throws, or "" where it throws nothing.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// n values drawn from N(0, stddev^2), the same for the same seed.
template <class T>
std::vector<T> random_normal(size_t n, uint32_t seed, T stddev) {
  std::mt19937 rng(seed);
  std::normal_distribution<T> dist(T(0), stddev);
  std::vector<T> v(n);
  for (T& x : v) x = dist(rng);
  return v;
}

}  // namespace zyntax::test
