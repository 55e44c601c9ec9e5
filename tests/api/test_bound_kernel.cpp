// Kernel::bind and BoundKernel (zyntax/program.hpp): a call bound once per
// signature, then run on host memory or arrays. The bound fast path against
// the reference executor on random inputs of many shapes; the general path
// it hands over to (a failed runtime check, reduce kernels, other devices);
// the cache of bindings; and the errors of a bound call.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "api_test_helpers.hpp"
#include "zyntax/zyntax.hpp"

namespace {

using namespace zyntax;
using test::error_of;

const char* kSource = R"(
def scale(x: tensor[n, m, f32], by: f32) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            for j in 0..m:
                out[i, j] = x[i, j] * by + 1.0
    }
}

def row_sums(x: tensor[n, m, f64]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            let mut s = 0.0
            for j in 0..m:
                s += x[i, j]
            out[i] = s
    }
}

def pick(x: tensor[n, f32], at: int) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i + at]
    }
}

def transpose(x: tensor[n, m, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..m, j in 0..n:
            out[i, j] = x[j, i]
    }
}

def gather(t: tensor[v, d, f32], ids: tensor[n, i32]) {
    return compute(t, ids) {
        @kernel elementwise
        for i in 0..n, k in 0..d:
            out[i, k] = t[ids[i], k]
    }
}

def total(x: tensor[n, f32]) {
    return compute(x) {
        @kernel reduce(+)
        for i in 0..n:
            yield x[i]
    }
}
)";

Kernel::ArraySpec spec(ElementType t, std::vector<size_t> shape) { return {t, std::move(shape)}; }

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

TEST(BoundKernel, FastPathAgreesWithTheReferenceExecutorOnManyShapes) {
  ComputeDevice cpu = ComputeDevice::open("cpu");
  ComputeDevice reference = ComputeDevice::open("cpu:reference");
  Program prog = Program::from_source(kSource, "bound.zynml", cpu);
  Kernel scale = prog.kernel("scale"), sums = prog.kernel("row_sums");
  const std::vector<std::pair<size_t, size_t>> shapes = {{1, 1}, {1, 7}, {3, 5}, {16, 16}, {33, 129}, {257, 3}, {64, 1000}};
  uint32_t seed = 1;
  for (auto [n, m] : shapes) {
    std::vector<float> x = test::random_normal<float>(n * m, seed++, 2.0f);
    std::vector<float> out(n * m, -7.0f);
    auto bound = scale.bind(cpu, {spec(ElementType::F32, {n, m})}, {{"by", 0.75}});
    const void* in[] = {x.data()};
    bound->run_host(in, out.data());
    std::vector<float> want = scale.run(reference, {Array::from_vector(reference, x, {n, m})}, {{"by", 0.75}}).to_vector<float>();
    for (size_t i = 0; i < out.size(); ++i) ASSERT_FLOAT_EQ(out[i], want[i]) << n << "x" << m << " at " << i;
    // run() on arrays gives the same.
    EXPECT_EQ(bound->run({Array::from_vector(cpu, x, {n, m})}).to_vector<float>(), out) << n << "x" << m;

    std::vector<double> xd = test::random_normal<double>(n * m, seed++, 1.0);
    std::vector<double> sd(n);
    const void* ind[] = {xd.data()};
    sums.bind(cpu, {spec(ElementType::F64, {n, m})})->run_host(ind, sd.data());
    std::vector<double> want_sums = sums.run(reference, {Array::from_vector(reference, xd, {n, m})}).to_vector<double>();
    EXPECT_LT(max_difference(sd, want_sums), 1e-12 * static_cast<double>(m)) << n << "x" << m;
  }
}

// Kernels are compiled on the promise that their output shares memory with
// nothing they read; a caller's `out` over an input is run into fresh
// memory first, so the result is the one the reference gives.
TEST(BoundKernel, AResultWrittenOverItsOwnInputIsTheReferencesResult) {
  ComputeDevice cpu = ComputeDevice::open("cpu");
  ComputeDevice reference = ComputeDevice::open("cpu:reference");
  Program prog = Program::from_source(kSource, "bound.zynml", cpu);
  Kernel transpose = prog.kernel("transpose"), scale = prog.kernel("scale");
  uint32_t seed = 40;
  for (size_t n : {1, 5, 33, 200}) {
    std::vector<float> x = test::random_normal<float>(n * n, seed++, 1.0f);
    std::vector<float> want = transpose.run(reference, {Array::from_vector(reference, x, {n, n})}).to_vector<float>();
    const void* in[] = {x.data()};
    transpose.bind(cpu, {spec(ElementType::F32, {n, n})})->run_host(in, x.data());
    EXPECT_EQ(x, want) << n << "x" << n;
  }
  // Overlapping in part: the result starts one row into the input.
  std::vector<float> x = test::random_normal<float>(8 * 9, seed++, 1.0f);
  std::vector<float> want = scale.run(reference, {Array::from_vector(reference, std::vector<float>(x.begin(), x.begin() + 63), {7, 9})},
                                      {{"by", 2.0}}).to_vector<float>();
  const void* in[] = {x.data()};
  scale.bind(cpu, {spec(ElementType::F32, {7, 9})}, {{"by", 2.0}})->run_host(in, x.data() + 9);
  EXPECT_EQ(std::vector<float>(x.begin() + 9, x.end()), want);
}

// A gather reads its index once per row (the output does not alias the
// indices): the same rows as the reference at odd sizes, and an index out of
// range still reported.
TEST(BoundKernel, AGatherAgreesWithTheReferenceAndReportsAnIndexOutOfRange) {
  ComputeDevice cpu = ComputeDevice::open("cpu");
  ComputeDevice reference = ComputeDevice::open("cpu:reference");
  Program prog = Program::from_source(kSource, "bound.zynml", cpu);
  Kernel gather = prog.kernel("gather");
  uint32_t seed = 60;
  for (auto [v, d, n] : std::vector<std::array<size_t, 3>>{{1, 1, 1}, {7, 3, 5}, {100, 17, 33}, {1000, 768, 129}}) {
    std::vector<float> t = test::random_normal<float>(v * d, seed++, 1.0f);
    std::vector<int32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7919 + seed) % v);
    std::vector<float> out(n * d);
    const void* in[] = {t.data(), ids.data()};
    gather.bind(cpu, {spec(ElementType::F32, {v, d}), spec(ElementType::I32, {n})})->run_host(in, out.data());
    std::vector<float> want = gather.run(reference, {Array::from_vector(reference, t, {v, d}), Array::from_vector(reference, ids, {n})})
                                  .to_vector<float>();
    EXPECT_EQ(out, want) << v << "x" << d << ", " << n << " rows";
    ids[n / 2] = static_cast<int32_t>(v);
    std::string said = error_of([&] { gather.bind(cpu, {spec(ElementType::F32, {v, d}), spec(ElementType::I32, {n})})->run_host(in, out.data()); });
    EXPECT_NE(said.find("index out of bounds"), std::string::npos) << said;
    EXPECT_EQ(said, error_of([&] { gather.run(cpu, {Array::from_vector(cpu, t, {v, d}), Array::from_vector(cpu, ids, {n})}); }));
    EXPECT_NE(error_of([&] { gather.run(reference, {Array::from_vector(reference, t, {v, d}), Array::from_vector(reference, ids, {n})}); })
                  .find("index out of bounds"),
              std::string::npos);
  }
}

TEST(BoundKernel, BindingsAreKeptPerSignature) {
  ComputeDevice cpu = ComputeDevice::open("cpu");
  Program prog = Program::from_source(kSource, "bound.zynml", cpu);
  Kernel scale = prog.kernel("scale");
  auto a = scale.bind(cpu, {spec(ElementType::F32, {4, 5})}, {{"by", 2.0}});
  EXPECT_EQ(scale.bind(cpu, {spec(ElementType::F32, {4, 5})}, {{"by", 2.0}}), a);  // a lookup
  EXPECT_NE(scale.bind(cpu, {spec(ElementType::F32, {4, 6})}, {{"by", 2.0}}), a);
  EXPECT_NE(scale.bind(cpu, {spec(ElementType::F32, {4, 5})}, {{"by", 3.0}}), a);
  EXPECT_EQ(a->result().type, ElementType::F32);
  EXPECT_EQ(a->result().shape, (std::vector<size_t>{4, 5}));
  EXPECT_EQ(a->result_bytes(), 4u * 5 * 4);
  EXPECT_EQ(a->bytes(), 2u * 4 * 5 * 4);
  // Host values are part of the signature: each binding computes with its own.
  std::vector<float> x(20, 1.0f), out(20);
  const void* in[] = {x.data()};
  scale.bind(cpu, {spec(ElementType::F32, {4, 5})}, {{"by", 3.0}})->run_host(in, out.data());
  EXPECT_EQ(out[19], 4.0f);
  a->run_host(in, out.data());
  EXPECT_EQ(out[19], 3.0f);
  // Kernel::run binds too, and counts as a launch on the device.
  uint64_t before = cpu.kernel_launches();
  EXPECT_EQ(scale({Array::from_vector(cpu, x, {4, 5})}, {{"by", 2.0}}).to_vector<float>()[0], 3.0f);
  EXPECT_EQ(cpu.kernel_launches(), before + 1);
}

TEST(BoundKernel, AFailedCheckIsReportedAsTheGeneralPathReportsIt) {
  ComputeDevice cpu = ComputeDevice::open("cpu");
  Program prog = Program::from_source(kSource, "bound.zynml", cpu);
  Kernel pick = prog.kernel("pick");
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7}, out(8);
  const void* in[] = {x.data()};
  auto bound = pick.bind(cpu, {spec(ElementType::F32, {8})}, {{"at", 1}});
  std::string said = error_of([&] { bound->run_host(in, out.data()); });
  EXPECT_NE(said.find("bound.zynml:"), std::string::npos) << said;
  EXPECT_NE(said.find("index out of bounds"), std::string::npos) << said;
  EXPECT_EQ(said, error_of([&] { pick.run(cpu, {Array::from_vector(cpu, x, {8})}, {{"at", 1}}); }));
  // The binding goes on working where the indices are in range.
  pick.bind(cpu, {spec(ElementType::F32, {8})}, {{"at", 0}})->run_host(in, out.data());
  EXPECT_EQ(out, x);
}

TEST(BoundKernel, ReduceKernelsAndOtherDevicesTakeTheGeneralPath) {
  for (const char* id : {"cpu", "cpu:reference"}) {
    ComputeDevice dev = ComputeDevice::open(id);
    Program prog = Program::from_source(kSource, "bound.zynml", dev);
    for (size_t n : {1u, 17u, 1000u}) {
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
      double want = 0;
      for (float v : x) want += v;
      float got = -1;
      const void* in[] = {x.data()};
      auto bound = prog.kernel("total").bind(dev, {spec(ElementType::F32, {n})});
      EXPECT_TRUE(bound->result().shape.empty()) << id;
      bound->run_host(in, &got);
      EXPECT_FLOAT_EQ(got, static_cast<float>(want)) << id << " n=" << n;
      std::vector<float> scaled(n);
      prog.kernel("scale").bind(dev, {spec(ElementType::F32, {1, n})}, {{"by", -1.0}})->run_host(in, scaled.data());
      EXPECT_EQ(scaled[0], 1.0f - x[0]) << id;
    }
  }
}

TEST(BoundKernel, ErrorsNameTheKernelTheArgumentAndBothShapes) {
  ComputeDevice cpu = ComputeDevice::open("cpu");
  Program prog = Program::from_source(kSource, "bound.zynml", cpu);
  Kernel scale = prog.kernel("scale");
  EXPECT_NE(error_of([&] { scale.bind(cpu, {spec(ElementType::F64, {2, 2})}, {{"by", 1.0}}); })
                .find("kernel scale: argument x is f64 [2, 2], but the kernel takes tensor[n, m, f32]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { scale.bind(cpu, {spec(ElementType::F32, {2, 2})}); }).find("needs the host value 'by'"),
            std::string::npos);
  auto bound = scale.bind(cpu, {spec(ElementType::F32, {2, 2})}, {{"by", 1.0}});
  std::string said = error_of([&] { bound->run({Array::from_vector(cpu, std::vector<float>(6), {2, 3})}); });
  EXPECT_NE(said.find("kernel scale: argument 0 is f32 [2, 3], but the kernel is bound for f32 [2, 2]"), std::string::npos) << said;
  EXPECT_NE(error_of([&] { bound->run({}); }).find("kernel scale is bound for 1 arrays, got 0"), std::string::npos);
}

TEST(BoundKernel, ABindingOutlivingItsProgram) {
  ComputeDevice cpu = ComputeDevice::open("cpu");
  ComputeDevice reference = ComputeDevice::open("cpu:reference");
  std::shared_ptr<const BoundKernel> fast, general;
  {
    Program prog = Program::from_source(kSource, "bound.zynml", cpu);
    fast = prog.kernel("scale").bind(cpu, {spec(ElementType::F32, {1, 3})}, {{"by", 2.0}});
    general = prog.kernel("scale").bind(reference, {spec(ElementType::F32, {1, 3})}, {{"by", 2.0}});
  }
  std::vector<float> x = {1, 2, 3}, out(3);
  const void* in[] = {x.data()};
  fast->run_host(in, out.data());  // the compiled kernel needs nothing of the program
  EXPECT_EQ(out, (std::vector<float>{3, 5, 7}));
  EXPECT_NE(error_of([&] { general->run_host(in, out.data()); }).find("kernel scale: its program is gone"), std::string::npos);
}

}  // namespace
