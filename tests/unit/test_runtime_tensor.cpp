// The Tensor type: shapes, storage, element access and conversions.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "runtime/tensor.hpp"

namespace zyntax {
namespace {

TEST(RuntimeTensor, ShapeHelpers) {
  EXPECT_EQ(shape_str({2, 3}), "[2, 3]");
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({5, 0, 7}), 0);
  EXPECT_EQ(shape_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(shape_strides({}), (std::vector<int64_t>{}));
  EXPECT_THROW(shape_numel({int64_t{1} << 40, int64_t{1} << 40}), DataError);
  // An overflowing shape is rejected even when another axis is empty.
  EXPECT_THROW(shape_numel({0, int64_t{1} << 40, int64_t{1} << 40}), DataError);
}

TEST(RuntimeTensor, EmptyIsZeroFilled) {
  Tensor t = Tensor::empty(DType::F64, {2, 3});
  ASSERT_TRUE(t.valid());
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.dim(1), 3);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 48u);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.data_as<double>()[i], 0.0);
  EXPECT_EQ(t.device(), "cpu");
}

TEST(RuntimeTensor, RejectsBadShapes) {
  EXPECT_THROW(Tensor::empty(DType::F32, {2, -1}), DataError);
  EXPECT_THROW(Tensor::empty(DType::F32, {int64_t{1} << 40, 1 << 10}), DataError);
  EXPECT_THROW(Tensor::empty(DType::F64, {int64_t{1} << 38}), DataError);
  Tensor none = Tensor::empty(DType::F32, {0, int64_t{1} << 40});
  EXPECT_EQ(none.numel(), 0);
}

TEST(RuntimeTensor, NullTensor) {
  Tensor t;
  EXPECT_FALSE(t.valid());
  EXPECT_EQ(t.data(), nullptr);
  EXPECT_THROW(t.get(0), DataError);
  EXPECT_THROW(t.set(0, Scalar::of_float(1)), DataError);
  EXPECT_FALSE(t.clone().valid());
}

TEST(RuntimeTensor, FullAndScalar) {
  Tensor t = Tensor::full(DType::I16, {3}, Scalar::of_float(-2.9));
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(t.data_as<int16_t>()[i], -2);
  Tensor s = Tensor::scalar(Scalar::of_float(1.5, DType::F64));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.dtype(), DType::F64);
  EXPECT_EQ(s.get(0).f, 1.5);
}

TEST(RuntimeTensor, GetSetEveryDType) {
  struct Case {
    DType dtype;
    Scalar value;
  };
  const Case cases[] = {
      {DType::F16, Scalar::of_float(-1.5, DType::F16)}, {DType::BF16, Scalar::of_float(3.0, DType::BF16)},
      {DType::F32, Scalar::of_float(0.1, DType::F32)},  {DType::F64, Scalar::of_float(0.1, DType::F64)},
      {DType::I8, Scalar::of_int(-128, DType::I8)},     {DType::I16, Scalar::of_int(-300, DType::I16)},
      {DType::I32, Scalar::of_int(-70000, DType::I32)}, {DType::I64, Scalar::of_int(int64_t{1} << 60)},
      {DType::U8, Scalar::of_uint(255, DType::U8)},     {DType::U16, Scalar::of_uint(65535, DType::U16)},
      {DType::U32, Scalar::of_uint(4000000000u, DType::U32)},
      {DType::U64, Scalar::of_uint(~uint64_t{0}, DType::U64)},
      {DType::Bool, Scalar::of_bool(true)},
  };
  for (const Case& c : cases) {
    Tensor t = Tensor::empty(c.dtype, {4});
    t.set(2, c.value);
    Scalar back = t.get(2);
    EXPECT_EQ(back.dtype, c.dtype) << dtype_name(c.dtype);
    EXPECT_EQ(back.f, c.value.f) << dtype_name(c.dtype);
    EXPECT_EQ(back.i, c.value.i) << dtype_name(c.dtype);
    EXPECT_EQ(back.u, c.value.u) << dtype_name(c.dtype);
    EXPECT_EQ(t.get(1).as_double(), 0.0);
  }
}

TEST(RuntimeTensor, StorageLayout) {
  Tensor h = Tensor::empty(DType::F16, {2});
  h.set(0, Scalar::of_float(1.0));
  h.set(1, Scalar::of_float(-2.0));
  EXPECT_EQ(h.data_as<uint16_t>()[0], 0x3C00);
  EXPECT_EQ(h.data_as<uint16_t>()[1], 0xC000);
  Tensor b = Tensor::empty(DType::BF16, {1});
  b.set(0, Scalar::of_float(1.0));
  EXPECT_EQ(b.data_as<uint16_t>()[0], 0x3F80);
  Tensor flags = Tensor::empty(DType::Bool, {2});
  flags.set(0, Scalar::of_float(2.5));
  flags.set(1, Scalar::of_int(0));
  EXPECT_EQ(flags.data_as<unsigned char>()[0], 1);
  EXPECT_EQ(flags.data_as<unsigned char>()[1], 0);
  Tensor ints = Tensor::empty(DType::I32, {2, 2});
  ints.set(3, Scalar::of_int(7));
  EXPECT_EQ(ints.data_as<int32_t>()[3], 7);  // flat index is row-major
}

TEST(RuntimeTensor, SetConvertsToTheTensorDType) {
  Tensor t = Tensor::empty(DType::I32, {1});
  t.set(0, Scalar::of_float(3.7));
  EXPECT_EQ(t.data_as<int32_t>()[0], 3);
  Tensor u = Tensor::empty(DType::U8, {2});
  u.set(0, Scalar::of_float(300.0, DType::F64));  // floats saturate
  u.set(1, Scalar::of_int(-1));                   // integers wrap
  EXPECT_EQ(u.data_as<uint8_t>()[0], 255);
  EXPECT_EQ(u.data_as<uint8_t>()[1], 255);
  Tensor f = Tensor::empty(DType::F32, {1});
  f.set(0, Scalar::of_float(0.1, DType::F64));
  EXPECT_EQ(f.data_as<float>()[0], 0.1f);
}

TEST(RuntimeTensor, GetSetOutOfRange) {
  Tensor t = Tensor::empty(DType::F32, {2, 2});
  EXPECT_THROW(t.get(4), DataError);
  EXPECT_THROW(t.get(-1), DataError);
  EXPECT_THROW(t.set(4, Scalar::of_float(1)), DataError);
}

TEST(RuntimeTensor, ReshapedSharesStorage) {
  Tensor t = Tensor::empty(DType::I64, {2, 3});
  Tensor r = t.reshaped({3, 2});
  EXPECT_TRUE(r.same_storage(t));
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  r.set(5, Scalar::of_int(9));
  EXPECT_EQ(t.get(5).i, 9);
  EXPECT_THROW(t.reshaped({4, 2}), DataError);
  EXPECT_THROW(t.reshaped({-2, -3}), DataError);
  EXPECT_EQ(t.reshaped({6}).rank(), 1);
}

TEST(RuntimeTensor, CloneIsDeep) {
  Tensor t = Tensor::full(DType::F32, {3}, Scalar::of_float(1));
  t.set_device("gpu0");
  Tensor c = t.clone();
  EXPECT_FALSE(c.same_storage(t));
  EXPECT_EQ(c.device(), "gpu0");
  c.set(0, Scalar::of_float(5));
  EXPECT_EQ(t.get(0).f, 1.0);
  EXPECT_EQ(c.get(0).f, 5.0);
}

TEST(RuntimeTensor, Astype) {
  Tensor t = Tensor::empty(DType::F32, {4});
  const float values[] = {-1.5f, 0.0f, 2.9f, 1e10f};
  for (int i = 0; i < 4; ++i) t.data_as<float>()[i] = values[i];
  Tensor i32 = t.astype(DType::I32);
  EXPECT_EQ(i32.dtype(), DType::I32);
  const int32_t expected[] = {-1, 0, 2, std::numeric_limits<int32_t>::max()};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(i32.data_as<int32_t>()[i], expected[i]);
  Tensor flags = t.astype(DType::Bool);
  const unsigned char truth[] = {1, 0, 1, 1};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(flags.data_as<unsigned char>()[i], truth[i]);
  Tensor same = t.astype(DType::F32);
  EXPECT_FALSE(same.same_storage(t));
  EXPECT_EQ(std::memcmp(same.data(), t.data(), t.nbytes()), 0);
  Tensor half = t.astype(DType::F16);
  EXPECT_EQ(half.data_as<uint16_t>()[0], 0xBE00);  // -1.5
  EXPECT_EQ(half.data_as<uint16_t>()[3], 0x7C00);  // 1e10 overflows to infinity
}

// A view kept with something (a GPU mapping of its bytes) shares the
// storage, keeps the keeper while any copy of the view lives, and lets it
// go before the storage.
TEST(Tensor, KeptWithHoldsTheKeeperAsLongAsTheView) {
  Tensor t = Tensor::full(DType::F32, {3}, Scalar::of_float(2.5, DType::F32));
  auto keeper = std::make_shared<int>(7);
  std::weak_ptr<int> watch = keeper;
  Tensor view = t.kept_with(std::move(keeper));
  EXPECT_TRUE(view.same_storage(t));
  Tensor copy = view.reshaped({3, 1});
  view = Tensor();
  EXPECT_FALSE(watch.expired());
  copy.set(1, Scalar::of_float(4.0, DType::F32));
  EXPECT_EQ(t.get_f64(1), 4.0);
  copy = Tensor();
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(t.get_f64(0), 2.5) << "the storage outlives the view";
}

}  // namespace
}  // namespace zyntax
