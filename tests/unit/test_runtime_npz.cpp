// .npz archives written by NumPy (tests/unit/data, made by
// make_npy_fixtures.py): stored and deflated; our own archives read back by
// us; corrupt ones a DataError, never a crash. And f16 .npy files.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "runtime/npy.hpp"
#include "runtime/npz.hpp"
#include "test_helpers.hpp"

namespace zyntax {
namespace {

using namespace zyntax::testing;


TEST(RuntimeNpz, ReadsNumpysStoredArchive) {
  auto arrays = load_npz(fixture("stored.npz"));
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].first, "weights");
  EXPECT_EQ(arrays[0].second.dtype(), DType::F32);
  EXPECT_EQ(arrays[0].second.shape(), (Shape{2, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(arrays[0].second.get_f64(i), static_cast<double>(i));
  EXPECT_EQ(arrays[1].first, "ids");
  EXPECT_EQ(arrays[1].second.dtype(), DType::I64);
  EXPECT_EQ(arrays[1].second.get(1).as_int64(), -1);
}

TEST(RuntimeNpz, ReadsNumpysDeflatedArchive) {
  auto arrays = load_npz(fixture("deflated.npz"));
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].first, "half");
  EXPECT_EQ(arrays[0].second.dtype(), DType::F16);
  EXPECT_EQ(arrays[0].second.get_f64(2), 65504.0);
  EXPECT_EQ(arrays[1].second.dtype(), DType::U16);
  EXPECT_EQ(arrays[1].second.get_f64(3), 3.0);
}

TEST(RuntimeNpz, WritesWhatItReads) {
  Tensor a = Tensor::full(DType::F64, {3}, Scalar::of_float(2.5, DType::F64));
  Tensor b = Tensor::full(DType::I8, {2, 2}, Scalar::of_int(-3, DType::I8));
  auto back = parse_npz(serialize_npz({{"a", a}, {"b", b}}), "mem.npz");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].first, "a");
  EXPECT_EQ(back[0].second.get_f64(2), 2.5);
  EXPECT_EQ(back[1].second.dtype(), DType::I8);
  EXPECT_EQ(back[1].second.get(3).as_int64(), -3);
}

// np.savez(f) with no arrays writes only the end of a zip directory: an
// empty archive, not a corrupt one. And we write it back the same.
TEST(RuntimeNpz, ReadsAnEmptyArchive) {
  std::string numpy_empty = std::string("PK\x05\x06", 4) + std::string(18, '\0');
  EXPECT_TRUE(parse_npz(numpy_empty, "empty.npz").empty());
  EXPECT_TRUE(parse_npz(serialize_npz({}), "ours.npz").empty());
}

TEST(RuntimeNpz, CorruptArchivesAreDataErrors) {
  std::string good = read_bytes(fixture("deflated.npz"));
  EXPECT_NE(message_of<DataError>([&] { parse_npz("PK", "x.npz"); }).find("not a .npz"), std::string::npos);
  EXPECT_NE(message_of<DataError>([&] { parse_npz(good.substr(0, good.size() / 2), "x.npz"); }).find("x.npz"), std::string::npos);
  std::string flipped = good;
  flipped[60] ^= 0x55;  // inside the first entry's compressed data
  EXPECT_NE(message_of<DataError>([&] { parse_npz(flipped, "x.npz"); }).find("x.npz"), std::string::npos);
  // A deflated entry claiming far more bytes than deflate can make of it
  // (found by fuzz_npy: it asked for 4 GiB).
  std::string inflated = good;
  size_t directory = inflated.rfind(std::string("PK\x01\x02", 4));
  ASSERT_NE(directory, std::string::npos);
  for (size_t k = 0; k < 4; ++k) inflated[directory + 24 + k] = '\xff';
  inflated[directory + 24] = '\xfe';  // 0xfffffffe: not the ZIP64 marker
  EXPECT_NE(message_of<DataError>([&] { parse_npz(inflated, "x.npz"); }).find("claims 4294967294 bytes"), std::string::npos);
  // Every prefix and every single-byte change: an error or a result, never a crash.
  for (size_t n = 0; n < good.size(); n += 7) {
    try {
      parse_npz(good.substr(0, n), "x.npz");
    } catch (const DataError&) {
    }
  }
  for (size_t i = 0; i < good.size(); i += 3) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] + 1);
    try {
      parse_npz(bad, "x.npz");
    } catch (const DataError&) {
    }
  }
}

TEST(RuntimeNpy, ReadsF16) {
  Tensor t = load_npy(fixture("f16_vec.npy"));
  EXPECT_EQ(t.dtype(), DType::F16);
  EXPECT_EQ(t.get_f64(0), 1.5);
  EXPECT_EQ(t.get_f64(2), 65504.0);
  EXPECT_NEAR(t.get_f64(3), 5.96e-8, 1e-9);
  Tensor back = parse_npy(serialize_npy(t), "mem.npy");
  EXPECT_EQ(back.dtype(), DType::F16);
  EXPECT_EQ(back.get_f64(1), -0.25);
}

}  // namespace
}  // namespace zyntax
