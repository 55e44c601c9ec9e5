// The reference executor through whole programs: results against loops written
// here in C++, and the runtime errors it must give (with their source location).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "driver/session.hpp"
#include "interp/host_interpreter.hpp"
#include "lower/check_program.hpp"
#include "program_run.hpp"

namespace zyntax {
namespace {

std::unique_ptr<testing::ProgramRun> run(const std::string& src) {
  RunOptions o;
  o.device = "cpu:reference";
  return testing::run_program(src, o);
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

TEST(InterpReference, MatmulMatchesALoopInF32) {
  // Inputs are small integers so the f32 result is exact and comparable as text.
  auto r = run(
      "let A = astype(arange(0, 15), f32) |> reshape([3, 5])\n"
      "let B = astype(arange(0, 35), f32) |> reshape([5, 7])\n"
      "let C = compute(A, B) {\n  @kernel matmul\n  for i in 0..M, j in 0..N:\n    var sum = 0.0\n"
      "    for k in 0..K:\n      sum += A[i, k] * B[k, j]\n    out[i, j] = sum\n}\n"
      "for i in 0..3 { for j in 0..7 { print(C[i, j]) } }\n");
  ASSERT_TRUE(r->ok) << r->errors();
  std::ostringstream want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 7; ++j) {
      float s = 0;
      for (int k = 0; k < 5; ++k) s += static_cast<float>(i * 5 + k) * static_cast<float>(k * 7 + j);
      want << s << (std::floor(s) == s ? ".0" : "") << "\n";
    }
  EXPECT_EQ(r->out.str(), want.str());
}

TEST(InterpReference, ArgmaxTakesTheFirstMaximumAndNaN) {
  auto r = run(
      "let d = astype(arange(0, 6), f32)\nd[2] = 9.0\nd[4] = 9.0\nlet n = 6\n"
      "let k = compute(d) {\n  @kernel reduce(argmax)\n  for i in 0..n:\n    yield (d[i], i)\n}\n"
      "print(k)\nd[3] = nan\n"
      "let k2 = compute(d) {\n  @kernel reduce(argmax)\n  for i in 0..n:\n    yield (d[i], i)\n}\nprint(k2)\n");
  ASSERT_TRUE(r->ok) << r->errors();
  EXPECT_EQ(r->out.str(), "tensor(2, i64)\ntensor(3, i64)\n");
}

TEST(InterpReference, MaxPropagatesNaN) {
  auto r = run("let d = ones([5])\nd[1] = nan\nlet n = 5\n"
               "let m = compute(d) {\n  @kernel reduce(max)\n  for i in 0..n:\n    yield d[i]\n}\nprint(m)\n");
  ASSERT_TRUE(r->ok) << r->errors();
  EXPECT_EQ(r->out.str(), "tensor(nan, f32)\n");
}

TEST(InterpReference, OutOfBoundsReadIsALocatedError) {
  auto r = run("let x = ones([4])\nlet n = 5\nlet y = compute(x) {\n  @kernel elementwise\n"
               "  for i in 0..n:\n    out[i] = x[i]\n}\n");
  ASSERT_FALSE(r->ok);
  EXPECT_TRUE(contains(r->errors(), "p.zynml:6:14: error: index out of bounds: x[4]: axis 0 has size 4")) << r->errors();
}

TEST(InterpReference, IntegerDivisionByZeroIsAnError) {
  auto r = run("let x = astype(ones([3]), i32)\nlet n = 3\nlet z = 0\nlet y = compute(x) {\n  @kernel elementwise\n"
               "  for i in 0..n:\n    out[i] = x[i] / z\n}\n");
  ASSERT_FALSE(r->ok);
  EXPECT_TRUE(contains(r->errors(), "error: integer division by zero")) << r->errors();
}

TEST(InterpReference, RuntimeShapeMismatchNamesBothInputs) {
  auto r = run("def mm(A, B) {\n  return compute(A, B) {\n    @kernel matmul\n    for i in 0..M, j in 0..N:\n"
               "      var s = 0.0\n      for k in 0..K:\n        s += A[i, k] * B[k, j]\n      out[i, j] = s\n  }\n}\n"
               "let C = mm(ones([3, 5]), ones([6, 7]))\n");
  ASSERT_FALSE(r->ok);
  std::string e = r->errors();
  EXPECT_TRUE(contains(e, "input 'B' has shape [6, 7], but its axis 0 must be K = 5 (K is axis 1 of input 'A', shape [3, 5])"))
      << e;
}

TEST(InterpReference, SpecialisationsAreCachedPerShape) {
  // The same kernel on two sizes, twice each: both results right.
  auto r = run("def double(x) {\n  return compute(x) {\n    @kernel elementwise\n    for i in 0..n:\n"
               "      out[i] = x[i] * 2.0\n  }\n}\n"
               "print(sum(double(ones([3]))), sum(double(ones([5]))), sum(double(ones([3]))), sum(double(ones([5]))))\n");
  ASSERT_TRUE(r->ok) << r->errors();
  EXPECT_EQ(r->out.str(), "6.0 10.0 6.0 10.0\n");
}

TEST(InterpReference, AsyncComputeAndAwait) {
  auto r = run("let x = ones([4])\nlet f = compute(x) @async {\n  @kernel elementwise\n  for i in 0..n:\n"
               "    out[i] = x[i] + 1.0\n}\nlet y = await f\nprint(sum(y))\n");
  ASSERT_TRUE(r->ok) << r->errors();
  EXPECT_EQ(r->out.str(), "8.0\n");
}

TEST(InterpReference, UnavailableDeviceIsAnError) {
  auto r = run("let x = ones([4])\nlet y = compute(x) @device(\"cuda:0\") {\n  @kernel elementwise\n"
               "  for i in 0..n:\n    out[i] = x[i]\n}\n");
  ASSERT_FALSE(r->ok);
  EXPECT_TRUE(contains(r->errors(), "device 'cuda:0' is not available")) << r->errors();
  EXPECT_TRUE(contains(r->errors(), "available devices: cpu, ")) << r->errors();
  EXPECT_TRUE(contains(r->errors(), "cpu:reference")) << r->errors();
}

}  // namespace
}  // namespace zyntax
