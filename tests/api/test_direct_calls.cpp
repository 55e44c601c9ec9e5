// A program's host functions called from C++ straight into their compiled
// code (interp/direct_call): once a function runs compiled, calls with
// arguments of the same types skip the interpreter. Each call is checked
// against the interpreter's own result for the same arguments (the first
// calls, before compiling) or against the host; errors read the same
// whichever path raised them; arguments the direct path cannot vouch for go
// through the interpreter and fail as they always did.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api_test_helpers.hpp"
#include "zyntax/zyntax.hpp"

namespace {

using namespace zyntax;
using test::error_of;

const char* kSource = R"(def ema(prices: tensor[n, f64], alpha: float) -> float {
    var s = prices[0]
    for i in 1..n {
        s = alpha * prices[i] + (1.0 - alpha) * s
    }
    return s
}

def dot(a: tensor[n, f64], b: tensor[n, f64]) -> float {
    var s = 0.0
    for i in 0..n {
        s += a[i] * b[i]
    }
    return s
}

def fib(k: int) -> int {
    if k < 2 {
        return k
    }
    return fib(k - 1) + fib(k - 2)
}

def halve(x: float) -> float {
    return x / 2
}

def wrap(k) {
    return k * 4611686018427387904 + 7
}

def first_of_three(t: tensor[3, i64]) -> int {
    return t[0] + t[2]
}

def scale(t: tensor[n, m, f32], by: f32) {
    for i in 0..n {
        for j in 0..m {
            t[i, j] = t[i, j] * by
        }
    }
}

def at(t: tensor[n, f64], i: int) -> float {
    return t[i]
}

def down(k: int) -> int {
    if k == 0 {
        return 0
    }
    return 1 + down(k - 1)
}
)";

struct DirectCalls : ::testing::Test {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Program prog = Program::from_source(kSource, "direct.zynml", dev);

  // Calls `f` until its calls go straight into compiled code (the tier
  // compiles in the background after a couple of calls, taking as long as
  // the machine takes).
  std::vector<Argument> call_until_direct(const Function& f, const std::vector<Argument>& args) {
    std::vector<Argument> out;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      out = f.call(args);
      if (f.last_tier() == "direct") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(f.last_tier(), "direct") << f.name();
    return out;
  }
  Array f64s(const std::vector<double>& v) { return Array::from_vector(dev, v, {v.size()}); }
};

std::vector<double> random_doubles(size_t n, uint32_t seed) { return test::random_normal(n, seed, 3.0); }

TEST_F(DirectCalls, ResultsMatchTheInterpretersBitForBitAtEverySize) {
  Function ema = prog.function("ema");
  std::vector<double> first = random_doubles(37, 1);
  // The interpreter's answer, from the first call.
  double interpreted = ema.call({f64s(first), 0.3})[0].number().value();
  EXPECT_EQ(ema.last_tier(), "interpreted");
  EXPECT_EQ(call_until_direct(ema, {f64s(first), 0.3})[0].number().value(), interpreted);
  // Other sizes: the same code (sizes are values), each against the host.
  for (size_t n : {1, 2, 3, 17, 1000, 4097}) {
    std::vector<double> p = random_doubles(n, static_cast<uint32_t>(n));
    double s = p[0];
    for (size_t i = 1; i < n; ++i) s = 0.3 * p[i] + (1.0 - 0.3) * s;
    EXPECT_EQ(ema.call({f64s(p), 0.3})[0].number().value(), s) << n;
    EXPECT_EQ(ema.last_tier(), "direct") << n;
  }
  // An int where the parameter is a float: converted as binding converts it.
  Function halve = prog.function("halve");
  call_until_direct(halve, {3.0});
  std::vector<Argument> h = halve.call({7});
  EXPECT_FALSE(h[0].number().is_integer());
  EXPECT_EQ(h[0].number().value(), 3.5);
  // Integer arithmetic wraps as the interpreter's does.
  Function wrap = prog.function("wrap");
  long long wrapped = wrap.call({3})[0].number().integer();
  call_until_direct(wrap, {3});
  EXPECT_EQ(wrap.call({3})[0].number().integer(), wrapped);
  EXPECT_EQ(wrap.call({5})[0].number().integer(), static_cast<long long>(5ULL * 4611686018427387904ULL + 7));
}

TEST_F(DirectCalls, RecursionRunsOnADeepEnoughStack) {
  Function fib = prog.function("fib");
  EXPECT_EQ(call_until_direct(fib, {20})[0].number().integer(), 6765);
  EXPECT_EQ(fib.call({30})[0].number().integer(), 832040);
  // Deep recursion runs; runaway recursion fails with the same message,
  // whichever path raised it.
  Function down = prog.function("down");
  std::string interpreted = error_of([&] { down.call({-1}); });
  EXPECT_NE(interpreted.find("direct.zynml:52:16: error: calls nested more than"), std::string::npos) << interpreted;
  EXPECT_EQ(call_until_direct(down, {10})[0].number().integer(), 10);
  EXPECT_EQ(down.call({2500})[0].number().integer(), 2500);  // within every build's limit
  EXPECT_EQ(error_of([&] { down.call({-1}); }), interpreted);
  EXPECT_EQ(down.last_tier(), "direct");
}

TEST_F(DirectCalls, WritesIntoTensorsReachTheCallersArray) {
  Function scale = prog.function("scale");
  Array t = Array::from_vector(dev, std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  call_until_direct(scale, {t, 1.0});
  EXPECT_TRUE(scale.call({t, 2.5}).empty());
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{2.5f, 5, 7.5f, 10, 12.5f, 15}));
}

TEST_F(DirectCalls, ErrorsReadAsTheInterpretersDo) {
  Function at = prog.function("at");
  std::vector<double> v = {1, 2, 3, 4};
  std::string interpreted = error_of([&] { at.call({f64s(v), 9}); });
  EXPECT_NE(interpreted.find("direct.zynml:45:14: error: index 9 is out of range for axis 0"), std::string::npos) << interpreted;
  call_until_direct(at, {f64s(v), 1});
  EXPECT_EQ(error_of([&] { at.call({f64s(v), 9}); }), interpreted);
  EXPECT_EQ(at.last_tier(), "direct");
  EXPECT_EQ(at.call({f64s(v), -1})[0].number().value(), 4.0);  // from the end, as in the interpreter
}

TEST_F(DirectCalls, ArgumentsItCannotVouchForGoThroughTheInterpreter) {
  Function dot = prog.function("dot");
  std::vector<double> a = {1, 2, 3}, b = {4, 5, 6};
  EXPECT_EQ(call_until_direct(dot, {f64s(a), f64s(b)})[0].number().value(), 32.0);
  // Sizes that disagree: the interpreter's error, naming both.
  std::string e = error_of([&] { dot.call({f64s(a), f64s({1, 2})}); });
  EXPECT_NE(e.find("axis 0 is 2, but 'n' is 3"), std::string::npos) << e;
  // Another element type, another kind: the interpreter's errors.
  e = error_of([&] { dot.call({Array::from_vector(dev, std::vector<float>{1, 2, 3}, {3}), f64s(b)}); });
  EXPECT_NE(e.find("must be a tensor of f64"), std::string::npos) << e;
  e = error_of([&] { dot.call({1.0, f64s(b)}); });
  EXPECT_NE(e.find("must be a tensor"), std::string::npos) << e;
  // A size written as a number.
  Function first = prog.function("first_of_three");
  Array three = Array::from_vector(dev, std::vector<int64_t>{4, 5, 6}, {3});
  EXPECT_EQ(call_until_direct(first, {three})[0].number().integer(), 10);
  e = error_of([&] { first.call({Array::from_vector(dev, std::vector<int64_t>{4, 5}, {2})}); });
  EXPECT_NE(e.find("axis 0 must be 3"), std::string::npos) << e;
  // And the direct path still serves the calls it took.
  EXPECT_EQ(dot.call({f64s(a), f64s(b)})[0].number().value(), 32.0);
  EXPECT_EQ(dot.last_tier(), "direct");
}

}  // namespace
