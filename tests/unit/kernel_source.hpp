// The kernels of a ZynML source text, as the checker lowers them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/session.hpp"
#include "lower/check_program.hpp"
#include "runtime/tensor.hpp"

namespace zyntax::testing {

// A plain f32 matrix product, C[M, N] = A[M, K] B[K, N], as users write it.
inline constexpr const char* kPlainMatmul =
    "def f(A: tensor[M, K, f32], B: tensor[K, N, f32]) {\n return compute(A, B) {\n @kernel matmul\n"
    " for i in 0..M, j in 0..N:\n  var sum = 0.0\n  for k in 0..K:\n   sum += A[i, k] * B[k, j]\n  out[i, j] = sum\n }\n}";

// A softmax along each row: its max, its sum of exponentials, each element.
inline constexpr const char* kRowSoftmax =
    "def f(x: tensor[R, C, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..R:\n  var m = -inf\n"
    "  for j in 0..C:\n   m = max(m, x[i, j])\n  var s = 0.0\n  for j in 0..C:\n   s += exp(x[i, j] - m)\n"
    "  for j in 0..C:\n   out[i, j] = exp(x[i, j] - m) / s\n }\n}";

// A specialised kernel and inputs to run it on.
struct KernelCase {
  cir::Kernel kernel;
  std::vector<Tensor> inputs;
};

// The first kernel of a program, lowered with the input types it declares.
inline cir::Kernel kernel_of(const std::string& src) {
  Session session;
  std::vector<CheckedKernel> kernels;
  LoadedModule* m = session.load_text("k.zynml", src);
  bool ok = !session.diags().has_errors() && check_program(session, *m, &kernels);
  EXPECT_TRUE(ok) << session.diags().render_all();
  if (!ok || kernels.empty()) return {};
  return kernels[0].kernel;
}

}  // namespace zyntax::testing
