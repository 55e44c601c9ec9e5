// ZynML programs from C++ (zyntax/program.hpp): a user's own kernels loaded
// from a file or source text and called on arrays, on every device, against
// host computations in double precision; and the errors a caller meets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "api_test_helpers.hpp"
#include "zyntax/zyntax.hpp"

namespace {

using namespace zyntax;
using test::error_of;

const char* kSource = R"(
// Row softmax with a temperature.
def softmax(x: tensor[n, m, f32], temperature: f32) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            let mut top = x[i, 0]
            for j in 0..m:
                top = max(top, x[i, j])
            let mut total = 0.0
            for j in 0..m:
                total += exp((x[i, j] - top) / temperature)
            for j in 0..m:
                out[i, j] = exp((x[i, j] - top) / temperature) / total
    }
}

def axpy(a: tensor[n, f64], b: tensor[n, f64]) {
    return compute(a, b) {
        @kernel elementwise
        for i in 0..n:
            out[i] = 2.5 * a[i] + b[i]
    }
}

def shift(ids: tensor[n, i64], by: i64) {
    return compute(ids) {
        @kernel elementwise
        for i in 0..n:
            out[i] = ids[i] + by
    }
}
)";

std::vector<ComputeDevice> devices() {
  std::vector<ComputeDevice> out;
  for (const DeviceDescription& d : compute_devices()) out.push_back(ComputeDevice::open(d.id));
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed) { return test::random_normal(n, seed, 2.0f); }

TEST(Program, KernelsOfASourceRunOnEveryDeviceAgainstTheHost) {
  for (const ComputeDevice& dev : devices()) {
    Program prog = Program::from_source(kSource, "kernels.zynml", dev);
    EXPECT_EQ(prog.kernel_names(), (std::vector<std::string>{"softmax", "axpy", "shift"}));
    for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 1}, {3, 7}, {17, 33}}) {
      std::vector<float> x = random_floats(rows * cols, static_cast<uint32_t>(rows * 100 + cols));
      Array out = prog.kernel("softmax").run(dev, {Array::from_vector(dev, x, {rows, cols})}, {{"temperature", 0.7}});
      ASSERT_EQ(out.shape(), (std::vector<size_t>{rows, cols}));
      std::vector<float> got = out.to_vector<float>();
      for (size_t i = 0; i < rows; ++i) {
        double top = -INFINITY, total = 0;
        for (size_t j = 0; j < cols; ++j) top = std::max(top, double(x[i * cols + j]));
        for (size_t j = 0; j < cols; ++j) total += std::exp((x[i * cols + j] - top) / 0.7);
        for (size_t j = 0; j < cols; ++j)
          ASSERT_NEAR(got[i * cols + j], std::exp((x[i * cols + j] - top) / 0.7) / total, 2e-6)
              << dev.id() << " [" << rows << ", " << cols << "] at " << i << ", " << j;
      }
    }
    std::vector<double> a{1, -2, 3.25, 1e300}, b{0.5, 0.5, -1, 0};
    std::vector<double> y = prog.kernel("axpy")({Array::from_vector(dev, a, {4}), Array::from_vector(dev, b, {4})})
                                .to_vector<double>();
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(y[i], 2.5 * a[i] + b[i]) << dev.id();
    std::vector<int64_t> ids{0, -5, INT64_MAX - 7};
    std::vector<int64_t> shifted =
        prog.kernel("shift").run(dev, {Array::from_vector(dev, ids, {3})}, {{"by", 7}}).to_vector<int64_t>();
    EXPECT_EQ(shifted, (std::vector<int64_t>{7, 2, INT64_MAX})) << dev.id();
  }
}

TEST(Program, LoadsAFileAndReadsHostMemoryInPlaceOnTheCpu) {
  std::string path = testing::TempDir() + "/program_kernels.zynml";
  std::ofstream(path) << kSource;
  ComputeDevice cpu = ComputeDevice::open("cpu");
  Program prog = Program::load(path, cpu);
  std::vector<double> a{1, 2, 3}, b{10, 20, 30};
  Array va = Array::from_host(cpu, a.data(), ElementType::F64, {3}, /*copy=*/false);
  EXPECT_EQ(va.host_data(), a.data());  // no copy
  Array y = prog.kernel("axpy")({va, Array::from_vector(cpu, b, {3})});
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{12.5, 25, 37.5}));
  a[1] = 4;  // the array is the caller's memory
  EXPECT_EQ(prog.kernel("axpy")({va, Array::from_vector(cpu, b, {3})}).to_vector<double>()[1], 30);
}

TEST(Program, AnOwnerKeepsHostMemoryReadInPlaceAliveWhileAnythingReadsIt) {
  ComputeDevice cpu = ComputeDevice::open("cpu");
  Program prog = Program::from_source(kSource, "kernels.zynml", cpu);
  auto data = std::make_shared<std::vector<double>>(std::vector<double>{1, 2, 3});
  std::weak_ptr<std::vector<double>> watch = data;
  Array a = Array::from_host(cpu, data->data(), ElementType::F64, {3}, std::shared_ptr<const void>(data));
  data.reset();  // the caller lets go: the array holds it
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(prog.kernel("axpy")({a, a}).to_vector<double>(), (std::vector<double>{3.5, 7, 10.5}));
  a = Array();
  EXPECT_TRUE(watch.expired());  // and lets go when nothing reads it
}

TEST(Program, ErrorsNameTheKernelTheArgumentAndBothShapes) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Program prog = Program::from_source(kSource, "kernels.zynml", dev);
  Array x = Array::from_vector<float>(dev, std::vector<float>(6, 1.0f), {2, 3});
  Array d = Array::from_vector<double>(dev, {1, 2, 3}, {3});
  Array d4 = Array::from_vector<double>(dev, {1, 2, 3, 4}, {4});

  EXPECT_THROW(prog.kernel("sofmax"), ProgramError);
  EXPECT_NE(error_of([&] { prog.kernel("sofmax"); }).find("did you mean 'softmax'?"), std::string::npos);
  EXPECT_NE(error_of([&] { prog.kernel("nothing_like_it"); }).find("its kernels: softmax, axpy, shift"), std::string::npos);

  EXPECT_THROW(prog.kernel("axpy")({d}), ShapeError);
  EXPECT_NE(error_of([&] { prog.kernel("axpy")({d}); }).find("takes 2 arrays, got 1"), std::string::npos);
  std::string wrong_type = error_of([&] { prog.kernel("axpy")({x, d}); });
  EXPECT_NE(wrong_type.find("argument a is f32 [2, 3], but the kernel takes tensor[n, f64]"), std::string::npos) << wrong_type;
  std::string sizes = error_of([&] { prog.kernel("axpy")({d, d4}); });
  EXPECT_NE(sizes.find("kernel axpy"), std::string::npos) << sizes;
  EXPECT_NE(sizes.find("4"), std::string::npos) << sizes;
  EXPECT_NE(sizes.find("3"), std::string::npos) << sizes;
  std::string missing = error_of([&] { prog.kernel("softmax")({x}); });
  EXPECT_NE(missing.find("needs the host value 'temperature'"), std::string::npos) << missing;
  std::string unknown = error_of([&] { prog.kernel("softmax")({x}, {{"temperature", 1}, {"temp", 2}}); });
  EXPECT_NE(unknown.find("reads no host value 'temp' (it reads temperature)"), std::string::npos) << unknown;
  std::string fraction = error_of([&] { prog.kernel("shift")({Array::from_vector<int64_t>(dev, {1}, {1})}, {{"by", 0.5}}); });
  EXPECT_NE(fraction.find("'by' is an integer"), std::string::npos) << fraction;
  EXPECT_THROW(Array::from_vector<float>(dev, {1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_THROW(Array::from_host(dev, nullptr, ElementType::F32, {SIZE_MAX / 2, 4}), ShapeError);

  // A program that does not compile: every diagnostic, located.
  std::string diagnostics = error_of([] { Program::from_source("let x = 1\nlet y = z + 1\n", "bad.zynml", ComputeDevice::open("cpu")); });
  EXPECT_NE(diagnostics.find("bad.zynml:2:9: error: unknown name 'z'"), std::string::npos) << diagnostics;
  EXPECT_NE(diagnostics.find("^"), std::string::npos) << diagnostics;
  EXPECT_THROW(Program::load("/nonexistent/kernels.zynml", dev), ProgramError);

}

TEST(Program, AKernelsResultIsKnownFromItsArgumentsTypesWithoutRunningIt) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Program prog = Program::from_source(kSource, "kernels.zynml", dev);
  using Spec = Kernel::ArraySpec;
  for (size_t n : {1, 7, 1000}) {
    Spec out = prog.kernel("axpy").result_spec({{ElementType::F64, {n}}, {ElementType::F64, {n}}});
    EXPECT_EQ(out.type, ElementType::F64);
    EXPECT_EQ(out.shape, std::vector<size_t>{n});
    // As running it gives.
    Array a = Array::from_vector<double>(dev, std::vector<double>(n, 1.0), {n});
    EXPECT_EQ(prog.kernel("axpy")({a, a}).shape(), out.shape);
  }
  Spec soft = prog.kernel("softmax").result_spec({{ElementType::F32, {3, 5}}}, {{"temperature", 1.0}});
  EXPECT_EQ(soft.shape, (std::vector<size_t>{3, 5}));
  // The same errors as a call's, naming the kernel, the argument and both shapes.
  std::string sizes = error_of([&] { prog.kernel("axpy").result_spec({{ElementType::F64, {3}}, {ElementType::F64, {4}}}); });
  EXPECT_NE(sizes.find("kernel axpy"), std::string::npos) << sizes;
  EXPECT_NE(sizes.find("[4]"), std::string::npos) << sizes;
  std::string type = error_of([&] { prog.kernel("axpy").result_spec({{ElementType::F32, {3}}, {ElementType::F64, {3}}}); });
  EXPECT_NE(type.find("argument a is f32 [3], but the kernel takes tensor[n, f64]"), std::string::npos) << type;
  std::string missing = error_of([&] { prog.kernel("softmax").result_spec({{ElementType::F32, {3, 5}}}); });
  EXPECT_NE(missing.find("needs the host value 'temperature'"), std::string::npos) << missing;
}

TEST(Program, ATopLevelBlockIsAKernelNamedByItsVariable) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Program prog = Program::from_source("let a = load(\"a.npy\")\nlet doubled = compute(a) {\n    @kernel elementwise\n"
                                      "    for i in 0..4:\n        out[i] = a[i] * 2.0\n}\n",
                                      "top.zynml", dev);
  Kernel k = prog.kernel("doubled");
  EXPECT_EQ(k.signature(), "doubled(a: tensor[a.d0, f32])");
  EXPECT_EQ(k({Array::from_vector<float>(dev, {1, 2, 3, 4, 5}, {5})}).to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
}

// Functions called with their host code: a softmax written as four blocks
// with host code between them runs as the program would under `zyntax run`
// (its blocks fused), against the host's computation, on every device.
// tests/api/functions.zynml, which python/tests/test_functions.py calls too.
std::string functions_path() { return std::string(ZYNTAX_SOURCE_DIR) + "/tests/api/functions.zynml"; }

TEST(Program, FunctionsRunWithTheirHostCodeOnEveryDevice) {
  for (const ComputeDevice& dev : devices()) {
    Program prog = Program::load(functions_path(), dev);
    EXPECT_EQ(prog.function_names(), (std::vector<std::string>{"softmax_rows", "stats", "gather"}));
    Function softmax = prog.function("softmax_rows");
    EXPECT_EQ(softmax.signature(), "softmax_rows(x: tensor[n, m, f32], temperature: f32)");
    ASSERT_EQ(softmax.params().size(), 2u);
    EXPECT_TRUE(softmax.params()[0].tensor && softmax.params()[0].has_type && softmax.params()[0].type == ElementType::F32);
    EXPECT_FALSE(softmax.params()[1].tensor);
    for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 1}, {5, 9}, {33, 17}}) {
      std::vector<float> x = random_floats(rows * cols, static_cast<uint32_t>(rows * 7 + cols));
      for (bool keyword : {false, true}) {
        std::vector<Array> out = keyword ? softmax({Array::from_vector(dev, x, {rows, cols})}, {{"temperature", 0.5}})
                                         : softmax({Array::from_vector(dev, x, {rows, cols}), 0.5});
        ASSERT_EQ(out.size(), 1u);
        ASSERT_EQ(out[0].shape(), (std::vector<size_t>{rows, cols}));
        std::vector<float> got = out[0].to_vector<float>();
        for (size_t i = 0; i < rows; ++i) {
          double top = -INFINITY, total = 0;
          for (size_t j = 0; j < cols; ++j) top = std::max(top, double(x[i * cols + j]));
          for (size_t j = 0; j < cols; ++j) total += std::exp((x[i * cols + j] - top) * 2.0);
          for (size_t j = 0; j < cols; ++j)
            ASSERT_NEAR(got[i * cols + j], std::exp((x[i * cols + j] - top) * 2.0) / total, 2e-6) << dev.id();
        }
      }
    }
    std::vector<Array> st = prog.function("stats")({Array::from_vector(dev, std::vector<double>{1, 2, 4}, {3})});
    ASSERT_EQ(st.size(), 3u);
    EXPECT_EQ(st[0].to_vector<double>(), (std::vector<double>{2, 4, 8}));
    EXPECT_EQ(st[1].shape(), std::vector<size_t>{});
    EXPECT_EQ(st[1].to_vector<double>(), std::vector<double>{7});
    EXPECT_EQ(st[2].to_vector<int64_t>(), std::vector<int64_t>{3});
  }
}

TEST(Program, FunctionErrorsSayWhatAndWhere) {
  ComputeDevice dev = ComputeDevice::open("cpu");
  Program prog = Program::load(functions_path(), dev);
  EXPECT_NE(error_of([&] { prog.function("softmax_row"); }).find("no function 'softmax_row' (did you mean 'softmax_rows'?)"),
            std::string::npos);
  Function gather = prog.function("gather");
  EXPECT_NE(error_of([&] { gather({Array::from_vector(dev, std::vector<float>(8, 1.0f), {8}), 1, 2}); })
                .find("function gather takes 2 arguments, got 3: gather(x: tensor[n, f32], at: int)"),
            std::string::npos);
  // An index out of range inside its block: the block's line and caret.
  std::string oob = error_of([&] { gather({Array::from_vector(dev, std::vector<float>(4, 1.0f), {4}), 1}); });
  EXPECT_NE(oob.find("functions.zynml:36:22: error: index out of bounds"), std::string::npos) << oob;
  EXPECT_NE(oob.find("^"), std::string::npos) << oob;
  // A wrong element type: the parameter's declared type.
  std::string type = error_of([&] { gather({Array::from_vector(dev, std::vector<double>(8, 1.0), {8}), 1}); });
  EXPECT_NE(type.find("x"), std::string::npos) << type;
  EXPECT_NE(type.find("f32"), std::string::npos) << type;
  // The program goes on after an error.
  EXPECT_EQ(gather({Array::from_vector(dev, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}, {8}), 3})[0].to_vector<float>()[0], 3.0f);
}

}  // namespace
