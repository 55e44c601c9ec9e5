// Whole-tensor operations: expectations are hand-computed or come from
// plain loops in the test, never from the operation under test.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/tensor_ops.hpp"
#include "test_helpers.hpp"

namespace zyntax {
namespace {

using namespace zyntax::testing;

template <class F>
std::string error_of(F f) {
  return message_of<DataError>(f);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();



std::vector<double> iota(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i));
  return v;
}

AxisSelect index(int64_t i) {
  AxisSelect s;
  s.kind = AxisSelect::Index;
  s.index = i;
  return s;
}

AxisSelect slice(std::optional<int64_t> begin, std::optional<int64_t> end, int64_t step = 1) {
  AxisSelect s;
  s.kind = AxisSelect::Slice;
  s.begin = begin;
  s.end = end;
  s.step = step;
  return s;
}


TEST(RuntimeTensorOps, BroadcastShapes) {
  EXPECT_EQ(broadcast_shapes("+", {2, 1, 3}, {4, 1}), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes("+", {}, {5}), (Shape{5}));
  EXPECT_EQ(broadcast_shapes("+", {0, 1}, {1, 3}), (Shape{0, 3}));
  EXPECT_EQ(error_of([] { broadcast_shapes("'+'", {2, 3}, {4}); }), "'+': shapes [2, 3] and [4] do not broadcast");
}

TEST(RuntimeTensorOps, BinaryBroadcasts) {
  Tensor a = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make(DType::F32, {3}, {10, 20, 30});
  Tensor sum = binary(BinaryOp::Add, a, b);
  EXPECT_EQ(sum.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(sum), (std::vector<double>{11, 22, 33, 14, 25, 36}));
  Tensor col = make(DType::F32, {2, 1}, {100, 200});
  EXPECT_EQ(values(binary(BinaryOp::Sub, col, b)), (std::vector<double>{90, 80, 70, 190, 180, 170}));
  Tensor s = Tensor::scalar(Scalar::of_float(2));
  EXPECT_EQ(values(binary(BinaryOp::Mul, s, a)), (std::vector<double>{2, 4, 6, 8, 10, 12}));
  EXPECT_THROW(binary(BinaryOp::Add, a, make(DType::F32, {2}, {1, 2})), DataError);
  EXPECT_THROW(binary(BinaryOp::Add, a, Tensor{}), DataError);
}

TEST(RuntimeTensorOps, BinaryPromotesAndWraps) {
  Tensor i = make(DType::I32, {2}, {1, 2});
  Tensor f = make(DType::F32, {2}, {0.5, 0.25});
  Tensor r = binary(BinaryOp::Add, i, f);
  EXPECT_EQ(r.dtype(), DType::F32);
  EXPECT_EQ(values(r), (std::vector<double>{1.5, 2.25}));
  Tensor s8 = make(DType::I8, {1}, {-100});
  Tensor u8 = make(DType::U8, {1}, {200});
  Tensor mixed = binary(BinaryOp::Add, s8, u8);
  EXPECT_EQ(mixed.dtype(), DType::I16);
  EXPECT_EQ(values(mixed), (std::vector<double>{100}));
  Tensor wrapped = binary(BinaryOp::Add, make(DType::I8, {1}, {120}), make(DType::I8, {1}, {10}));
  EXPECT_EQ(values(wrapped), (std::vector<double>{-126}));
  Tensor third = binary(BinaryOp::Div, make(DType::F32, {1}, {1}), make(DType::F32, {1}, {3}));
  EXPECT_EQ(third.data_as<float>()[0], 1.0f / 3.0f);
}

TEST(RuntimeTensorOps, ComparisonsAndLogicGiveBool) {
  Tensor a = make(DType::I32, {3}, {1, 5, 3});
  Tensor b = make(DType::F64, {3}, {2, 5, kNaN});
  Tensor lt = binary(BinaryOp::Lt, a, b);
  EXPECT_EQ(lt.dtype(), DType::Bool);
  EXPECT_EQ(values(lt), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values(binary(BinaryOp::Eq, a, b)), (std::vector<double>{0, 1, 0}));
  Tensor both = binary(BinaryOp::And, a, make(DType::I32, {3}, {0, 1, 2}));
  EXPECT_EQ(both.dtype(), DType::Bool);
  EXPECT_EQ(values(both), (std::vector<double>{0, 1, 1}));
}

TEST(RuntimeTensorOps, IntegerDivisionByZero) {
  Tensor a = make(DType::I32, {2}, {4, 5});
  Tensor b = make(DType::I32, {2}, {2, 0});
  EXPECT_EQ(error_of([&] { binary(BinaryOp::Div, a, b); }), "'/': integer division by zero");
  EXPECT_EQ(error_of([&] { binary(BinaryOp::Mod, a, b); }), "'%': integer remainder by zero");
  Tensor fa = make(DType::F32, {1}, {1});
  Tensor fb = make(DType::F32, {1}, {0});
  EXPECT_TRUE(std::isinf(binary(BinaryOp::Div, fa, fb).get(0).f));
}

TEST(RuntimeTensorOps, Unary) {
  Tensor a = make(DType::I8, {3}, {-128, 0, 5});
  Tensor neg = unary(UnaryOp::Neg, a);
  EXPECT_EQ(neg.dtype(), DType::I8);
  EXPECT_EQ(values(neg), (std::vector<double>{-128, 0, -5}));
  Tensor no = unary(UnaryOp::Not, a);
  EXPECT_EQ(no.dtype(), DType::Bool);
  EXPECT_EQ(values(no), (std::vector<double>{0, 1, 0}));
}

TEST(RuntimeTensorOps, MathOnFloats) {
  Tensor x = make(DType::F32, {3}, {0, 1, 4});
  Tensor e = math(MathFn::Exp, {x});
  EXPECT_EQ(e.dtype(), DType::F32);
  EXPECT_EQ(e.data_as<float>()[0], 1.0f);
  EXPECT_EQ(e.data_as<float>()[1], static_cast<float>(std::exp(1.0)));
  EXPECT_EQ(values(math(MathFn::Sqrt, {x})), (std::vector<double>{0, 1, 2}));
  Tensor lo = Tensor::scalar(Scalar::of_float(0.5));
  Tensor hi = make(DType::F32, {3}, {1, 1, 3});
  EXPECT_EQ(values(math(MathFn::Clamp, {x, lo, hi})), (std::vector<double>{0.5, 1, 3}));
  Tensor n = make(DType::F32, {2}, {kNaN, 1});
  EXPECT_TRUE(std::isnan(math(MathFn::Max, {n, make(DType::F32, {2}, {0, 0})}).get(0).f));
}

TEST(RuntimeTensorOps, MathOnIntegers) {
  Tensor i = make(DType::I32, {3}, {-3, 0, 4});
  Tensor s = math(MathFn::Sqrt, {i});
  EXPECT_EQ(s.dtype(), DType::F32);  // not f64
  EXPECT_TRUE(std::isnan(s.get(0).f));
  EXPECT_EQ(s.get(2).f, 2.0);
  Tensor e = math(MathFn::Exp, {i});
  EXPECT_EQ(e.data_as<float>()[0], static_cast<float>(std::exp(-3.0)));
  Tensor a = math(MathFn::Abs, {i});
  EXPECT_EQ(a.dtype(), DType::I32);
  EXPECT_EQ(values(a), (std::vector<double>{3, 0, 4}));
  Tensor m = math(MathFn::Max, {i, make(DType::I8, {1}, {1})});
  EXPECT_EQ(m.dtype(), DType::I32);
  EXPECT_EQ(values(m), (std::vector<double>{1, 1, 4}));
  Tensor p = math(MathFn::Pow, {i, make(DType::F64, {1}, {0.5})});
  EXPECT_EQ(p.dtype(), DType::F64);  // a float argument decides the type
  EXPECT_EQ(p.get(2).f, 2.0);
  Tensor flags = make(DType::Bool, {2}, {1, 0});
  Tensor abs_flags = math(MathFn::Abs, {flags});
  EXPECT_EQ(abs_flags.dtype(), DType::I64);
  EXPECT_EQ(values(abs_flags), (std::vector<double>{1, 0}));
  EXPECT_EQ(math(MathFn::Exp, {flags}).dtype(), DType::F32);
  EXPECT_THROW(math(MathFn::Exp, {i, i}), DataError);
  EXPECT_THROW(math(MathFn::Pow, {i, make(DType::I32, {2}, {1, 2})}), DataError);
}

TEST(RuntimeTensorOps, Matmul2D) {
  Tensor a = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make(DType::F32, {3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_EQ(values(c), (std::vector<double>{58, 64, 139, 154}));
  Tensor ints = matmul(make(DType::I32, {1, 2}, {3, 4}), make(DType::I8, {2, 1}, {5, 6}));
  EXPECT_EQ(ints.dtype(), DType::I32);
  EXPECT_EQ(values(ints), (std::vector<double>{39}));
}

TEST(RuntimeTensorOps, MatmulVectors) {
  Tensor v = make(DType::F64, {3}, {1, 2, 3});
  Tensor w = make(DType::F64, {3}, {4, 5, 6});
  Tensor inner = matmul(v, w);
  EXPECT_EQ(inner.rank(), 0);
  EXPECT_EQ(inner.get(0).f, 32.0);
  Tensor m = make(DType::F64, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor vm = matmul(v, m);
  EXPECT_EQ(vm.shape(), (Shape{2}));
  EXPECT_EQ(values(vm), (std::vector<double>{22, 28}));
  Tensor mt = make(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor mv = matmul(mt, v);
  EXPECT_EQ(mv.shape(), (Shape{2}));
  EXPECT_EQ(values(mv), (std::vector<double>{14, 32}));
}

TEST(RuntimeTensorOps, MatmulBatchBroadcast) {
  Tensor a = make(DType::F32, {2, 1, 2, 3}, iota(12));
  Tensor b = make(DType::F32, {3, 3, 2}, iota(18));
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape(), (Shape{2, 3, 2, 2}));
  std::vector<double> expected;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          double acc = 0;
          for (int k = 0; k < 3; ++k) acc += (p * 6 + i * 3 + k) * (q * 6 + k * 2 + j);
          expected.push_back(acc);
        }
  EXPECT_EQ(values(c), expected);
}

TEST(RuntimeTensorOps, MatmulAccumulatesInTheOperandType) {
  // In f32, 1e8 + 1 rounds back to 1e8, so the sum comes out 0 rather than 1.
  Tensor row = make(DType::F32, {1, 3}, {1e8, 1, -1e8});
  Tensor ones = make(DType::F32, {3, 1}, {1, 1, 1});
  EXPECT_EQ(matmul(row, ones).get(0).f, 0.0);
  Tensor row64 = make(DType::F64, {1, 3}, {1e8, 1, -1e8});
  EXPECT_EQ(matmul(row64, ones).get(0).f, 1.0);
}

TEST(RuntimeTensorOps, MatmulErrors) {
  Tensor a = Tensor::empty(DType::F32, {2, 3});
  Tensor b = Tensor::empty(DType::F32, {4, 5});
  EXPECT_EQ(error_of([&] { matmul(a, b); }), "matmul: inner dimensions do not match: [2, 3] @ [4, 5]");
  EXPECT_THROW(matmul(Tensor::empty(DType::F32, {}), a), DataError);
  EXPECT_THROW(matmul(Tensor::empty(DType::F32, {2, 2, 3}), Tensor::empty(DType::F32, {3, 3, 1})), DataError);
  Tensor empty = matmul(Tensor::empty(DType::F32, {2, 0}), Tensor::empty(DType::F32, {0, 3}));
  EXPECT_EQ(values(empty), std::vector<double>(6, 0.0));
}

TEST(RuntimeTensorOps, ReduceSumAxes) {
  Tensor a = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor rows = reduce(ReduceOp::Sum, a, 1, false);
  EXPECT_EQ(rows.shape(), (Shape{2}));
  EXPECT_EQ(values(rows), (std::vector<double>{6, 15}));
  Tensor cols = reduce(ReduceOp::Sum, a, 0, true);
  EXPECT_EQ(cols.shape(), (Shape{1, 3}));
  EXPECT_EQ(values(cols), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(values(reduce(ReduceOp::Sum, a, -1, false)), (std::vector<double>{6, 15}));
  Tensor all = reduce(ReduceOp::Sum, a, std::nullopt, false);
  EXPECT_EQ(all.rank(), 0);
  EXPECT_EQ(all.get(0).f, 21.0);
  EXPECT_EQ(reduce(ReduceOp::Product, a, std::nullopt, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(reduce(ReduceOp::Product, a, std::nullopt, true).get(0).f, 720.0);
}

TEST(RuntimeTensorOps, ReduceMiddleAxis) {
  Tensor a = make(DType::I64, {2, 3, 2}, iota(12));
  Tensor r = reduce(ReduceOp::Max, a, 1, false);
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(values(r), (std::vector<double>{4, 5, 10, 11}));
  Tensor am = reduce(ReduceOp::ArgMin, a, 1, true);
  EXPECT_EQ(am.dtype(), DType::I64);
  EXPECT_EQ(am.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(values(am), (std::vector<double>{0, 0, 0, 0}));
}

TEST(RuntimeTensorOps, ReduceFloatSumUsesF64) {
  // Accumulated in f64 the 1 survives; rounding to f32 happens once at the end.
  Tensor a = make(DType::F32, {3}, {1e8, 1, -1e8});
  EXPECT_EQ(reduce(ReduceOp::Sum, a, 0, false).get(0).f, 1.0);
  Tensor h = make(DType::F16, {3}, {2048, 1, 1});
  Tensor hs = reduce(ReduceOp::Sum, h, std::nullopt, false);
  EXPECT_EQ(hs.dtype(), DType::F16);
  EXPECT_EQ(hs.get(0).f, 2050.0);  // adding one at a time in f16 would stay at 2048
}

TEST(RuntimeTensorOps, ReduceIntegerSumWraps) {
  Tensor a = make(DType::I8, {2}, {100, 100});
  Tensor s = reduce(ReduceOp::Sum, a, std::nullopt, false);
  EXPECT_EQ(s.dtype(), DType::I8);
  EXPECT_EQ(s.get(0).i, -56);
}

TEST(RuntimeTensorOps, ReduceEmpty) {
  Tensor e = Tensor::empty(DType::F32, {0, 3});
  EXPECT_EQ(values(reduce(ReduceOp::Sum, e, 0, false)), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(values(reduce(ReduceOp::Product, e, 0, false)), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(reduce(ReduceOp::Max, e, 1, false).shape(), (Shape{0}));
  EXPECT_THROW(reduce(ReduceOp::Max, e, 0, false), DataError);
  EXPECT_THROW(reduce(ReduceOp::Min, e, std::nullopt, false), DataError);
  EXPECT_THROW(reduce(ReduceOp::ArgMax, e, std::nullopt, false), DataError);
  Tensor and_all = reduce(ReduceOp::And, e, std::nullopt, false);
  EXPECT_EQ(and_all.dtype(), DType::Bool);
  EXPECT_TRUE(and_all.get(0).truthy());
}

TEST(RuntimeTensorOps, ReduceNaNAndArgs) {
  Tensor a = make(DType::F32, {4}, {1, kNaN, 7, kNaN});
  EXPECT_TRUE(std::isnan(reduce(ReduceOp::Max, a, 0, false).get(0).f));
  EXPECT_TRUE(std::isnan(reduce(ReduceOp::Min, a, 0, false).get(0).f));
  EXPECT_EQ(reduce(ReduceOp::ArgMax, a, 0, false).get(0).i, 1);
  EXPECT_EQ(reduce(ReduceOp::ArgMin, a, std::nullopt, false).get(0).i, 1);
  Tensor ties = make(DType::I32, {2, 3}, {1, 3, 3, 9, 2, 9});
  EXPECT_EQ(values(reduce(ReduceOp::ArgMax, ties, 1, false)), (std::vector<double>{1, 0}));
  EXPECT_EQ(reduce(ReduceOp::ArgMax, ties, std::nullopt, false).get(0).i, 3);  // flat index
  EXPECT_EQ(values(reduce(ReduceOp::ArgMin, ties, 0, false)), (std::vector<double>{0, 1, 0}));
}

TEST(RuntimeTensorOps, ReduceAxisErrors) {
  Tensor a = Tensor::empty(DType::F32, {2, 3});
  EXPECT_EQ(error_of([&] { reduce(ReduceOp::Sum, a, 2, false); }),
            "reduce +: axis 2 is out of range for shape [2, 3]");
  EXPECT_THROW(reduce(ReduceOp::Sum, a, -3, false), DataError);
  EXPECT_THROW(reduce(ReduceOp::Sum, Tensor::empty(DType::F32, {}), 0, false), DataError);
  EXPECT_EQ(reduce(ReduceOp::Sum, Tensor::scalar(Scalar::of_float(4)), std::nullopt, false).get(0).f, 4.0);
}

TEST(RuntimeTensorOps, Dot) {
  Tensor a = make(DType::I32, {3}, {1, 2, 3});
  Tensor b = make(DType::F32, {3}, {0.5, 0.25, 2});
  Scalar d = dot(a, b);
  EXPECT_EQ(d.dtype, DType::F32);
  EXPECT_EQ(d.f, 7.0);
  Tensor big = make(DType::F32, {3}, {1e8, 1, -1e8});
  Tensor ones = make(DType::F32, {3}, {1, 1, 1});
  EXPECT_EQ(dot(big, ones).f, 0.0);  // sequential f32, like a scalar loop
  EXPECT_EQ(dot(Tensor::empty(DType::I64, {0}), Tensor::empty(DType::I64, {0})).i, 0);
  EXPECT_EQ(error_of([&] { dot(a, Tensor::empty(DType::F32, {2, 3})); }),
            "dot: expected two 1-D tensors of the same length, got [3] and [2, 3]");
  EXPECT_THROW(dot(a, Tensor::empty(DType::F32, {4})), DataError);
}

TEST(RuntimeTensorOps, Transpose) {
  Tensor a = make(DType::I32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor t = transpose(a);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(t), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  Tensor c = make(DType::F64, {2, 3, 4}, iota(24));
  Tensor p = transpose(c, {1, -1, 0});
  ASSERT_EQ(p.shape(), (Shape{3, 4, 2}));
  std::vector<double> expected;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i) expected.push_back(i * 12 + j * 4 + k);
  EXPECT_EQ(values(p), expected);
  EXPECT_THROW(transpose(c, {0, 1}), DataError);
  EXPECT_THROW(transpose(c, {0, 1, 1}), DataError);
  EXPECT_THROW(transpose(c, {0, 1, 3}), DataError);
  EXPECT_EQ(transpose(Tensor::scalar(Scalar::of_int(3))).get(0).i, 3);
}

TEST(RuntimeTensorOps, Reshape) {
  Tensor a = make(DType::F32, {2, 3}, iota(6));
  Tensor r = reshape(a, {3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_TRUE(r.same_storage(a));
  EXPECT_EQ(reshape(a, {-1}).shape(), (Shape{6}));
  EXPECT_THROW(reshape(a, {-1, -1}), DataError);
  EXPECT_THROW(reshape(a, {4, -1}), DataError);
  EXPECT_THROW(reshape(a, {7}), DataError);
  EXPECT_THROW(reshape(a, {-2, -3}), DataError);
  EXPECT_THROW(reshape(Tensor::empty(DType::F32, {0}), {0, -1}), DataError);
  EXPECT_EQ(reshape(Tensor::empty(DType::F32, {0, 4}), {-1, 2}).shape(), (Shape{0, 2}));
}

TEST(RuntimeTensorOps, Concat) {
  Tensor a = make(DType::I32, {2, 2}, {1, 2, 3, 4});
  Tensor b = make(DType::I32, {1, 2}, {5, 6});
  Tensor rows = concat({a, b}, 0);
  EXPECT_EQ(rows.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(rows), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  Tensor c = make(DType::F32, {2, 1}, {0.5, 1.5});
  Tensor cols = concat({a, c}, -1);
  EXPECT_EQ(cols.dtype(), DType::F32);
  EXPECT_EQ(cols.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(cols), (std::vector<double>{1, 2, 0.5, 3, 4, 1.5}));
  EXPECT_EQ(values(concat({Tensor::empty(DType::I32, {0, 2}), b}, 0)), (std::vector<double>{5, 6}));
  EXPECT_THROW(concat({a, b}, 1), DataError);
  EXPECT_THROW(concat({}, 0), DataError);
  EXPECT_THROW(concat({a, a}, 2), DataError);
  EXPECT_THROW(concat({Tensor::scalar(Scalar::of_int(1))}, 0), DataError);
}

TEST(RuntimeTensorOps, Split) {
  Tensor a = make(DType::I32, {2, 4}, iota(8));
  std::vector<Tensor> parts = split(a, 2, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values(parts[0]), (std::vector<double>{0, 1, 4, 5}));
  EXPECT_EQ(values(parts[1]), (std::vector<double>{2, 3, 6, 7}));
  std::vector<Tensor> rows = split(a, 2, 0);
  EXPECT_EQ(values(rows[1]), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(error_of([&] { split(a, 3, 1); }), "split: axis 1 of shape [2, 4] does not divide into 3 equal parts");
  EXPECT_THROW(split(a, 0, 0), DataError);
  EXPECT_THROW(split(a, 1, 2), DataError);
}

TEST(RuntimeTensorOps, SelectIndexAndSlice) {
  Tensor a = make(DType::I32, {3, 4}, iota(12));
  Tensor row = select(a, {index(1)});
  EXPECT_EQ(row.shape(), (Shape{4}));
  EXPECT_EQ(values(row), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(values(select(a, {index(-1)})), (std::vector<double>{8, 9, 10, 11}));
  Tensor elem = select(a, {index(2), index(-3)});
  EXPECT_EQ(elem.rank(), 0);
  EXPECT_EQ(elem.get(0).i, 9);
  Tensor cols = select(a, {slice(std::nullopt, std::nullopt), slice(1, std::nullopt, 2)});
  EXPECT_EQ(cols.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(cols), (std::vector<double>{1, 3, 5, 7, 9, 11}));
  Tensor mixed = select(a, {slice(-2, 100), index(0)});
  EXPECT_EQ(mixed.shape(), (Shape{2}));
  EXPECT_EQ(values(mixed), (std::vector<double>{4, 8}));
}

TEST(RuntimeTensorOps, SelectClampsLikeNumPy) {
  Tensor a = make(DType::F32, {5}, iota(5));
  EXPECT_EQ(values(select(a, {slice(-100, 2)})), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(select(a, {slice(3, -1)})), (std::vector<double>{3}));
  EXPECT_EQ(select(a, {slice(4, 2)}).shape(), (Shape{0}));
  EXPECT_EQ(select(a, {slice(7, 9)}).shape(), (Shape{0}));
  EXPECT_EQ(values(select(a, {slice(std::nullopt, std::nullopt, 3)})), (std::vector<double>{0, 3}));
  EXPECT_EQ(values(select(a, {slice(1, std::nullopt, std::numeric_limits<int64_t>::max())})),
            (std::vector<double>{1}));
  EXPECT_EQ(values(select(a, {slice(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())})),
            iota(5));
}

TEST(RuntimeTensorOps, SelectErrors) {
  Tensor a = Tensor::empty(DType::F32, {3, 4});
  EXPECT_EQ(error_of([&] { select(a, {index(3)}); }), "select: index 3 is out of range for axis 0 of shape [3, 4]");
  EXPECT_THROW(select(a, {index(0), index(-5)}), DataError);
  EXPECT_THROW(select(a, {index(0), index(0), index(0)}), DataError);
  EXPECT_THROW(select(a, {slice(0, 2, 0)}), DataError);
  EXPECT_THROW(select(a, {slice(2, 0, -1)}), DataError);
}

TEST(RuntimeTensorOps, AssignBroadcastsAndConverts) {
  Tensor a = Tensor::empty(DType::I32, {3, 4});
  assign(a, {slice(std::nullopt, std::nullopt), slice(1, 3)}, Tensor::scalar(Scalar::of_float(7.9)));
  EXPECT_EQ(values(a), (std::vector<double>{0, 7, 7, 0, 0, 7, 7, 0, 0, 7, 7, 0}));
  assign(a, {index(2)}, make(DType::F64, {4}, {1, 2, 3, 4}));
  EXPECT_EQ(values(select(a, {index(2)})), (std::vector<double>{1, 2, 3, 4}));
  assign(a, {slice(0, 2), index(0)}, make(DType::I32, {1, 2}, {-1, -2}));  // leading 1 broadcasts away
  EXPECT_EQ(a.get(0).i, -1);
  EXPECT_EQ(a.get(4).i, -2);
  assign(a, {index(1), index(3)}, Tensor::scalar(Scalar::of_int(42)));
  EXPECT_EQ(a.get(7).i, 42);
  EXPECT_THROW(assign(a, {index(0)}, make(DType::I32, {3}, {1, 2, 3})), DataError);
  EXPECT_THROW(assign(a, {index(0)}, make(DType::I32, {2, 4}, iota(8))), DataError);
}

TEST(RuntimeTensorOps, AssignWritesThroughSharedStorage) {
  Tensor b = make(DType::I32, {5}, iota(5));
  Tensor view = b.reshaped({5});
  assign(b, {slice(1, std::nullopt)}, select(b, {slice(0, 4)}));
  EXPECT_EQ(values(view), (std::vector<double>{0, 0, 1, 2, 3}));
}

TEST(RuntimeTensorOps, RandomMatchesReferenceXoshiro) {
  // First outputs of xoshiro256** seeded with splitmix64(42), from an independent implementation.
  Random rng(42);
  EXPECT_EQ(rng.next_u64(), 0x15780b2e0c2ec716ull);
  EXPECT_EQ(rng.next_u64(), 0x6104d9866d113a7eull);
  EXPECT_EQ(rng.next_u64(), 0xae17533239e499a1ull);
  EXPECT_EQ(rng.next_u64(), 0xecb8ad4703b360a1ull);
  Random u(7);
  EXPECT_EQ(u.uniform(), 0x1.66b1f5ee9df2ep-1);
  EXPECT_EQ(u.uniform(), 0x1.1d70f6593d20ap-2);
  Random n(7);
  EXPECT_EQ(n.normal(), -0x1.1db8771102afbp-2);
  EXPECT_EQ(n.normal(), 0x1.8718dde10cb6dp+0);
}

TEST(RuntimeTensorOps, RandomStatistics) {
  Random rng(123);
  double sum = 0, sum_sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    double z = rng.normal();
    sum += z;
    sum_sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.05);
}

TEST(RuntimeTensorOps, RandomTensors) {
  Random a(5), b(5), ref(5);
  Tensor u = rand_uniform(a, DType::F64, {2, 3}, -2.0, 2.0);
  Tensor v = rand_uniform(b, DType::F64, {2, 3}, -2.0, 2.0);
  EXPECT_EQ(values(u), values(v));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(u.get(i).f, -2.0 + 4.0 * ref.uniform());  // row-major fill
  Tensor ints = rand_uniform(a, DType::I32, {100}, 0.0, 10.0);
  for (double x : values(ints)) {
    EXPECT_GE(x, 0);
    EXPECT_LT(x, 10);
  }
  Random c(9), ref_n(9);
  Tensor g = rand_normal(c, DType::F32, {3}, 10.0, 2.0);
  EXPECT_EQ(g.dtype(), DType::F32);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(g.data_as<float>()[i], static_cast<float>(10.0 + 2.0 * ref_n.normal()));
}

TEST(RuntimeTensorOps, Arange) {
  EXPECT_EQ(values(arange(DType::I64, 0, 5, 1)), (std::vector<double>{0, 1, 2, 3, 4}));
  Tensor f = arange(DType::F64, 0, 1, 0.3);
  EXPECT_EQ(f.numel(), 4);
  EXPECT_EQ(f.get(3).f, 3 * 0.3);
  EXPECT_EQ(values(arange(DType::I32, 5, 0, -2)), (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(arange(DType::F32, 3, 1, 1).numel(), 0);
  EXPECT_EQ(arange(DType::F32, 1, 1, 1).numel(), 0);
  EXPECT_THROW(arange(DType::F32, 0, 1, 0), DataError);
  EXPECT_THROW(arange(DType::F32, 0, std::numeric_limits<double>::infinity(), 1), DataError);
  EXPECT_THROW(arange(DType::F32, 0, 1e300, 1e-300), DataError);
  EXPECT_THROW(arange(DType::F32, 0, 1e15, 1), DataError);
}

TEST(RuntimeTensorOps, Format) {
  EXPECT_EQ(format_tensor(make(DType::F32, {2, 2}, {1, 2, 3, 4})), "tensor([[1.0, 2.0], [3.0, 4.0]], f32)");
  EXPECT_EQ(format_tensor(Tensor::scalar(Scalar::of_float(2.5))), "tensor(2.5, f32)");
  EXPECT_EQ(format_tensor(make(DType::I64, {10}, iota(10))), "tensor([0, 1, 2, ..., 7, 8, 9], i64)");
  EXPECT_EQ(format_tensor(make(DType::I64, {6}, iota(6))), "tensor([0, 1, 2, 3, 4, 5], i64)");
  EXPECT_EQ(format_tensor(make(DType::I32, {5, 2}, iota(10)), 1), "tensor([[0, 1], ..., [8, 9]], i32)");
  EXPECT_EQ(format_tensor(make(DType::Bool, {2}, {1, 0})), "tensor([true, false], bool)");
  EXPECT_EQ(format_tensor(Tensor::empty(DType::F32, {2, 0})), "tensor([[], []], f32)");
  EXPECT_EQ(format_tensor(Tensor::empty(DType::F32, {0})), "tensor([], f32)");
  EXPECT_EQ(format_tensor(make(DType::F64, {2}, {kNaN, 0.1})), "tensor([nan, 0.1], f64)");
  EXPECT_EQ(format_tensor(Tensor{}), "tensor(null)");
}

}  // namespace
}  // namespace zyntax
