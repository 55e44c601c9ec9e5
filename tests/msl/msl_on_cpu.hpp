// MSL on the CPU: what the MSL our emitter writes uses, defined in C++, so
// that each kernel compiles with clang++ and runs here, one host thread per
// invocation of a threadgroup: address spaces (empty), bit casts, half,
// atomics (std::atomic_ref on the words), threadgroup_barrier (a barrier of
// the threadgroup's threads), simd_shuffle_xor (an exchange among the
// threads of a SIMD group, of any width). The harness strips the [[...]]
// attributes, which only bind arguments: it passes them by position.
//
// This proves what our MSL means, not that Apple's compiler accepts it.
#pragma once

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "msl_launch.hpp"

namespace metal {

using uint = uint32_t;
using ushort = uint16_t;
using uchar = uint8_t;
using ulong = uint64_t;
using half = _Float16;

struct uint3 {
  uint x = 0, y = 0, z = 0;
};
struct float2 {
  float x, y;
};
struct int2 {
  int x, y;
};
struct uint2 {
  uint x, y;
};

template <class To, class From>
To as_type(From from) {
  static_assert(sizeof(To) == sizeof(From), "as_type keeps the size");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

inline bool isnan(float x) { return std::isnan(x); }
inline bool isinf(float x) { return std::isinf(x); }
inline float abs(float x) { return std::fabs(x); }
// Integers wrap (abs of the most negative is itself); a template, so that
// the C library's abs (declared globally) is not ambiguous with it.
template <class T>
  requires std::is_integral_v<T>
T abs(T x) {
  using U = std::make_unsigned_t<T>;
  return x < 0 ? T(U(0) - U(x)) : x;
}
inline float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; }
inline float sqrt(float x) { return std::sqrt(x); }
inline float floor(float x) { return std::floor(x); }
inline float ceil(float x) { return std::ceil(x); }
inline float trunc(float x) { return std::trunc(x); }
inline float rint(float x) { return std::rint(x); }
template <class T>
T min(T a, T b) { return b < a ? b : a; }
template <class T>
T max(T a, T b) { return a < b ? b : a; }
template <class T>
T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
inline uint clz(uint x) { return x == 0 ? 32u : uint(__builtin_clz(x)); }

// ------------------------------------------------------------ atomics

struct atomic_uint {
  uint32_t v;
};
struct atomic_int {
  int32_t v;
};
enum memory_order { memory_order_relaxed };

template <class A>
auto atomic_load_explicit(A* a, memory_order) { return std::atomic_ref(a->v).load(); }
template <class A, class X>
void atomic_store_explicit(A* a, X x, memory_order) { std::atomic_ref(a->v).store(static_cast<decltype(a->v)>(x)); }
template <class A, class E, class X>
bool atomic_compare_exchange_weak_explicit(A* a, E* expected, X desired, memory_order, memory_order) {
  static_assert(std::is_same_v<E, decltype(a->v)>, "the expected value has the atomic's type");
  return std::atomic_ref(a->v).compare_exchange_weak(*expected, static_cast<E>(desired));
}
template <class A, class X>
auto atomic_fetch_add_explicit(A* a, X x, memory_order) { return std::atomic_ref(a->v).fetch_add(static_cast<decltype(a->v)>(x)); }
template <class A, class X>
auto atomic_exchange_explicit(A* a, X x, memory_order) { return std::atomic_ref(a->v).exchange(static_cast<decltype(a->v)>(x)); }
template <class A, class X>
auto atomic_fetch_min_explicit(A* a, X x, memory_order) {
  std::atomic_ref r(a->v);
  auto seen = r.load(), want = static_cast<decltype(a->v)>(x);
  while (want < seen && !r.compare_exchange_weak(seen, want)) {
  }
  return seen;
}
template <class A, class X>
auto atomic_fetch_max_explicit(A* a, X x, memory_order) {
  std::atomic_ref r(a->v);
  auto seen = r.load(), want = static_cast<decltype(a->v)>(x);
  while (seen < want && !r.compare_exchange_weak(seen, want)) {
  }
  return seen;
}

// ------------------------------------------------------------ threadgroups and SIMD groups

enum class mem_flags : int { mem_none = 0, mem_device = 1, mem_threadgroup = 2 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }

}  // namespace metal

namespace zy_harness {

// The threads of one threadgroup: a barrier for all, and for each SIMD
// group a barrier and the slots its lanes exchange values through.
struct Group {
  std::unique_ptr<std::barrier<>> all;
  std::vector<std::unique_ptr<std::barrier<>>> simd;
  std::vector<std::vector<uint64_t>> slots;
  uint32_t width = 32;
};

inline thread_local Group* current = nullptr;
inline thread_local uint32_t lane = 0, simd_group = 0, simd_lanes = 0;

// What no active lane wrote: a value a correct kernel never reads.
constexpr uint64_t kPoison = 0x7FC0DEAD7FC0DEADull;

}  // namespace zy_harness

namespace metal {

inline void threadgroup_barrier(mem_flags) { zy_harness::current->all->arrive_and_wait(); }

template <class T>
T simd_shuffle_xor(T v, ushort mask) {
  zy_harness::Group& g = *zy_harness::current;
  std::vector<uint64_t>& slots = g.slots[zy_harness::simd_group];
  uint64_t word = zy_harness::kPoison;
  std::memcpy(&word, &v, sizeof v);
  slots[zy_harness::lane] = word;
  g.simd[zy_harness::simd_group]->arrive_and_wait();
  uint32_t from = zy_harness::lane ^ mask;
  uint64_t got = from < zy_harness::simd_lanes ? slots[from] : zy_harness::kPoison;
  g.simd[zy_harness::simd_group]->arrive_and_wait();
  T r;
  std::memcpy(&r, &got, sizeof r);
  return r;
}

}  // namespace metal

namespace zy_harness {

// The builtins of one invocation, in the order the kernel takes them.
struct Invocation {
  metal::uint3 gid, lid, wid, nwg, tpg;
  uint32_t simd_lane, simd_id, simd_size, nsimd;
};

// Argument i of a kernel taking P: the buffers, the argument struct and
// the threadgroup memory by position, then the nine builtins.
template <size_t Count, class P>
P argument(size_t i, const Launch& l, const Invocation& v, unsigned char* threadgroup) {
  if constexpr (std::is_pointer_v<P>) {
    return reinterpret_cast<P>(i < l.buffer_count ? l.buffers[i] : threadgroup);
  } else if constexpr (std::is_reference_v<P>) {
    return *reinterpret_cast<std::remove_reference_t<P>*>(l.arguments);
  } else {
    size_t b = i - (Count - 9);
    if constexpr (std::is_same_v<P, metal::uint3>) {
      const metal::uint3* all[] = {&v.gid, &v.lid, &v.wid, &v.nwg, &v.tpg};
      return *all[b];
    } else {
      const uint32_t all[] = {v.simd_lane, v.simd_id, v.simd_size, v.nsimd};
      return all[b - 5];
    }
  }
}

template <class... P, size_t... I>
void call(void (*kernel)(P...), const Launch& l, const Invocation& v, unsigned char* threadgroup, std::index_sequence<I...>) {
  kernel(argument<sizeof...(P), P>(I, l, v, threadgroup)...);
}

// Every threadgroup in turn, each a host thread per invocation.
template <class... P>
void launch(void (*kernel)(P...), const Launch& l) {
  uint32_t width = l.simd_width, groups_of_simd = (l.threads + width - 1) / width;
  for (uint32_t gy = 0; gy < l.groups_y; ++gy)
    for (uint32_t gx = 0; gx < l.groups_x; ++gx) {
      std::vector<uint64_t> memory((l.threadgroup_bytes + 7) / 8 + 2, 0);
      Group g;
      g.width = width;
      g.all = std::make_unique<std::barrier<>>(l.threads);
      for (uint32_t s = 0; s < groups_of_simd; ++s) {
        uint32_t lanes = std::min(width, l.threads - s * width);
        g.simd.push_back(std::make_unique<std::barrier<>>(lanes));
        g.slots.emplace_back(width, kPoison);
      }
      std::vector<std::jthread> threads;
      for (uint32_t t = 0; t < l.threads; ++t)
        threads.emplace_back([&, t] {
          current = &g;
          lane = t % width;
          simd_group = t / width;
          simd_lanes = std::min(width, l.threads - simd_group * width);
          Invocation v;
          v.lid = {t, 0, 0};
          v.wid = {gx, gy, 0};
          v.nwg = {l.groups_x, l.groups_y, 1};
          v.tpg = {l.threads, 1, 1};
          v.gid = {gx * l.threads + t, gy, 0};
          v.simd_lane = lane;
          v.simd_id = simd_group;
          v.simd_size = width;
          v.nsimd = groups_of_simd;
          call(kernel, l, v, reinterpret_cast<unsigned char*>(memory.data()), std::index_sequence_for<P...>{});
        });
    }
}

}  // namespace zy_harness

// MSL's address spaces and function qualifier: nothing on the CPU.
#define kernel
#define device
#define constant
#define threadgroup
#define thread
