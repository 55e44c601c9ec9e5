// Host values and operators: expectations are hand-computed or come from
// plain loops in the test, never from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "interp/host_ops.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"
#include "test_helpers.hpp"

namespace zyntax {
namespace {

using namespace zyntax::testing;

template <class F>
std::string error_of(F f) {
  return message_of<Error>(f);
}

using ast::BinOp;
using ast::UnOp;




Value bin(BinOp op, const Value& a, const Value& b) { return host_binary(op, a, b, Span{}); }


HostIndex at(int64_t i) {
  HostIndex h;
  h.index = i;
  return h;
}

HostIndex slice(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  HostIndex h;
  h.is_slice = true;
  h.lo = lo;
  h.hi = hi;
  return h;
}

void expect_int(const Value& v, int64_t want) {
  ASSERT_EQ(v.kind, Value::Kind::Int) << type_name(v);
  EXPECT_EQ(v.i, want);
}

void expect_float(const Value& v, double want) {
  ASSERT_EQ(v.kind, Value::Kind::Float) << type_name(v);
  EXPECT_DOUBLE_EQ(v.f, want);
}

void expect_bool(const Value& v, bool want) {
  ASSERT_EQ(v.kind, Value::Kind::Bool) << type_name(v);
  EXPECT_EQ(v.b, want);
}

TEST(HostValue, TypeNames) {
  EXPECT_EQ(type_name(Value::none()), "none");
  EXPECT_EQ(type_name(I(1)), "int");
  EXPECT_EQ(type_name(F(1)), "float");
  EXPECT_EQ(type_name(B(true)), "bool");
  EXPECT_EQ(type_name(S("x")), "str");
  EXPECT_EQ(type_name(T(DType::F32, {2, 3}, {0, 0, 0, 0, 0, 0})), "tensor[2, 3, f32]");
  EXPECT_EQ(type_name(T(DType::I64, {}, {7})), "tensor[i64]");
  EXPECT_EQ(type_name(Value::of_list({})), "list");
  EXPECT_EQ(type_name(Value::of_tuple({})), "tuple");
  EXPECT_EQ(type_name(Value::of_record({})), "record");
  EXPECT_EQ(type_name(Value::of_builtin("print")), "builtin");
  EXPECT_EQ(type_name(Value::of_dtype(DType::F16)), "dtype");
}

TEST(HostValue, Display) {
  EXPECT_EQ(to_display(I(-3)), "-3");
  EXPECT_EQ(to_display(F(2.5)), "2.5");
  EXPECT_EQ(to_display(F(1.0)), "1.0");
  EXPECT_EQ(to_display(F(0.1)), "0.1");
  EXPECT_EQ(to_display(F(INFINITY)), "inf");
  EXPECT_EQ(to_display(B(true)), "true");
  EXPECT_EQ(to_display(S("hi")), "hi");
  EXPECT_EQ(to_display(Value::none()), "none");
  EXPECT_EQ(to_display(Value::of_list({I(1), I(2)})), "[1, 2]");
  EXPECT_EQ(to_display(Value::of_list({S("a"), F(0.5)})), "[\"a\", 0.5]");
  EXPECT_EQ(to_display(Value::of_tuple({I(1), I(2)})), "(1, 2)");
  EXPECT_EQ(to_display(Value::of_tuple({I(1)})), "(1,)");
  EXPECT_EQ(to_display(Value::of_record({{"a", I(1)}, {"b", Value::of_list({I(1), I(2)})}})), "{a: 1, b: [1, 2]}");
  EXPECT_EQ(to_display(Value::of_dtype(DType::F32)), "f32");
  EXPECT_EQ(to_display(T(DType::F32, {2}, {1, 2.5})), format_tensor(make(DType::F32, {2}, {1, 2.5})));
}

TEST(HostValue, Equality) {
  EXPECT_TRUE(values_equal(I(1), F(1.0)));
  EXPECT_TRUE(values_equal(B(true), I(1)));
  EXPECT_FALSE(values_equal(I(9007199254740993), F(9007199254740992.0)));
  EXPECT_FALSE(values_equal(F(NAN), F(NAN)));
  EXPECT_TRUE(values_equal(S("a"), S("a")));
  EXPECT_FALSE(values_equal(S("1"), I(1)));
  EXPECT_TRUE(values_equal(Value::none(), Value::none()));
  EXPECT_TRUE(values_equal(Value::of_list({I(1), S("x")}), Value::of_list({F(1), S("x")})));
  EXPECT_FALSE(values_equal(Value::of_list({I(1)}), Value::of_tuple({I(1)})));
  EXPECT_FALSE(values_equal(Value::of_list({I(1)}), Value::of_list({I(1), I(2)})));
  EXPECT_TRUE(values_equal(Value::of_record({{"a", I(1)}, {"b", I(2)}}), Value::of_record({{"b", I(2)}, {"a", I(1)}})));
  EXPECT_FALSE(values_equal(Value::of_record({{"a", I(1)}}), Value::of_record({{"a", I(2)}})));
  EXPECT_TRUE(values_equal(T(DType::F32, {2}, {1, 2}), T(DType::I64, {2}, {1, 2})));
  EXPECT_FALSE(values_equal(T(DType::F32, {2}, {1, 2}), T(DType::F32, {1, 2}, {1, 2})));
  EXPECT_FALSE(values_equal(T(DType::F32, {2}, {1, 2}), T(DType::F32, {2}, {1, 3})));
  EXPECT_TRUE(values_equal(Value::of_dtype(DType::I8), Value::of_dtype(DType::I8)));
}

TEST(HostValue, SelfContainingAndDeepValues) {
  Value list = Value::of_list({I(1)});
  list.items->push_back(list);
  EXPECT_EQ(to_display(list), "[1, [...]]");
  EXPECT_TRUE(values_equal(list, list));
  Value other = Value::of_list({I(1)});
  other.items->push_back(other);
  EXPECT_NE(error_of([&] { values_equal(list, other); }), "");
  Value deep = Value::of_list({});
  for (int i = 0; i < 100000; ++i) deep = Value::of_list({deep});
  EXPECT_NE(to_display(deep).find("..."), std::string::npos);
  // Both cycles are broken before the values go, so that nothing leaks.
  list.items->clear();
  other.items->clear();
  while (!deep.items->empty()) {
    Value inner = (*deep.items)[0];
    deep = inner;
  }
}

TEST(HostValue, Truthiness) {
  EXPECT_EQ(truthy(Value::none()), false);
  EXPECT_EQ(truthy(I(0)), false);
  EXPECT_EQ(truthy(I(-2)), true);
  EXPECT_EQ(truthy(F(0.0)), false);
  EXPECT_EQ(truthy(S("")), false);
  EXPECT_EQ(truthy(S("0")), true);
  EXPECT_EQ(truthy(Value::of_list({})), false);
  EXPECT_EQ(truthy(Value::of_list({I(0)})), true);
  EXPECT_EQ(truthy(T(DType::F32, {1}, {0})), false);
  EXPECT_EQ(truthy(T(DType::F32, {}, {3})), true);
  EXPECT_EQ(truthy(T(DType::F32, {2}, {1, 1})), std::nullopt);
}

TEST(HostValue, Scalars) {
  EXPECT_EQ(I(5).as_scalar().dtype, DType::I64);
  EXPECT_EQ(F(5).as_scalar().dtype, DType::F64);
  EXPECT_EQ(B(true).as_scalar().dtype, DType::Bool);
  EXPECT_EQ(T(DType::I32, {1, 1}, {4}).as_scalar().as_int64(), 4);
  EXPECT_DOUBLE_EQ(B(true).as_double(), 1.0);
  EXPECT_NE(error_of([] { S("x").as_scalar(); }), "");
  EXPECT_NE(error_of([] { T(DType::F32, {2}, {1, 2}).as_double(); }), "");
}

TEST(HostOps, IntegerArithmetic) {
  expect_int(bin(BinOp::Add, I(2), I(3)), 5);
  expect_int(bin(BinOp::Div, I(7), I(2)), 3);
  expect_int(bin(BinOp::Div, I(7), I(-2)), -3);
  expect_int(bin(BinOp::Div, I(-7), I(2)), -3);
  expect_int(bin(BinOp::Mod, I(7), I(-2)), 1);
  expect_int(bin(BinOp::Mod, I(-7), I(2)), -1);
  expect_int(bin(BinOp::Pow, I(2), I(10)), 1024);
  expect_float(bin(BinOp::Pow, I(2), I(-1)), 0.5);
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  expect_int(bin(BinOp::Add, I(kMax), I(1)), kMin);
  expect_int(bin(BinOp::Mul, I(kMax), I(2)), -2);
  expect_int(bin(BinOp::Div, I(kMin), I(-1)), kMin);
  EXPECT_EQ(error_of([] { bin(BinOp::Div, I(1), I(0)); }), "integer division by zero");
  EXPECT_NE(error_of([] { bin(BinOp::Mod, I(1), I(0)); }), "");
}

TEST(HostOps, MixedAndFloatArithmetic) {
  expect_float(bin(BinOp::Add, F(1.5), I(2)), 3.5);
  expect_float(bin(BinOp::Div, I(7), F(2)), 3.5);
  expect_float(bin(BinOp::Div, F(1), F(0)), INFINITY);
  expect_float(bin(BinOp::Pow, F(2), I(3)), 8.0);
  expect_int(bin(BinOp::Add, B(true), B(true)), 2);
  expect_int(bin(BinOp::Mul, B(true), I(5)), 5);
  expect_bool(bin(BinOp::Lt, I(1), F(1.5)), true);
  expect_bool(bin(BinOp::Ge, I(2), I(3)), false);
  expect_bool(bin(BinOp::Eq, I(1), F(1.0)), true);
  expect_bool(bin(BinOp::Ne, I(1), S("1")), true);
  expect_bool(bin(BinOp::Eq, Value::none(), Value::none()), true);
}

TEST(HostOps, StringsAndLists) {
  Value s = bin(BinOp::Add, S("ab"), S("cd"));
  ASSERT_EQ(s.kind, Value::Kind::Str);
  EXPECT_EQ(s.s, "abcd");
  expect_bool(bin(BinOp::Lt, S("abc"), S("abd")), true);
  expect_bool(bin(BinOp::Gt, S("b"), S("abc")), true);
  expect_bool(bin(BinOp::Eq, S("x"), S("x")), true);
  Value a = Value::of_list({I(1)});
  Value joined = bin(BinOp::Add, a, Value::of_list({I(2), I(3)}));
  EXPECT_EQ(to_display(joined), "[1, 2, 3]");
  EXPECT_EQ(a.items->size(), 1u);
  EXPECT_EQ(bin(BinOp::Add, Value::of_tuple({I(1)}), Value::of_tuple({I(2)})).kind, Value::Kind::Tuple);
  EXPECT_EQ(error_of([] { bin(BinOp::Sub, S("a"), S("b")); }), "unsupported operand types for '-': str and str");
  EXPECT_EQ(error_of([] { bin(BinOp::Add, Value::of_list({}), Value::of_tuple({})); }),
            "unsupported operand types for '+': list and tuple");
}

TEST(HostOps, UnsupportedOperandsNameBothTypes) {
  Value t = T(DType::F32, {2}, {1, 2});
  EXPECT_EQ(error_of([&] { bin(BinOp::Add, S("a"), t); }), "unsupported operand types for '+': str and tensor[2, f32]");
  EXPECT_EQ(error_of([&] { bin(BinOp::MatMul, t, I(2)); }), "unsupported operand types for '@': tensor[2, f32] and int");
  EXPECT_EQ(error_of([] { bin(BinOp::MatMul, I(1), I(2)); }), "unsupported operand types for '@': int and int");
  EXPECT_EQ(error_of([] { bin(BinOp::Lt, I(1), S("a")); }), "unsupported operand types for '<': int and str");
  EXPECT_THROW(bin(BinOp::And, I(1), I(2)), std::logic_error);
}

TEST(HostOps, TensorBroadcastingMatchesLoops) {
  std::vector<double> av, bv;
  for (int i = 0; i < 6; ++i) av.push_back(i * 1.5 - 2);
  for (int j = 0; j < 3; ++j) bv.push_back(j + 0.25);
  Value a = T(DType::F32, {2, 3}, av), b = T(DType::F32, {3}, bv);
  Value sum = bin(BinOp::Add, a, b);
  Value prod = bin(BinOp::Mul, b, a);
  Value less = bin(BinOp::Lt, a, b);
  ASSERT_EQ(sum.kind, Value::Kind::Tensor);
  EXPECT_EQ(sum.tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(less.tensor.dtype(), DType::Bool);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float x = static_cast<float>(av[i * 3 + j]), y = static_cast<float>(bv[j]);
      EXPECT_EQ(sum.tensor.get_f64(i * 3 + j), static_cast<float>(x + y));
      EXPECT_EQ(prod.tensor.get_f64(i * 3 + j), static_cast<float>(y * x));
      EXPECT_EQ(less.tensor.get(i * 3 + j).truthy(), x < y);
    }
}

TEST(HostOps, NumbersMeetingTensors) {
  Value ints = T(DType::I32, {3}, {1, 2, 3});
  Value r = bin(BinOp::Add, ints, I(10));
  EXPECT_EQ(r.tensor.dtype(), DType::I32);
  EXPECT_EQ(r.tensor.get(2).as_int64(), 13);
  Value half = bin(BinOp::Mul, F(0.5), ints);
  EXPECT_EQ(half.tensor.dtype(), DType::F32);
  EXPECT_DOUBLE_EQ(half.tensor.get_f64(0), 0.5);
  Value f16 = T(DType::F16, {2}, {1, 2});
  EXPECT_EQ(bin(BinOp::Add, f16, F(0.5)).tensor.dtype(), DType::F16);
  Value mask = T(DType::Bool, {2}, {1, 0});
  Value shifted = bin(BinOp::Add, mask, I(2));
  EXPECT_EQ(shifted.tensor.dtype(), DType::I64);
  EXPECT_EQ(shifted.tensor.get(0).as_int64(), 3);
  EXPECT_EQ(shifted.tensor.get(1).as_int64(), 2);
  Value div = bin(BinOp::Div, T(DType::I64, {2}, {7, -7}), I(2));
  EXPECT_EQ(div.tensor.get(0).as_int64(), 3);
  EXPECT_EQ(div.tensor.get(1).as_int64(), -3);
  Value eq = bin(BinOp::Eq, ints, I(2));
  EXPECT_EQ(eq.tensor.dtype(), DType::Bool);
  EXPECT_FALSE(eq.tensor.get(0).truthy());
  EXPECT_TRUE(eq.tensor.get(1).truthy());
  EXPECT_EQ(error_of([&] { bin(BinOp::Div, ints, I(0)); }), "'/': integer division by zero");
}

TEST(HostOps, ShapeErrorsKeepTheLibraryMessage) {
  Value a = T(DType::F32, {2, 3}, {0, 0, 0, 0, 0, 0}), b = T(DType::F32, {4}, {0, 0, 0, 0});
  EXPECT_EQ(error_of([&] { bin(BinOp::Add, a, b); }), "'+': shapes [2, 3] and [4] do not broadcast");
  EXPECT_NE(error_of([&] { bin(BinOp::MatMul, a, a); }).find("[2, 3] @ [2, 3]"), std::string::npos);
}

TEST(HostOps, MatMulMatchesLoops) {
  std::vector<double> av, bv;
  for (int i = 0; i < 6; ++i) av.push_back(i + 1);
  for (int i = 0; i < 12; ++i) bv.push_back(i % 5 - 2);
  Value a = T(DType::F32, {2, 3}, av), b = T(DType::F32, {3, 4}, bv);
  Value c = bin(BinOp::MatMul, a, b);
  ASSERT_EQ(c.tensor.shape(), (Shape{2, 4}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double want = 0;
      for (int k = 0; k < 3; ++k) want += av[i * 3 + k] * bv[k * 4 + j];
      EXPECT_EQ(c.tensor.get_f64(i * 4 + j), want);
    }
}

TEST(HostOps, Unary) {
  expect_int(host_unary(UnOp::Neg, I(5), Span{}), -5);
  expect_int(host_unary(UnOp::Neg, I(std::numeric_limits<int64_t>::min()), Span{}), std::numeric_limits<int64_t>::min());
  expect_int(host_unary(UnOp::Neg, B(true), Span{}), -1);
  expect_float(host_unary(UnOp::Neg, F(2.5), Span{}), -2.5);
  expect_int(host_unary(UnOp::Pos, I(4), Span{}), 4);
  expect_bool(host_unary(UnOp::Not, I(0), Span{}), true);
  expect_bool(host_unary(UnOp::Not, S("x"), Span{}), false);
  Value t = T(DType::F32, {2}, {1, -2});
  Value neg = host_unary(UnOp::Neg, t, Span{});
  EXPECT_EQ(neg.tensor.get_f64(0), -1);
  EXPECT_EQ(neg.tensor.get_f64(1), 2);
  Value inverted = host_unary(UnOp::Not, T(DType::Bool, {2}, {1, 0}), Span{});
  EXPECT_EQ(inverted.tensor.dtype(), DType::Bool);
  EXPECT_FALSE(inverted.tensor.get(0).truthy());
  EXPECT_TRUE(inverted.tensor.get(1).truthy());
  EXPECT_EQ(error_of([] { host_unary(UnOp::Neg, S("a"), Span{}); }), "unsupported operand type for unary '-': str");
}

TEST(HostIndex, ListsTuplesStrings) {
  Value list = Value::of_list({I(10), I(20), I(30)});
  expect_int(host_index(list, {at(0)}, Span{}), 10);
  expect_int(host_index(list, {at(-1)}, Span{}), 30);
  expect_int(host_index(list, {at(-3)}, Span{}), 10);
  EXPECT_EQ(error_of([&] { host_index(list, {at(3)}, Span{}); }), "index 3 is out of range for a list of length 3");
  EXPECT_EQ(error_of([&] { host_index(list, {at(-4)}, Span{}); }), "index -4 is out of range for a list of length 3");
  EXPECT_EQ(to_display(host_index(list, {slice(1, 100)}, Span{})), "[20, 30]");
  EXPECT_EQ(to_display(host_index(list, {slice(-2, std::nullopt)}, Span{})), "[20, 30]");
  EXPECT_EQ(to_display(host_index(list, {slice(std::nullopt, -1)}, Span{})), "[10, 20]");
  EXPECT_EQ(to_display(host_index(list, {slice(2, 1)}, Span{})), "[]");
  EXPECT_EQ(to_display(host_index(list, {slice(-100, 100)}, Span{})), "[10, 20, 30]");
  Value tuple = Value::of_tuple({I(1), I(2)});
  EXPECT_EQ(host_index(tuple, {slice(0, 1)}, Span{}).kind, Value::Kind::Tuple);
  EXPECT_EQ(error_of([&] { host_index(tuple, {at(2)}, Span{}); }), "index 2 is out of range for a tuple of length 2");
  EXPECT_EQ(host_index(S("hello"), {at(-1)}, Span{}).s, "o");
  EXPECT_EQ(host_index(S("hello"), {slice(1, 3)}, Span{}).s, "el");
  EXPECT_EQ(error_of([&] { host_index(list, {at(0), at(1)}, Span{}); }), "a list takes one index or slice, got 2");
  EXPECT_EQ(error_of([] { host_index(I(3), {at(0)}, Span{}); }), "a value of type int cannot be indexed");
}

TEST(HostIndex, ErrorsPointAtTheIndex) {
  HostIndex bad = at(9);
  bad.span = Span{0, 4, 5};
  try {
    host_index(Value::of_list({I(1)}), {bad}, Span{0, 0, 6});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().span.begin, 4u);
  }
}

TEST(HostIndex, Tensors) {
  std::vector<double> v;
  for (int i = 0; i < 12; ++i) v.push_back(i);
  Value t = T(DType::F32, {3, 4}, v);
  expect_float(host_index(t, {at(1), at(2)}, Span{}), 6);
  expect_float(host_index(t, {at(-1), at(-1)}, Span{}), 11);
  Value row = host_index(t, {at(1)}, Span{});
  ASSERT_EQ(row.kind, Value::Kind::Tensor);
  EXPECT_EQ(row.tensor.shape(), (Shape{4}));
  EXPECT_EQ(row.tensor.get_f64(0), 4);
  Value cols = host_index(t, {slice(std::nullopt, std::nullopt), slice(1, 3)}, Span{});
  EXPECT_EQ(cols.tensor.shape(), (Shape{3, 2}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(cols.tensor.get_f64(i * 2 + j), i * 4 + j + 1);
  Value clamped = host_index(t, {slice(-10, 10)}, Span{});
  EXPECT_EQ(clamped.tensor.shape(), (Shape{3, 4}));
  Value one = host_index(t, {slice(1, 2), at(0)}, Span{});
  EXPECT_EQ(one.kind, Value::Kind::Tensor);
  EXPECT_EQ(one.tensor.shape(), (Shape{1}));
  EXPECT_FALSE(row.tensor.same_storage(t.tensor));
  EXPECT_EQ(error_of([&] { host_index(t, {at(5)}, Span{}); }),
            "index 5 is out of range for axis 0 of a tensor of shape [3, 4]");
  EXPECT_EQ(error_of([&] { host_index(t, {at(0), at(-5)}, Span{}); }),
            "index -5 is out of range for axis 1 of a tensor of shape [3, 4]");
  EXPECT_EQ(error_of([&] { host_index(t, {at(0), at(0), at(0)}, Span{}); }),
            "too many indices for a tensor of shape [3, 4]: 3 given");
  expect_int(host_index(T(DType::I32, {2}, {5, 6}), {at(1)}, Span{}), 6);
  expect_bool(host_index(T(DType::Bool, {2}, {0, 1}), {at(1)}, Span{}), true);
}

TEST(HostIndex, Assignment) {
  Value list = Value::of_list({I(1), I(2), I(3)});
  Value alias = list;
  host_index_assign(list, {at(-1)}, S("x"), Span{});
  EXPECT_EQ(to_display(alias), "[1, 2, \"x\"]");
  EXPECT_EQ(error_of([&] { host_index_assign(list, {at(3)}, I(0), Span{}); }),
            "index 3 is out of range for a list of length 3");
  Value tuple = Value::of_tuple({I(1)});
  EXPECT_NE(error_of([&] { host_index_assign(tuple, {at(0)}, I(0), Span{}); }), "");

  Value t = T(DType::F32, {2, 3}, {0, 0, 0, 0, 0, 0});
  Value view = t;
  host_index_assign(t, {at(1), at(-1)}, F(2.5), Span{});
  EXPECT_EQ(view.tensor.get_f64(5), 2.5);
  host_index_assign(t, {at(0)}, T(DType::I64, {3}, {7, 8, 9}), Span{});
  EXPECT_EQ(view.tensor.get_f64(0), 7);
  EXPECT_EQ(view.tensor.get_f64(2), 9);
  host_index_assign(t, {slice(std::nullopt, std::nullopt), slice(1, 2)}, I(-1), Span{});
  EXPECT_EQ(view.tensor.get_f64(1), -1);
  EXPECT_EQ(view.tensor.get_f64(4), -1);
  EXPECT_EQ(error_of([&] { host_index_assign(t, {at(2)}, I(0), Span{}); }),
            "index 2 is out of range for axis 0 of a tensor of shape [2, 3]");
  EXPECT_NE(error_of([&] { host_index_assign(t, {at(0)}, T(DType::F32, {2}, {1, 2}), Span{}); }).find("broadcast"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { host_index_assign(t, {at(0)}, S("a"), Span{}); }),
            "cannot assign a value of type str to tensor elements");
}

}  // namespace
}  // namespace zyntax
