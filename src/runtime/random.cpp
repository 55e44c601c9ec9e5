#include <cmath>
#include <numbers>

#include "runtime/tensor_ops.hpp"

namespace zyntax {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

// xoshiro256** seeded through splitmix64, as its authors recommend: the
// state is never all zero, whatever the seed.
Random::Random(uint64_t seed) {
  for (uint64_t& word : state_) word = splitmix64(seed);
}

uint64_t Random::next_u64() {
  uint64_t* s = state_;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double Random::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

// Box-Muller: each pair of uniforms gives two normals; the second is kept for the next call.
double Random::normal() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  double u1 = 1.0 - uniform();  // (0, 1], so the log is finite
  double u2 = uniform();
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = 2.0 * std::numbers::pi * u2;
  spare_ = radius * std::sin(angle);
  have_spare_ = true;
  return radius * std::cos(angle);
}

Tensor rand_uniform(Random& rng, DType dtype, const Shape& shape, double lo, double hi) {
  Tensor out = Tensor::empty(dtype, shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.set(i, Scalar::from_double(lo + (hi - lo) * rng.uniform(), dtype));
  return out;
}

Tensor rand_normal(Random& rng, DType dtype, const Shape& shape, double mean, double stddev) {
  Tensor out = Tensor::empty(dtype, shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.set(i, Scalar::from_double(mean + stddev * rng.normal(), dtype));
  return out;
}

}  // namespace zyntax
