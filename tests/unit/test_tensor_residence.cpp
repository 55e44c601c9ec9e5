// Tensors whose bytes a device holds (Tensor::set_mirror): the host's copy
// is filled on first host access, once, whichever thread gets there first;
// a host write drops the device's copy; views and handles share all this.
// The device here keeps its copy in memory of its own on the host, counting
// the copies back; the GPU's own mirror is checked on a GPU (test_codegen_gpu).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/tensor.hpp"

namespace zyntax {
namespace {

class CountingMirror : public DeviceMirror {
 public:
  explicit CountingMirror(std::vector<unsigned char> bytes) : bytes_(std::move(bytes)) {}
  const std::string& device() const override { return device_; }
  void download(void* host, size_t bytes) const override {
    downloads.fetch_add(1);
    std::memcpy(host, bytes_.data(), bytes);
  }
  std::shared_ptr<const DeviceMirror> part(size_t offset, size_t bytes) const override {
    return std::make_shared<CountingMirror>(std::vector<unsigned char>(bytes_.begin() + offset, bytes_.begin() + offset + bytes));
  }
  mutable std::atomic<int> downloads{0};

 private:
  std::string device_ = "test:0";
  std::vector<unsigned char> bytes_;
};

// The bytes of f32 values 0, 1, 2, ... scaled by `scale`.
std::vector<unsigned char> counting_floats(int64_t n, float scale) {
  std::vector<unsigned char> b(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(i) * scale;
    std::memcpy(b.data() + i * 4, &v, 4);
  }
  return b;
}

// A kernel's output on the device: host storage that may hold anything.
Tensor device_output(int64_t n, float scale, std::shared_ptr<CountingMirror>* mirror) {
  Tensor t = Tensor::full(DType::F32, {n}, Scalar::of_float(-7.0, DType::F32));  // stale host bytes
  *mirror = std::make_shared<CountingMirror>(counting_floats(n, scale));
  EXPECT_TRUE(t.set_mirror(*mirror, /*host_current=*/false));
  return t;
}

TEST(TensorResidence, TheHostCopyIsFilledOnceOnFirstRead) {
  std::shared_ptr<CountingMirror> m;
  Tensor t = device_output(10, 2.0f, &m);
  EXPECT_EQ(m->downloads, 0);
  EXPECT_EQ(t.mirror(), m);
  const Tensor& c = t;
  EXPECT_EQ(c.get_f64(3), 6.0);
  EXPECT_EQ(static_cast<const float*>(c.data())[9], 18.0f);
  EXPECT_EQ(c.clone().get_f64(4), 8.0);
  EXPECT_EQ(m->downloads, 1);
  EXPECT_EQ(t.mirror(), m) << "reading keeps the device's copy";
}

TEST(TensorResidence, AHostWriteDropsTheDeviceCopy) {
  std::shared_ptr<CountingMirror> m;
  Tensor t = device_output(6, 1.0f, &m);
  Tensor other = t;  // another handle of the same storage
  t.set(2, Scalar::of_float(40.0, DType::F32));
  EXPECT_EQ(m->downloads, 1) << "the rest of the bytes came back before the write";
  EXPECT_EQ(t.mirror(), nullptr);
  EXPECT_EQ(other.mirror(), nullptr);
  EXPECT_EQ(other.get_f64(2), 40.0);
  EXPECT_EQ(other.get_f64(5), 5.0);

  // An upload made for a tensor the host has: the mirror is kept, nothing comes back.
  auto up = std::make_shared<CountingMirror>(std::vector<unsigned char>(24));
  EXPECT_TRUE(other.set_mirror(up, /*host_current=*/true));
  EXPECT_EQ(t.mirror(), up);
  EXPECT_EQ(t.get_f64(2), 40.0);
  EXPECT_EQ(up->downloads, 0);
  std::memset(t.data(), 0, 4);  // the mutable data() is a write
  EXPECT_EQ(other.mirror(), nullptr);
}

// A fill of every byte drops the device's copy without fetching it; a fill
// of a view of part of the storage fetches the rest first.
TEST(TensorResidence, AnOverwriteOfEveryByteFetchesNothing) {
  std::shared_ptr<CountingMirror> m;
  Tensor t = device_output(6, 1.0f, &m);
  Tensor other = t.reshaped({2, 3});
  std::memset(other.data_for_overwrite(), 0, other.nbytes());
  EXPECT_EQ(m->downloads, 0);
  EXPECT_EQ(t.mirror(), nullptr);
  EXPECT_EQ(t.get_f64(5), 0.0);

  std::shared_ptr<CountingMirror> m2;
  Tensor u = device_output(6, 1.0f, &m2);
  Tensor part = u.bytes_view(8, DType::F32, {2});
  std::memset(part.data_for_overwrite(), 0, part.nbytes());
  EXPECT_EQ(m2->downloads, 1);
  EXPECT_EQ(u.get_f64(1), 1.0);
  EXPECT_EQ(u.get_f64(2), 0.0);
  EXPECT_EQ(u.get_f64(4), 4.0);
}

TEST(TensorResidence, HandlesAndViewsShareIt) {
  std::shared_ptr<CountingMirror> m;
  Tensor t = device_output(12, 0.5f, &m);
  Tensor r = t.reshaped({3, 4});
  EXPECT_EQ(r.mirror(), m) << "a reshaped handle covers the same bytes";
  Tensor part = t.bytes_view(8, DType::F32, {4});
  EXPECT_EQ(part.mirror(), nullptr) << "a view of part of the bytes is not the device's copy";
  EXPECT_FALSE(part.set_mirror(m, true));
  EXPECT_EQ(part.get_f64(0), 1.0);  // element 2 of the whole: the whole came back
  EXPECT_EQ(m->downloads, 1);
  EXPECT_EQ(r.get_f64(11), 5.5);
  EXPECT_EQ(m->downloads, 1);
  part.set(0, Scalar::of_float(9.0, DType::F32));  // a write through the view drops the whole's mirror
  EXPECT_EQ(t.mirror(), nullptr);
  EXPECT_EQ(t.get_f64(2), 9.0);

  Tensor kept = t.kept_with(std::make_shared<int>(1));
  auto again = std::make_shared<CountingMirror>(counting_floats(12, 3.0f));
  EXPECT_TRUE(kept.set_mirror(again, /*host_current=*/false));
  EXPECT_EQ(t.get_f64(2), 6.0) << "a kept view's mirror is the tensor's";
}

TEST(TensorResidence, ACloneIsTheHostsAndIndependent) {
  std::shared_ptr<CountingMirror> m;
  Tensor t = device_output(5, 3.0f, &m);
  t.set_device("test:0");
  Tensor c = t.clone();
  EXPECT_EQ(c.mirror(), nullptr);
  EXPECT_EQ(c.device(), "test:0");
  c.set(0, Scalar::of_float(1.0, DType::F32));
  EXPECT_EQ(t.mirror(), m);
  EXPECT_EQ(t.get_f64(0), 0.0);
  Tensor h = t.astype(DType::F64);
  EXPECT_EQ(h.get_f64(4), 12.0);
  EXPECT_EQ(m->downloads, 1);
}

TEST(TensorResidence, ReplacingTheOnlyCopyBringsItBackFirst) {
  std::shared_ptr<CountingMirror> m;
  Tensor t = device_output(4, 1.0f, &m);
  // A mirror said to match the host's bytes: those must be current first.
  EXPECT_TRUE(t.set_mirror(std::make_shared<CountingMirror>(counting_floats(4, 1.0f)), /*host_current=*/true));
  EXPECT_EQ(m->downloads, 1);
  EXPECT_EQ(t.get_f64(3), 3.0);
  // Dropping the only copy brings it back too.
  Tensor u = device_output(4, 2.0f, &m);
  EXPECT_TRUE(u.set_mirror(nullptr, false));
  EXPECT_EQ(m->downloads, 1);
  EXPECT_EQ(u.get_f64(3), 6.0);
  EXPECT_EQ(u.mirror(), nullptr);
  // A part of a mirror, for another tensor (an in-place op's slice of a result).
  Tensor v = device_output(8, 1.0f, &m);
  Tensor w = Tensor::empty(DType::F32, {3});
  EXPECT_TRUE(w.set_mirror(v.mirror()->part(4 * 5, 12), /*host_current=*/false));
  EXPECT_EQ(w.get_f64(0), 5.0);
  EXPECT_EQ(w.get_f64(2), 7.0);
  EXPECT_EQ(m->downloads, 0);
  // bytes_copy makes the part on the device, or on the host without a mirror.
  Tensor on_device = v.bytes_copy(4 * 6, DType::F32, {2});
  EXPECT_NE(on_device.mirror(), nullptr);
  EXPECT_EQ(on_device.get_f64(1), 7.0);
  EXPECT_EQ(m->downloads, 0);
  Tensor on_host = v.reshaped({8}).clone().bytes_copy(4 * 6, DType::F32, {2});
  EXPECT_EQ(on_host.mirror(), nullptr);
  EXPECT_EQ(on_host.get_f64(0), 6.0);
}

// Readers on many threads at once: one copy back, every reader sees all of it.
TEST(TensorResidence, ConcurrentReadersCopyOnce) {
  for (int round = 0; round < 20; ++round) {
    std::shared_ptr<CountingMirror> m;
    const int64_t n = 4096;
    Tensor t = device_output(n, 1.0f, &m);
    std::atomic<int> wrong{0};
    std::vector<std::thread> readers;
    for (int k = 0; k < 8; ++k) {
      readers.emplace_back([&, k] {
        const Tensor handle = t;
        const float* p = static_cast<const float*>(handle.data());
        for (int64_t i = k; i < n; i += 8)
          if (p[i] != static_cast<float>(i)) wrong.fetch_add(1);
      });
    }
    for (std::thread& r : readers) r.join();
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(m->downloads, 1);
  }
}

}  // namespace
}  // namespace zyntax
