// How compiled host functions meet the interpreter: one context per call
// from interpreted code, tensors as their host bytes and extents, and the
// error a compiled check reports (a site the compiler numbered, with the
// values its message needs). Shared by the emitter (host_compiler) and the
// tier that calls the code (host_tier); the helpers are the interpreter's
// own arithmetic (support/scalar), so results match bit for bit.
#pragma once

#include <cstdint>

namespace zyntax::host {

// Tensors of any rank up to this are passed; a larger rank stays interpreted.
inline constexpr int kMostHostTensorRank = 8;

// A contiguous row-major host tensor, as compiled code reads and writes it.
struct TensorArg {
  void* data;
  int64_t shape[kMostHostTensorRank];
};

struct HostCallContext {
  int32_t error_site = -1;  // -1: none; else the index of the failing check
  int32_t depth = 0;        // calls nested, with the interpreter's before
  int32_t max_depth = 0;
  int32_t pad = 0;
  int64_t detail = 0;                 // the index out of range, the step
  const TensorArg* tensor = nullptr;  // the tensor it was out of range for
};

// A compiled function's entry: every argument as 64 bits (integers, floats
// by their bits, bools as 0/1, tensors as a TensorArg*), the result likewise.
using HostEntry = void (*)(HostCallContext* ctx, const uint64_t* args, uint64_t* result);

}  // namespace zyntax::host

extern "C" {
// The interpreter's math on numbers (support/scalar's eval_math), by MathFn.
double zyntax_rt_host_math_f64(int fn, double x, double y, double z);
int64_t zyntax_rt_host_math_i64(int fn, int64_t x, int64_t y, int64_t z);
// An integer power with a non-negative exponent, wrapping as the interpreter does.
int64_t zyntax_rt_host_ipow(int64_t x, int64_t y);
}
