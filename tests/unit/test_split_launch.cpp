// Kernels shared out over several devices (@device([...]) @parallel(data |
// model)) give exactly the single-device result: element-wise, rows, a
// matrix product split by rows or columns, a stepped loop, uneven parts,
// more devices than iterations; kernels that cannot be split (a reduction,
// a transposed store) run whole; an error in one part is the launch's
// error. The cpu device shares its compiled kernel's parallel loop ("shared
// N ways"); the reference executor runs the kernel restricted to each
// device's range of the split loop ("split N ways along v"), given only
// the slabs of the tensors that range reads and writes.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <set>
#include <tuple>

#include "backends/registry.hpp"
#include "kernel_source.hpp"
#include "runtime/split_launch.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {
namespace {

using testing::kernel_of;

Tensor random_tensor(const Shape& s, uint64_t seed) {
  Random rng(seed);
  return rand_normal(rng, DType::F32, s);
}

// Split over `copies` uses of `device` against one launch on it: identical bits.
void expect_same_as_single(const std::string& src, SplitMode mode, const std::vector<Tensor>& inputs, const std::string& device,
                           size_t copies, const std::string& expected_how) {
  CompiledCompute compiled(kernel_of(src));
  Device* d = device_registry().find(device);
  std::vector<Device*> devices(copies, d);
  std::string how;
  Tensor split = launch_split(compiled, devices, mode, inputs, {}, {}, &how);
  Tensor single = compiled.launch(*d, inputs, {}, {});
  EXPECT_NE(how.find(expected_how), std::string::npos) << how;
  ASSERT_EQ(split.shape(), single.shape());
  EXPECT_EQ(std::memcmp(split.data(), single.data(), single.nbytes()), 0) << src << " on " << device << ": " << how;
}

const char* kElementwise =
    "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i] * 2.0 + 1.0\n }\n}";
const char* kSoftmax =
    "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  var m = -inf\n  for j in 0..c:\n"
    "   m = max(m, x[i, j])\n  var s = 0.0\n  for j in 0..c:\n   s += exp(x[i, j] - m)\n  for j in 0..c:\n"
    "   out[i, j] = exp(x[i, j] - m) / s\n }\n}";
const char* const kMatmul = testing::kPlainMatmul;

TEST(SplitLaunch, DataAndModelSplitsGiveTheSingleDeviceResult) {
  for (const char* device : {"cpu", "cpu:reference"}) {
    bool cpu = std::string(device) == "cpu";
    for (size_t copies : {2u, 3u, 5u}) {
      expect_same_as_single(kElementwise, SplitMode::Data, {random_tensor({1001}, 1)}, device, copies, cpu ? "shared" : "ways along i");
      expect_same_as_single(kSoftmax, SplitMode::Data, {random_tensor({7, 33}, 2)}, device, copies, cpu ? "shared" : "ways along i");
      // 33x17x20 and 9x17x23: column blocks of the register-blocked product cross the parts.
      for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{9, 17, 23}, {33, 17, 20}}) {
        std::vector<Tensor> ab = {random_tensor({m, k}, 3), random_tensor({k, n}, 4)};
        expect_same_as_single(kMatmul, SplitMode::Model, ab, device, copies, cpu ? "shared" : "ways along j");
        expect_same_as_single(kMatmul, SplitMode::Data, ab, device, copies, cpu ? "shared" : "ways along i");
      }
    }
  }
  // More devices than iterations: as many parts as iterations.
  expect_same_as_single(kElementwise, SplitMode::Data, {random_tensor({2}, 5)}, "cpu:reference", 4, "split 2 ways");
  expect_same_as_single(kElementwise, SplitMode::Data, {random_tensor({2}, 5)}, "cpu", 4, "shared 4 ways");
}

TEST(SplitLaunch, SteppedLoopsOwnTheIndicesUpToTheNextPart) {
  const char* stepped =
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..n step 3:\n  out[i] = x[i] + 1.0\n }\n}";
  expect_same_as_single(stepped, SplitMode::Data, {random_tensor({100}, 6)}, "cpu:reference", 3, "split 3 ways along i");
  expect_same_as_single(stepped, SplitMode::Data, {random_tensor({100}, 6)}, "cpu", 3, "shared 3 ways");
}

TEST(SplitLaunch, KernelsThatCannotBeSplitRunWhole) {
  const char* reduce = "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel reduce(+)\n for i in 0..n:\n  yield x[i]\n }\n}";
  expect_same_as_single(reduce, SplitMode::Data, {random_tensor({50}, 7)}, "cpu", 2, "ran whole");
  expect_same_as_single(reduce, SplitMode::Data, {random_tensor({50}, 7)}, "cpu:reference", 2, "ran whole");
  const char* transposed =
      "def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..r, j in 0..c:\n  out[j, i] = x[i, j]\n }\n}";
  expect_same_as_single(transposed, SplitMode::Data, {random_tensor({6, 4}, 8)}, "cpu:reference", 2, "ran whole");
  // Model split of a transposed store: the last axis is indexed by i, a parallel loop too.
  expect_same_as_single(transposed, SplitMode::Model, {random_tensor({6, 4}, 8)}, "cpu:reference", 2, "ways along i");
  // The cpu device shares any kernel with a parallel outer loop.
  expect_same_as_single(transposed, SplitMode::Data, {random_tensor({6, 4}, 8)}, "cpu", 2, "shared 2 ways");
}

TEST(SplitLaunch, AnErrorInOnePartIsTheLaunchsError) {
  const char* reads_past =
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i + 1]\n }\n}";
  CompiledCompute compiled(kernel_of(reads_past));
  Device* cpu = device_registry().find("cpu");
  std::vector<Tensor> in = {random_tensor({10}, 9)};
  std::string single, split;
  try {
    compiled.launch(*cpu, in, {}, {});
  } catch (const Error& e) {
    single = e.what();
  }
  try {
    launch_split(compiled, {cpu, cpu}, SplitMode::Data, in, {}, {});
  } catch (const Error& e) {
    split = e.what();
  }
  EXPECT_FALSE(single.empty());
  EXPECT_EQ(split, single);
  Device* ref = device_registry().find("cpu:reference");
  std::string split_ref;
  try {
    launch_split(compiled, {ref, ref}, SplitMode::Data, in, {}, {});
  } catch (const Error& e) {
    split_ref = e.what();
  }
  EXPECT_EQ(split_ref, single);
}

// A device that runs kernels on the reference executor and records the
// shapes of the tensors each run was given: what a device with memory of
// its own is sent.
class RecordingDevice : public Device {
 public:
  RecordingDevice() : inner_(*device_registry().find("cpu:reference")) {}
  const DeviceInfo& info() const override { return inner_.info(); }
  std::vector<std::vector<Shape>> received;

 protected:
  Attempt execute(const cir::Kernel& kernel, uint64_t key, const std::vector<Tensor>& inputs,
                  const std::map<std::string, Scalar>& scalars) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<Shape> shapes;
      for (const Tensor& t : inputs) shapes.push_back(t.shape());
      received.push_back(shapes);
    }
    return Attempt::done(inner_.run(kernel, key, inputs, scalars));
  }

 private:
  Device& inner_;
  std::mutex mu_;
};

// Devices with outputs of their own are sent only the slabs of the inputs
// their part reads at the split loop's index (rows of A for a data split,
// columns of B for a model split), and send back only the output's slab;
// an input read elsewhere along the axis goes whole. Same bits as one device.
TEST(SplitLaunch, DevicesWithMemoryOfTheirOwnGetOnlyTheirSlabs) {
  std::vector<Tensor> ab = {random_tensor({10, 6}, 3), random_tensor({6, 7}, 4)};
  expect_same_as_single(kMatmul, SplitMode::Data, ab, "cpu:reference", 3, "each device given its slabs of A and the output");
  expect_same_as_single(kMatmul, SplitMode::Model, ab, "cpu:reference", 3, "each device given its slabs of B and the output");
  expect_same_as_single(kSoftmax, SplitMode::Data, {random_tensor({7, 33}, 2)}, "cpu:reference", 2, "slabs of x and the output");
  const char* stencil =
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n - 1:\n  out[i] = x[i] + x[i + 1]\n }\n}";
  expect_same_as_single(stencil, SplitMode::Data, {random_tensor({50}, 5)}, "cpu:reference", 3, "given its slabs of the output");

  CompiledCompute matmul(kernel_of(kMatmul));
  RecordingDevice rec;
  std::vector<Device*> three(3, &rec);
  Tensor single = matmul.launch(*device_registry().find("cpu:reference"), ab, {}, {});
  Tensor split = launch_split(matmul, three, SplitMode::Data, ab, {}, {});
  EXPECT_EQ(std::memcmp(split.data(), single.data(), single.nbytes()), 0);
  std::multiset<Shape> a_rows, b_shapes;
  for (const auto& shapes : rec.received) {
    a_rows.insert(shapes.at(0));
    b_shapes.insert(shapes.at(1));
  }
  EXPECT_EQ(a_rows, (std::multiset<Shape>{{3, 6}, {3, 6}, {4, 6}}));
  EXPECT_EQ(b_shapes, (std::multiset<Shape>{{6, 7}, {6, 7}, {6, 7}}));
  rec.received.clear();
  split = launch_split(matmul, three, SplitMode::Model, ab, {}, {});
  EXPECT_EQ(std::memcmp(split.data(), single.data(), single.nbytes()), 0);
  std::multiset<Shape> b_cols;
  for (const auto& shapes : rec.received) {
    EXPECT_EQ(shapes.at(0), (Shape{10, 6}));
    b_cols.insert(shapes.at(1));
  }
  EXPECT_EQ(b_cols, (std::multiset<Shape>{{6, 2}, {6, 2}, {6, 3}}));

  // A stepped loop: each part is sent the rows from its first iteration to its last.
  const char* stepped =
      "def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..n step 3:\n  out[i] = x[i] + 1.0\n }\n}";
  CompiledCompute step3(kernel_of(stepped));
  rec.received.clear();
  std::vector<Tensor> x = {random_tensor({20}, 6)};
  split = launch_split(step3, {&rec, &rec}, SplitMode::Data, x, {}, {});
  Tensor whole = step3.launch(*device_registry().find("cpu:reference"), x, {}, {});
  EXPECT_EQ(std::memcmp(split.data(), whole.data(), whole.nbytes()), 0);
  std::multiset<Shape> x_rows;
  for (const auto& shapes : rec.received) x_rows.insert(shapes.at(0));
  EXPECT_EQ(x_rows, (std::multiset<Shape>{{10}, {7}})) << "rows 0 to 6 for iterations 0, 3, 6; rows 9 to 18 for 9, 12, 15, 18";
}

}  // namespace
}  // namespace zyntax
