// Builtin functions, methods and attributes of the host language:
// expectations are hand-computed or come from plain loops in the test.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "backends/registry.hpp"
#include "interp/builtins.hpp"
#include "sema/builtin_names.hpp"
#include "runtime/device.hpp"
#include "test_helpers.hpp"

namespace zyntax {
namespace {

using namespace zyntax::testing;




std::vector<double> iota(int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

using Keywords = std::vector<std::pair<std::string, Value>>;

// Calls builtins the way the interpreter does, with distinct spans per argument.
class HostBuiltins : public ::testing::Test {
 protected:
  Value call(const std::string& name, std::vector<Value> positional, Keywords keywords = {}) {
    CallArgs args = make_args(std::move(positional), std::move(keywords));
    return call_builtin(name, args, ctx_);
  }

  Value method(const Value& self, const std::string& name, std::vector<Value> positional, Keywords keywords = {}) {
    CallArgs args = make_args(std::move(positional), std::move(keywords));
    return call_method(self, name, args, ctx_);
  }

  template <class F>
  std::string error_of(F f) {
    try {
      f();
    } catch (const Error& e) {
      last_span_ = e.diagnostic().span;
      return e.what();
    }
    return "";
  }

  static CallArgs make_args(std::vector<Value> positional, Keywords keywords) {
    CallArgs args;
    args.span = Span{0, 0, 100};
    uint32_t pos = 1;
    for (Value& v : positional) {
      args.positional.push_back(std::move(v));
      args.positional_spans.push_back(Span{0, pos, pos + 1});
      ++pos;
    }
    for (auto& kw : keywords) {
      args.keywords.push_back(std::move(kw));
      args.keyword_spans.push_back(Span{0, pos, pos + 1});
      ++pos;
    }
    return args;
  }

  std::ostringstream out_;
  Random rng_{42};
  BuiltinContext ctx_{&out_, &rng_};
  Span last_span_;
};

TEST_F(HostBuiltins, NamesAreConsistent) {
  for (const std::string& name : builtin_names()) EXPECT_TRUE(is_builtin(name)) << name;
  for (const char* name : {"print", "println", "load", "save", "zeros", "ones", "full", "arange", "rand", "randn",
                           "shape", "reshape", "transpose", "split", "concat", "astype", "sin", "gelu_tanh", "clamp",
                           "atan2", "pow", "min", "max", "sum", "mean", "prod", "argmax", "argmin", "any", "all",
                           "len", "int", "float", "bool", "str", "allclose", "assert", "compute_devices",
                           "to_device", "allocate"})
    EXPECT_TRUE(is_builtin(name)) << name;
  EXPECT_FALSE(is_builtin("no_such_builtin"));
  EXPECT_TRUE(std::is_sorted(builtin_names().begin(), builtin_names().end()));
}

// The interpreter implements every function the checker knows by name.
TEST_F(HostBuiltins, EveryNameTheCheckerKnowsIsImplemented) {
  for (const std::string& name : builtin_names()) {
    if (name == "print" || name == "println") continue;
    EXPECT_EQ(error_of([&] { call(name, {}); }).find("unknown builtin"), std::string::npos) << name;
  }
  EXPECT_NE(error_of([&] { call("no_such_builtin", {}); }).find("unknown builtin"), std::string::npos);
}

// Every builtin answers bad calls with an Error, never a crash or another exception.
TEST_F(HostBuiltins, BadArgumentsGiveErrorsNotCrashes) {
  std::vector<std::vector<Value>> bad = {
      {},
      {S("x")},
      {I(-1)},
      {L({I(1 << 30), I(1 << 30), I(1 << 30)})},
      {T(DType::F32, {}, {1})},
      {T(DType::F32, {0}, {}), I(0)},
      {Value::none(), Value::none(), Value::none()},
  };
  for (const std::string& name : builtin_names()) {
    if (name == "print" || name == "println") continue;
    for (const auto& args : bad) {
      try {
        call(name, args);
      } catch (const Error&) {
      }
    }
  }
}

TEST_F(HostBuiltins, Print) {
  call("print", {I(1), F(2.5), S("a b"), L({S("x"), I(2)}), B(false), Value::none()});
  call("println", {});
  call("print", {T(DType::I64, {2}, {1, 2})});
  EXPECT_EQ(out_.str(), "1 2.5 a b [\"x\", 2] false none\n\ntensor([1, 2], i64)\n");
  EXPECT_EQ(error_of([&] { call("print", {I(1)}, {{"sep", S("")}}); }),
            "print() got an unexpected keyword argument 'sep' (it takes none)");
}

TEST_F(HostBuiltins, Creation) {
  Value z = call("zeros", {L({I(2), I(3)})});
  EXPECT_EQ(z.tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.tensor.dtype(), DType::F32);
  EXPECT_EQ(z.tensor.get_f64(5), 0);
  EXPECT_EQ(call("zeros", {I(4), D(DType::I32)}).tensor.dtype(), DType::I32);
  EXPECT_EQ(call("zeros", {I(4)}, {{"dtype", S("f16")}}).tensor.dtype(), DType::F16);
  EXPECT_EQ(call("zeros", {I(4), Value::of_builtin("bool")}).tensor.dtype(), DType::Bool);
  EXPECT_EQ(call("zeros", {Value::of_tuple({})}).tensor.rank(), 0);
  Value o = call("ones", {L({I(2)})}, {{"dtype", D(DType::I8)}});
  EXPECT_EQ(o.tensor.dtype(), DType::I8);
  EXPECT_EQ(o.tensor.get(1).as_int64(), 1);
  Value f = call("full", {L({I(2), I(2)}), F(1.5)});
  EXPECT_EQ(f.tensor.dtype(), DType::F32);
  EXPECT_EQ(f.tensor.get_f64(3), 1.5);
  EXPECT_EQ(call("full", {I(3), I(7)}).tensor.dtype(), DType::I64);
  EXPECT_EQ(call("full", {I(3), I(7), D(DType::F64)}).tensor.get_f64(2), 7);

  Value r = call("arange", {I(5)});
  EXPECT_EQ(r.tensor.dtype(), DType::I64);
  EXPECT_EQ(r.tensor.shape(), (Shape{5}));
  EXPECT_EQ(r.tensor.get(4).as_int64(), 4);
  Value r2 = call("arange", {I(1), I(10), I(3)});
  EXPECT_EQ(r2.tensor.shape(), (Shape{3}));
  EXPECT_EQ(r2.tensor.get(2).as_int64(), 7);
  Value r3 = call("arange", {F(0), F(1), F(0.25)});
  EXPECT_EQ(r3.tensor.dtype(), DType::F32);
  EXPECT_EQ(r3.tensor.shape(), (Shape{4}));
  EXPECT_EQ(r3.tensor.get_f64(3), 0.75);
  EXPECT_EQ(call("arange", {I(3)}, {{"dtype", D(DType::F64)}}).tensor.dtype(), DType::F64);
  EXPECT_EQ(call("arange", {I(5), I(0)}).tensor.numel(), 0);
  EXPECT_NE(error_of([&] { call("arange", {I(0), I(5), I(0)}); }), "");
}

TEST_F(HostBuiltins, CreationErrors) {
  EXPECT_EQ(error_of([&] { call("zeros", {}); }), "zeros() takes 1 or 2 arguments (0 given)");
  EXPECT_EQ(last_span_.end, 100u);
  EXPECT_EQ(error_of([&] { call("zeros", {I(1), D(DType::F32), I(3)}); }), "zeros() takes 1 or 2 arguments (3 given)");
  EXPECT_EQ(error_of([&] { call("zeros", {S("x")}); }), "zeros(): shape must be a list of integers, got str");
  EXPECT_EQ(last_span_.begin, 1u);
  EXPECT_EQ(error_of([&] { call("zeros", {L({I(2), F(1.5)})}); }),
            "zeros(): shape must be a list of integers, but item 1 is float");
  EXPECT_EQ(error_of([&] { call("zeros", {L({I(2), I(-1)})}); }), "zeros(): shape [2, -1] has a negative size");
  EXPECT_EQ(error_of([&] { call("zeros", {L({I(1) , I(int64_t{1} << 40)})}); }),
            "zeros(): shape [1, 1099511627776] is too large");
  EXPECT_EQ(error_of([&] { call("ones", {L({I(int64_t{1} << 62), I(int64_t{1} << 62), I(0)})}); }),
            "ones(): shape [4611686018427387904, 4611686018427387904, 0] is too large");
  EXPECT_EQ(error_of([&] { call("zeros", {I(2), S("f33")}); }), "zeros(): unknown dtype 'f33'");
  EXPECT_EQ(error_of([&] { call("zeros", {I(2), I(3)}); }), "zeros(): dtype must be a dtype such as f32, got int");
  EXPECT_EQ(error_of([&] { call("zeros", {I(2)}, {{"dtyp", D(DType::F32)}}); }),
            "zeros() got an unexpected keyword argument 'dtyp' (it takes shape, dtype)");
  EXPECT_EQ(last_span_.begin, 2u);
  EXPECT_EQ(error_of([&] { call("zeros", {I(2)}, {{"shape", I(3)}}); }),
            "zeros() got multiple values for argument 'shape'");
  EXPECT_EQ(error_of([&] { call("full", {}, {{"value", I(3)}}); }), "full() missing required argument 'shape'");
  EXPECT_EQ(error_of([&] { call("full", {I(2), S("x")}); }), "full(): value must be a number, got str");
  EXPECT_EQ(error_of([&] { call("rand", {I(2)}, {{"dtype", D(DType::I32)}}); }),
            "rand(): dtype must be a float type, got i32");
  EXPECT_EQ(error_of([&] { call("arange", {I(0), I(int64_t{1} << 50)}); }),
            "arange(): a range of 1125899906842624 elements is too large");
}

TEST_F(HostBuiltins, RandnWithSeedIsDeterministicAndNormal) {
  Value a = call("randn", {I(10000)}, {{"seed", I(7)}});
  Value b = call("randn", {I(10000)}, {{"seed", I(7)}});
  Value c = call("randn", {I(10000)}, {{"seed", I(8)}});
  ASSERT_EQ(a.tensor.dtype(), DType::F32);
  double sum = 0, sq = 0;
  bool same = true, differs = false;
  for (int64_t i = 0; i < 10000; ++i) {
    double x = a.tensor.get_f64(i);
    sum += x;
    sq += x * x;
    same = same && x == b.tensor.get_f64(i);
    differs = differs || x != c.tensor.get_f64(i);
  }
  EXPECT_TRUE(same);
  EXPECT_TRUE(differs);
  double mean = sum / 10000, stddev = std::sqrt(sq / 10000 - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(stddev, 1.0, 0.05);

  Value shifted = call("randn", {L({I(100), I(100)})}, {{"seed", I(1)}, {"mean", F(5)}, {"std", F(0.5)}});
  EXPECT_EQ(shifted.tensor.shape(), (Shape{100, 100}));
  double s = 0;
  for (int64_t i = 0; i < 10000; ++i) s += shifted.tensor.get_f64(i);
  EXPECT_NEAR(s / 10000, 5.0, 0.05);
}

TEST_F(HostBuiltins, RandUsesTheProgramGeneratorWithoutSeed) {
  Value u = call("rand", {I(1000)}, {{"seed", I(3)}, {"low", F(-2)}, {"high", F(2)}});
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_GE(u.tensor.get_f64(i), -2);
    EXPECT_LE(u.tensor.get_f64(i), 2);
  }
  Value first = call("rand", {I(4)});
  Value second = call("rand", {I(4)});
  EXPECT_NE(first.tensor.get_f64(0), second.tensor.get_f64(0));
  rng_ = Random(42);
  Value again = call("rand", {I(4)});
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(again.tensor.get_f64(i), first.tensor.get_f64(i));
}

TEST_F(HostBuiltins, ShapeReshapeTranspose) {
  Value t = T(DType::F32, {2, 3, 4}, iota(24));
  EXPECT_EQ(to_display(call("shape", {t})), "[2, 3, 4]");
  Value r = call("reshape", {t, L({I(4), I(-1)})});
  EXPECT_EQ(r.tensor.shape(), (Shape{4, 6}));
  EXPECT_EQ(r.tensor.get_f64(23), 23);
  EXPECT_NE(error_of([&] { call("reshape", {t, L({I(-1), I(-1)})}); }), "");
  EXPECT_NE(error_of([&] { call("reshape", {t, L({I(5), I(-1)})}); }).find("cannot reshape [2, 3, 4]"), std::string::npos);
  Value tr = call("transpose", {t, L({I(2), I(0), I(1)})});
  ASSERT_EQ(tr.tensor.shape(), (Shape{4, 2, 3}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(tr.tensor.get_f64(k * 6 + i * 3 + j), i * 12 + j * 4 + k);
  EXPECT_EQ(call("transpose", {t}).tensor.shape(), (Shape{4, 3, 2}));
  Value cast = call("astype", {t, D(DType::I16)});
  EXPECT_EQ(cast.tensor.dtype(), DType::I16);
  EXPECT_EQ(cast.tensor.get(5).as_int64(), 5);
}

TEST_F(HostBuiltins, SplitConcatRoundTrip) {
  Value t = T(DType::F32, {4, 6}, iota(24));
  Value parts = call("split", {t, I(3)}, {{"axis", I(-1)}});
  ASSERT_EQ(parts.kind, Value::Kind::Tuple);
  ASSERT_EQ(parts.items->size(), 3u);
  EXPECT_EQ((*parts.items)[1].tensor.shape(), (Shape{4, 2}));
  EXPECT_EQ((*parts.items)[1].tensor.get_f64(0), 2);
  Value joined = call("concat", {parts, I(1)});
  EXPECT_TRUE(values_equal(joined, t));
  Value rows = call("split", {t, I(2)});
  Value back = call("concat", {L(*rows.items)});
  EXPECT_TRUE(values_equal(back, t));
  EXPECT_NE(error_of([&] { call("split", {t, I(5)}); }).find("does not divide"), std::string::npos);
  EXPECT_EQ(error_of([&] { call("concat", {L({t, I(1)})}); }),
            "concat(): tensors must be a list of tensors, but item 1 is int");
}

TEST_F(HostBuiltins, ReductionsMatchLoops) {
  std::vector<double> v;
  for (int i = 0; i < 12; ++i) v.push_back((i * 7) % 5 - 1.5);
  Value t = T(DType::F32, {3, 4}, v);
  Value s0 = call("sum", {t}, {{"axis", I(0)}});
  Value m1 = call("mean", {t}, {{"axis", I(-1)}});
  Value a1 = call("argmax", {t, I(1)});
  ASSERT_EQ(s0.tensor.shape(), (Shape{4}));
  ASSERT_EQ(m1.tensor.shape(), (Shape{3}));
  EXPECT_EQ(a1.tensor.dtype(), DType::I64);
  double total = 0;
  for (int j = 0; j < 4; ++j) {
    double s = 0;
    for (int i = 0; i < 3; ++i) s += v[i * 4 + j];
    EXPECT_FLOAT_EQ(static_cast<float>(s0.tensor.get_f64(j)), static_cast<float>(s));
  }
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    int best = 0;
    for (int j = 0; j < 4; ++j) {
      s += v[i * 4 + j];
      if (v[i * 4 + j] > v[i * 4 + best]) best = j;
    }
    total += s;
    EXPECT_FLOAT_EQ(static_cast<float>(m1.tensor.get_f64(i)), static_cast<float>(s / 4));
    EXPECT_EQ(a1.tensor.get(i).as_int64(), best);
  }
  Value full = call("sum", {t});
  ASSERT_EQ(full.kind, Value::Kind::Float);
  EXPECT_FLOAT_EQ(static_cast<float>(full.f), static_cast<float>(total));
  Value keep = call("sum", {t}, {{"axis", I(1)}, {"keepdims", B(true)}});
  EXPECT_EQ(keep.tensor.shape(), (Shape{3, 1}));

  Value ints = T(DType::I32, {4}, {1, 2, 3, 5});
  Value isum = call("sum", {ints});
  ASSERT_EQ(isum.kind, Value::Kind::Int);
  EXPECT_EQ(isum.i, 11);
  Value imean = call("mean", {ints});
  ASSERT_EQ(imean.kind, Value::Kind::Float);
  EXPECT_EQ(imean.f, 2.75);
  EXPECT_EQ(call("mean", {ints}, {{"axis", I(0)}, {"keepdims", B(true)}}).tensor.dtype(), DType::F32);
  EXPECT_EQ(call("mean", {T(DType::F64, {2}, {1, 2})}, {{"axis", I(0)}}).tensor.dtype(), DType::F64);
  EXPECT_EQ(call("prod", {ints}).i, 30);
  EXPECT_EQ(call("argmin", {ints}).i, 0);
  EXPECT_EQ(call("argmax", {T(DType::F32, {2, 2}, {1, 9, 3, 2})}).i, 1);
  EXPECT_EQ(call("sum", {L({I(1), I(2), I(3)})}).i, 6);
  EXPECT_EQ(call("sum", {L({I(1), F(0.5)})}).f, 1.5);
  EXPECT_TRUE(call("any", {T(DType::Bool, {3}, {0, 1, 0})}).b);
  EXPECT_FALSE(call("all", {T(DType::Bool, {3}, {0, 1, 1})}).b);
  EXPECT_TRUE(call("all", {L({I(1), B(true)})}).b);
  EXPECT_EQ(call("any", {T(DType::Bool, {2, 2}, {0, 1, 0, 0})}, {{"axis", I(1)}}).tensor.shape(), (Shape{2}));
  EXPECT_NE(error_of([&] { call("sum", {t}, {{"axis", I(2)}}); }).find("axis 2 is out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { call("max", {T(DType::F32, {0}, {})}); }).find("empty"), std::string::npos);
}

TEST_F(HostBuiltins, MinMax) {
  Value two = call("max", {I(2), I(3)});
  ASSERT_EQ(two.kind, Value::Kind::Int);
  EXPECT_EQ(two.i, 3);
  EXPECT_EQ(call("min", {I(2), F(0.5)}).f, 0.5);
  Value t = T(DType::F32, {2, 2}, {1, -4, 3, 2});
  EXPECT_EQ(call("max", {t}).f, 3);
  EXPECT_EQ(call("min", {t}).f, -4);
  Value clipped = call("max", {t, I(0)});
  EXPECT_EQ(clipped.tensor.dtype(), DType::F32);
  EXPECT_EQ(clipped.tensor.get_f64(1), 0);
  EXPECT_EQ(call("max", {t}, {{"axis", I(0)}}).tensor.get_f64(1), 2);
  EXPECT_EQ(call("max", {L({I(3), I(9), I(2)})}).i, 9);
  EXPECT_EQ(call("min", {L({S("b"), S("a")})}).s, "a");
  EXPECT_EQ(error_of([&] { call("max", {L({})}); }), "max(): the list is empty");
  EXPECT_EQ(error_of([&] { call("max", {I(3)}); }), "max(): x must be a tensor or a list, got int");
}

TEST_F(HostBuiltins, MathOnNumbersAndTensors) {
  Value r = call("sqrt", {I(4)});
  ASSERT_EQ(r.kind, Value::Kind::Float);
  EXPECT_EQ(r.f, 2.0);
  Value a = call("abs", {I(-3)});
  ASSERT_EQ(a.kind, Value::Kind::Int);
  EXPECT_EQ(a.i, 3);
  EXPECT_EQ(call("abs", {F(-2.5)}).f, 2.5);
  EXPECT_EQ(call("round", {F(2.5)}).f, 2.0);
  EXPECT_EQ(call("pow", {I(2), I(3)}).f, 8.0);
  EXPECT_EQ(call("clamp", {I(7), I(0), I(5)}).i, 5);
  EXPECT_DOUBLE_EQ(call("atan2", {F(1), F(1)}).f, std::atan2(1.0, 1.0));
  std::vector<double> v = {0.25, 1, 2.5, 9};
  Value t = T(DType::F32, {4}, v);
  Value roots = call("sqrt", {t});
  Value squares = call("pow", {t, I(2)});
  Value bounded = call("clamp", {t, F(0.5), F(3)});
  Value sig = call("sigmoid", {t});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(roots.tensor.get_f64(i), static_cast<float>(std::sqrt(v[i])));
    EXPECT_EQ(squares.tensor.get_f64(i), static_cast<float>(v[i] * v[i]));
    EXPECT_EQ(bounded.tensor.get_f64(i), std::min(std::max(v[i], 0.5), 3.0));
    EXPECT_FLOAT_EQ(static_cast<float>(sig.tensor.get_f64(i)), static_cast<float>(1 / (1 + std::exp(-v[i]))));
  }
  EXPECT_EQ(call("exp", {T(DType::I32, {1}, {0})}).tensor.dtype(), DType::F32);
  EXPECT_EQ(error_of([&] { call("sin", {S("x")}); }), "sin(): x must be a number or a tensor, got str");
  EXPECT_EQ(error_of([&] { call("sin", {I(1), I(2)}); }), "sin() takes 1 argument (2 given)");
  EXPECT_EQ(error_of([&] { call("clamp", {I(1)}); }), "clamp() takes 3 arguments (1 given)");
}

TEST_F(HostBuiltins, AllClose) {
  Value a = T(DType::F32, {2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(call("allclose", {a, T(DType::F64, {2, 2}, {1, 2, 3, 4 + 1e-6})}).b);
  EXPECT_FALSE(call("allclose", {a, T(DType::F64, {2, 2}, {1, 2, 3, 4.01})}).b);
  EXPECT_TRUE(call("allclose", {a, T(DType::F64, {2, 2}, {1, 2, 3, 4.01})}, {{"atol", F(0.1)}}).b);
  EXPECT_TRUE(call("allclose", {a, T(DType::F64, {2, 2}, {1, 2, 3, 4.01})}, {{"rtol", F(0.01)}}).b);
  EXPECT_TRUE(call("allclose", {T(DType::F32, {2, 2}, {1, 1, 1, 1}), F(1)}).b);
  EXPECT_TRUE(call("allclose", {T(DType::F32, {2}, {INFINITY, 1}), T(DType::F32, {2}, {INFINITY, 1})}).b);
  EXPECT_FALSE(call("allclose", {T(DType::F32, {1}, {NAN}), T(DType::F32, {1}, {NAN})}).b);
  EXPECT_NE(error_of([&] { call("allclose", {a, T(DType::F32, {3}, {1, 2, 3})}); }).find("do not broadcast"),
            std::string::npos);
}

TEST_F(HostBuiltins, Conversions) {
  EXPECT_EQ(call("len", {L({I(1), I(2)})}).i, 2);
  EXPECT_EQ(call("len", {S("abc")}).i, 3);
  EXPECT_EQ(call("len", {T(DType::F32, {5, 2}, iota(10))}).i, 5);
  EXPECT_EQ(error_of([&] { call("len", {T(DType::F32, {}, {1})}); }), "len(): a 0-d tensor has no length");
  EXPECT_EQ(call("int", {F(2.9)}).i, 2);
  EXPECT_EQ(call("int", {F(-2.9)}).i, -2);
  EXPECT_EQ(call("int", {S(" 42 ")}).i, 42);
  EXPECT_EQ(call("int", {S("+7")}).i, 7);
  EXPECT_EQ(call("int", {T(DType::F32, {1, 1}, {3.5})}).i, 3);
  EXPECT_EQ(error_of([&] { call("int", {S("4x")}); }), "int(): '4x' is not an integer");
  EXPECT_EQ(error_of([&] { call("int", {F(NAN)}); }), "int(): cannot convert nan to int");
  EXPECT_EQ(error_of([&] { call("int", {F(1e300)}); }), "int(): 1e+300 is out of range for int");
  EXPECT_EQ(error_of([&] { call("int", {T(DType::F32, {2}, {1, 2})}); }),
            "int(): only a tensor with one element converts to int, got tensor[2, f32]");
  EXPECT_EQ(call("float", {I(3)}).f, 3.0);
  EXPECT_EQ(call("float", {S("2.5")}).f, 2.5);
  EXPECT_TRUE(std::isinf(call("float", {S("inf")}).f));
  EXPECT_EQ(call("float", {T(DType::I32, {}, {4})}).f, 4.0);
  EXPECT_EQ(error_of([&] { call("float", {S("")}); }), "float(): '' is not a number");
  EXPECT_TRUE(call("bool", {I(3)}).b);
  EXPECT_FALSE(call("bool", {L({})}).b);
  EXPECT_EQ(error_of([&] { call("bool", {T(DType::F32, {2}, {1, 2})}); }),
            "bool(): the truth value of a tensor with 2 elements is ambiguous; use any() or all()");
  EXPECT_EQ(call("str", {F(1.0)}).s, "1.0");
  EXPECT_EQ(call("str", {L({S("a")})}).s, "[\"a\"]");
}

TEST_F(HostBuiltins, Assert) {
  EXPECT_EQ(call("assert", {B(true)}).kind, Value::Kind::None);
  EXPECT_EQ(error_of([&] { call("assert", {I(0), S("x must be positive")}); }), "assertion failed: x must be positive");
  EXPECT_EQ(last_span_.end, 100u);
  EXPECT_EQ(error_of([&] { call("assert", {B(false)}); }), "assertion failed");
}

TEST_F(HostBuiltins, LoadSaveRoundTrip) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("zyntax_host_builtins_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "x.npy").string();
  Value t = T(DType::I32, {2, 3}, {1, -2, 3, 4, 5, 6});
  EXPECT_EQ(call("save", {t, S(path)}).kind, Value::Kind::None);
  Value back = call("load", {S(path)});
  EXPECT_EQ(back.tensor.dtype(), DType::I32);
  EXPECT_TRUE(values_equal(back, t));
  std::string missing = (dir / "missing.npy").string();
  std::string err = error_of([&] { call("load", {S(missing)}); });
  EXPECT_EQ(err.rfind("load(): ", 0), 0u) << err;
  EXPECT_NE(err.find(missing), std::string::npos) << err;
  EXPECT_EQ(error_of([&] { call("save", {I(1), S(path)}); }), "save(): tensor must be a tensor, got int");
  std::filesystem::remove_all(dir);
}

TEST_F(HostBuiltins, Devices) {
  Value devices = call("compute_devices", {});
  ASSERT_EQ(devices.kind, Value::Kind::List);
  ASSERT_EQ(devices.items->size(), device_registry().devices().size());
  const Value& first = (*devices.items)[0];
  ASSERT_EQ(first.kind, Value::Kind::Record);
  EXPECT_EQ(first.record->find("id")->s, device_registry().devices()[0]->info().id);
  EXPECT_EQ(first.record->find("memory")->kind, Value::Kind::Int);
  EXPECT_EQ(first.record->find("cores")->kind, Value::Kind::Int);

  Value t = T(DType::F32, {2}, {1, 2});
  Value moved = call("to_device", {t, S("cpu:reference")});
  EXPECT_EQ(moved.tensor.device(), "cpu:reference");
  EXPECT_FALSE(moved.tensor.same_storage(t.tensor));
  EXPECT_TRUE(call("to_device", {t, S("cpu")}, {{"copy", B(false)}}).tensor.same_storage(t.tensor));
  EXPECT_EQ(method(t, "to_device", {S("cpu")}).tensor.device(), "cpu");
  if (!device_registry().find("cuda:0")) {
    EXPECT_EQ(error_of([&] { call("to_device", {t, S("cuda:0")}); }),
              "device 'cuda:0' is not available (available: " + device_registry().available() + "; " +
                  device_registry().unavailable_reason("cuda:0") + ")");
    EXPECT_EQ(last_span_.begin, 2u);
  }
  EXPECT_EQ(error_of([&] { call("to_device", {t, S("tpu:7")}); }),
            "device 'tpu:7' is not available (available: " + device_registry().available() + ")");
  Value buf = call("allocate", {}, {{"shape", L({I(2), I(2)})}, {"dtype", D(DType::F16)}, {"device", S("cpu")}});
  EXPECT_EQ(buf.tensor.shape(), (Shape{2, 2}));
  EXPECT_EQ(buf.tensor.dtype(), DType::F16);
  EXPECT_EQ(buf.tensor.device(), "cpu");
  EXPECT_NE(error_of([&] { call("allocate", {L({I(2)})}, {{"device", S("cuda:9")}}); }), "");
}

TEST_F(HostBuiltins, TensorMethodsAndAttributes) {
  Value t = T(DType::F32, {2, 3}, iota(6));
  EXPECT_TRUE(has_method(t, "reshape"));
  EXPECT_FALSE(has_method(t, "append"));
  EXPECT_EQ(method(t, "reshape", {L({I(3), I(-1)})}).tensor.shape(), (Shape{3, 2}));
  EXPECT_EQ(method(t, "sum", {}, {{"axis", I(0)}}).tensor.get_f64(2), 7);
  EXPECT_EQ(method(t, "sum", {}).f, 15);
  EXPECT_EQ(method(t, "max", {}).f, 5);
  EXPECT_EQ(method(t, "max", {I(0)}).tensor.shape(), (Shape{3}));
  EXPECT_EQ(method(t, "astype", {D(DType::I64)}).tensor.dtype(), DType::I64);
  EXPECT_EQ(method(t, "transpose", {}).tensor.shape(), (Shape{3, 2}));
  EXPECT_EQ(method(T(DType::I32, {1}, {9}), "item", {}).i, 9);
  EXPECT_EQ(error_of([&] { method(t, "item", {}); }),
            "tensor.item(): only a tensor with one element has an item, got tensor[2, 3, f32]");
  EXPECT_EQ(error_of([&] { method(t, "reshape", {}); }), "tensor.reshape() takes 1 argument (0 given)");
  EXPECT_EQ(error_of([&] { method(t, "nope", {}); }), "tensor[2, 3, f32] has no method 'nope'");

  Value out;
  ASSERT_TRUE(get_attribute(t, "shape", out));
  EXPECT_EQ(to_display(out), "[2, 3]");
  ASSERT_TRUE(get_attribute(t, "dtype", out));
  EXPECT_EQ(out.kind, Value::Kind::DType);
  EXPECT_EQ(out.dtype, DType::F32);
  ASSERT_TRUE(get_attribute(t, "device", out));
  EXPECT_EQ(out.s, "cpu");
  ASSERT_TRUE(get_attribute(t, "rank", out));
  EXPECT_EQ(out.i, 2);
  ASSERT_TRUE(get_attribute(t, "size", out));
  EXPECT_EQ(out.i, 6);
  ASSERT_TRUE(get_attribute(t, "T", out));
  EXPECT_EQ(out.tensor.shape(), (Shape{3, 2}));
  EXPECT_EQ(out.tensor.get_f64(1), 3);
  EXPECT_FALSE(get_attribute(t, "nope", out));
  EXPECT_FALSE(get_attribute(L({}), "shape", out));
}

TEST_F(HostBuiltins, ListMethods) {
  Value list = L({I(1)});
  Value alias = list;
  EXPECT_EQ(method(list, "append", {S("x")}).kind, Value::Kind::None);
  EXPECT_EQ(to_display(alias), "[1, \"x\"]");
  EXPECT_EQ(method(list, "len", {}).i, 2);
  EXPECT_EQ(error_of([&] { method(list, "append", {}); }), "list.append() takes 1 argument (0 given)");
  EXPECT_FALSE(has_method(Value::of_tuple({}), "append"));
}

}  // namespace
}  // namespace zyntax
