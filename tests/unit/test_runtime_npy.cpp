// Reading and writing .npy files, including files written by NumPy itself
// (tests/unit/data, made by make_npy_fixtures.py) and malformed input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/npy.hpp"
#include "test_helpers.hpp"

namespace zyntax {
namespace {

using namespace zyntax::testing;

template <class F>
std::string error_of(F f) {
  return message_of<DataError>(f);
}




// A version 1.0 file with the given header dict text and data bytes.
std::string npy_v1(const std::string& dict, const std::string& data) {
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  size_t len = dict.size() + 1;
  out += static_cast<char>(len & 0xFF);
  out += static_cast<char>(len >> 8);
  return out + dict + "\n" + data;
}

std::string le_f32(std::vector<float> values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

class RuntimeNpyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("zyntax_npy_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST(RuntimeNpy, LoadsNumPyFiles) {
  Tensor f = load_npy(fixture("f32_2x3.npy"));
  EXPECT_EQ(f.dtype(), DType::F32);
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  const float expected_f[] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.data_as<float>()[i], expected_f[i]);

  Tensor d = load_npy(fixture("f64_vec.npy"));
  EXPECT_EQ(d.dtype(), DType::F64);
  EXPECT_EQ(values(d), (std::vector<double>{0.1, -0.0, 1e300}));
  EXPECT_TRUE(std::signbit(d.data_as<double>()[1]));

  Tensor i = load_npy(fixture("i32_vec.npy"));
  EXPECT_EQ(i.dtype(), DType::I32);
  const int32_t expected_i[] = {std::numeric_limits<int32_t>::min(), 0, std::numeric_limits<int32_t>::max(), 42};
  for (int k = 0; k < 4; ++k) EXPECT_EQ(i.data_as<int32_t>()[k], expected_i[k]);

  Tensor l = load_npy(fixture("i64_3x1.npy"));
  EXPECT_EQ(l.shape(), (Shape{3, 1}));
  EXPECT_EQ(l.data_as<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(l.data_as<int64_t>()[1], 1);
  EXPECT_EQ(l.data_as<int64_t>()[2], std::numeric_limits<int64_t>::max());

  Tensor u = load_npy(fixture("u8_vec.npy"));
  EXPECT_EQ(u.dtype(), DType::U8);
  EXPECT_EQ(values(u), (std::vector<double>{0, 1, 128, 255}));

  Tensor b = load_npy(fixture("bool_2x2.npy"));
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(values(b), (std::vector<double>{1, 0, 0, 1}));
}

TEST(RuntimeNpy, LoadsScalarAndEmpty) {
  Tensor s = load_npy(fixture("f32_scalar.npy"));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.get(0).f, 2.5);
  Tensor e = load_npy(fixture("f64_empty_0x3.npy"));
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(e.numel(), 0);
}

TEST(RuntimeNpy, SwapsBigEndianData) {
  Tensor d = load_npy(fixture("f64_big_endian.npy"));
  EXPECT_EQ(d.dtype(), DType::F64);
  EXPECT_EQ(values(d), (std::vector<double>{1.0, -2.5, 1024.125}));
  Tensor i = load_npy(fixture("i32_big_endian.npy"));
  EXPECT_EQ(i.shape(), (Shape{2, 2}));
  EXPECT_EQ(values(i), (std::vector<double>{1, -2, 65536, 7}));
}

TEST(RuntimeNpy, ReadsVersions2And3) {
  for (const char* name : {"i64_v2.npy", "i64_v3.npy"}) {
    Tensor t = load_npy(fixture(name));
    EXPECT_EQ(t.dtype(), DType::I64) << name;
    EXPECT_EQ(t.shape(), (Shape{2, 3})) << name;
    EXPECT_EQ(values(t), (std::vector<double>{1, 2, 3, 4, 5, 6})) << name;
  }
}

TEST(RuntimeNpy, RejectsUnsupportedFiles) {
  std::string fortran = fixture("f32_fortran.npy");
  EXPECT_EQ(error_of([&] { load_npy(fortran); }),
            fortran + ": Fortran-order arrays are not supported; save with np.ascontiguousarray");
  std::string complex = fixture("c64_unsupported.npy");
  EXPECT_EQ(error_of([&] { load_npy(complex); }),
            complex + ": unsupported dtype '<c8' (supported: f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool)");
  std::string truncated = fixture("f32_truncated.npy");
  EXPECT_EQ(error_of([&] { load_npy(truncated); }),
            truncated + ": truncated data: expected 40 bytes for shape [10] of f32, found 34");
  std::string script = fixture("make_npy_fixtures.py");
  EXPECT_EQ(error_of([&] { load_npy(script); }), script + ": not a .npy file");
}

TEST(RuntimeNpy, MissingFile) {
  std::string missing = fixture("does_not_exist.npy");
  EXPECT_EQ(error_of([&] { load_npy(missing); }), missing + ": cannot read file: No such file or directory");
  std::string dir = fixture("");
  EXPECT_NE(error_of([&] { load_npy(dir); }).find("it is a directory"), std::string::npos);
  // A device is no file: refused at once, not read forever.
  EXPECT_EQ(error_of([&] { load_npy("/dev/zero"); }), "/dev/zero: cannot read file: it is not a regular file (a device or a pipe)");
}

TEST(RuntimeNpy, ParsesHeaderVariants) {
  std::string data = le_f32({1, 2, 3, 4});
  const char* dicts[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
      "{'descr':'<f4','fortran_order':False,'shape':(2,2)}",
      "{\"shape\": (2, 2), \"fortran_order\": False, \"descr\": \"<f4\"}",
      "{'descr': '=f4', 'fortran_order': False, 'shape': (2L, 2L), 'extra': [1, (2,), None]}",
      "{'descr': 'f4', 'fortran_order': False, 'shape': [2, 2]}   \t",
  };
  for (const char* dict : dicts) {
    Tensor t = parse_npy(npy_v1(dict, data), "mem");
    EXPECT_EQ(t.shape(), (Shape{2, 2})) << dict;
    EXPECT_EQ(values(t), (std::vector<double>{1, 2, 3, 4})) << dict;
  }
  Tensor one = parse_npy(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", le_f32({9}) + "extra"), "m");
  EXPECT_EQ(values(one), (std::vector<double>{9}));
  std::string bool_bytes("\x07\x00", 2);
  Tensor flags = parse_npy(npy_v1("{'descr': '|b1', 'fortran_order': False, 'shape': (2,)}", bool_bytes), "m");
  EXPECT_EQ(flags.data_as<unsigned char>()[0], 1);  // any nonzero byte reads as true
}

TEST(RuntimeNpy, RejectsMalformedHeaders) {
  std::string data = le_f32({1, 2});
  const char* bad[] = {
      "{'descr': '<f4', 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': 2}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
      "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}",
      "{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<V4', 'fortran_order': False, 'shape': (2,)}",
      "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} trailing",
      "['descr', '<f4']",
      "",
  };
  for (const char* dict : bad) EXPECT_THROW(parse_npy(npy_v1(dict, data), "m"), DataError) << dict;
  std::string deep = "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(5000, '(') + "}";
  EXPECT_THROW(parse_npy(npy_v1(deep, data), "m"), DataError);
  EXPECT_EQ(error_of([&] { parse_npy(npy_v1("{'descr': '<c16', 'fortran_order': False, 'shape': ()}", ""), "m"); }),
            "m: unsupported dtype '<c16' (supported: f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool)");
}

TEST(RuntimeNpy, RejectsHugeShapesWithoutAllocating) {
  std::string data = le_f32({1, 2});
  const char* huge[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4)}",
      "{'descr': '<f8', 'fortran_order': False, 'shape': (9223372036854775807,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 100000)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4)}",
  };
  for (const char* dict : huge) EXPECT_THROW(parse_npy(npy_v1(dict, data), "m"), DataError) << dict;
  Tensor none =
      parse_npy(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904)}", ""), "m");
  EXPECT_EQ(none.numel(), 0);
}

TEST(RuntimeNpy, RejectsBadPrefixes) {
  EXPECT_EQ(error_of([] { parse_npy("", "m"); }), "m: not a .npy file");
  EXPECT_EQ(error_of([] { parse_npy("\x93NUMPX\x01\x00", "m"); }), "m: not a .npy file");
  EXPECT_THROW(parse_npy(std::string("\x93NUMPY\x01", 7), "m"), DataError);
  EXPECT_THROW(parse_npy(std::string("\x93NUMPY\x04\x00\x10\x00", 10), "m"), DataError);
  EXPECT_EQ(error_of([] { parse_npy(std::string("\x93NUMPY\x01\x00\x50\x00{'descr'", 17), "m"); }),
            "m: truncated header: expected 80 header bytes, found 7");
  EXPECT_THROW(parse_npy(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12), "m"), DataError);
}

TEST(RuntimeNpy, EveryTruncationIsAnErrorNotACrash) {
  std::string full = read_bytes(fixture("i64_v2.npy"));
  ASSERT_FALSE(full.empty());
  for (size_t len = 0; len < full.size(); ++len)
    EXPECT_THROW(parse_npy(full.substr(0, len), "m"), DataError) << len;
  // Corrupting any single header byte must give a tensor or a DataError.
  for (size_t at = 0; at < 128 && at < full.size(); ++at)
    for (unsigned char flip : {0x01, 0x20, 0x80, 0xFF}) {
      std::string bad = full;
      bad[at] = static_cast<char>(bad[at] ^ flip);
      try {
        parse_npy(bad, "m");
      } catch (const DataError&) {
      }
    }
}

TEST(RuntimeNpy, SerializeLayout) {
  Tensor t = Tensor::empty(DType::F32, {2, 3});
  std::string bytes = serialize_npy(t);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
  std::string header = bytes.substr(10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_NE(serialize_npy(Tensor::empty(DType::U8, {5})).find("'descr': '|u1'"), std::string::npos);
  EXPECT_NE(serialize_npy(Tensor::empty(DType::I32, {5})).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(serialize_npy(Tensor::empty(DType::I64, {})).find("'shape': ()"), std::string::npos);
}

TEST(RuntimeNpy, SerializeRejectsOtherDTypes) {
  // bf16 has no NumPy dtype.
  EXPECT_EQ(error_of([] { serialize_npy(Tensor::empty(DType::BF16, {2})); }),
            "npy: unsupported dtype 'bf16' (supported: f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool); convert with astype first");
  EXPECT_THROW(serialize_npy(Tensor{}), DataError);
}

TEST_F(RuntimeNpyFiles, SaveLoadRoundTripsEveryDType) {
  const DType types[] = {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8, DType::Bool};
  for (DType t : types) {
    Tensor a = Tensor::empty(t, {3, 2});
    for (int64_t i = 0; i < 6; ++i) a.set(i, Scalar::from_double(i % 2 ? -1.25 * i : 3.0 * i, t));
    std::string file = path(std::string(dtype_name(t)) + ".npy");
    save_npy(a, file);
    Tensor b = load_npy(file);
    EXPECT_EQ(b.dtype(), t);
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0) << dtype_name(t);
  }
  // A shape long enough to need a version 2.0 header has more axes than a
  // tensor may have: refused when made.
  EXPECT_EQ(error_of([&] { Tensor::empty(DType::F32, std::vector<int64_t>(30000, 1)); }), "a tensor has at most 64 axes, not 30000");
}

TEST_F(RuntimeNpyFiles, SaveErrors) {
  std::string target = path("no_such_dir/x.npy");
  EXPECT_EQ(error_of([&] { save_npy(Tensor::empty(DType::F32, {1}), target); }),
            target + ": cannot open file for writing: No such file or directory");
  EXPECT_THROW(save_npy(Tensor::empty(DType::BF16, {1}), path("bf16.npy")), DataError);
}

}  // namespace
}  // namespace zyntax
