// DType helpers (promotion, half and bfloat16 conversions) and the scalar
// semantics that every other component computes through.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "support/dtype.hpp"
#include "support/scalar.hpp"

namespace zyntax {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

Scalar i8(int64_t v) { return Scalar::of_int(v, DType::I8); }
Scalar i32(int64_t v) { return Scalar::of_int(v, DType::I32); }
Scalar i64(int64_t v) { return Scalar::of_int(v, DType::I64); }
Scalar u8(uint64_t v) { return Scalar::of_uint(v, DType::U8); }
Scalar f32(double v) { return Scalar::of_float(v, DType::F32); }
Scalar f64(double v) { return Scalar::of_float(v, DType::F64); }
const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(SupportDType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_size(DType::U32), 4u);
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  EXPECT_STREQ(dtype_name(DType::BF16), "bf16");
  EXPECT_STREQ(dtype_name(DType::Bool), "bool");
  EXPECT_EQ(int_bits(DType::I16), 16);
  EXPECT_EQ(int_bits(DType::F32), 0);
}

TEST(SupportDType, ParseAcceptsShortAndLongNames) {
  EXPECT_EQ(parse_dtype("f32"), DType::F32);
  EXPECT_EQ(parse_dtype("float32"), DType::F32);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
  EXPECT_EQ(parse_dtype("half"), DType::F16);
  EXPECT_EQ(parse_dtype("uint64"), DType::U64);
  EXPECT_EQ(parse_dtype("bool"), DType::Bool);
  EXPECT_FALSE(parse_dtype("complex64").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
}

TEST(SupportDType, Promotion) {
  EXPECT_EQ(promote(DType::F16, DType::BF16), DType::F32);
  EXPECT_EQ(promote(DType::I32, DType::F16), DType::F16);
  EXPECT_EQ(promote(DType::F32, DType::F64), DType::F64);
  EXPECT_EQ(promote(DType::I8, DType::I32), DType::I32);
  EXPECT_EQ(promote(DType::I8, DType::U8), DType::I16);
  EXPECT_EQ(promote(DType::I32, DType::U32), DType::I64);
  EXPECT_EQ(promote(DType::U16, DType::I32), DType::I32);
  EXPECT_EQ(promote(DType::U64, DType::I8), DType::I64);
  EXPECT_EQ(promote(DType::Bool, DType::I8), DType::I8);
  EXPECT_EQ(promote(DType::U8, DType::Bool), DType::U8);
  EXPECT_EQ(promote(DType::Bool, DType::Bool), DType::Bool);
}

TEST(SupportDType, HalfEncodesKnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);  // largest finite half
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e6f), 0xFC00);
  uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(SupportDType, HalfRoundsHalfwayCasesToEven) {
  // 1 + 2^-11 lies halfway between 1 (even mantissa) and 1 + 2^-10.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above the halfway point rounds up.
  EXPECT_EQ(f32_to_f16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  // 65520 is halfway between 65504 and 65536 (which overflows): even goes to infinity.
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
}

TEST(SupportDType, HalfSubnormals) {
  const float tiny = std::ldexp(1.0f, -24);  // smallest half subnormal
  EXPECT_EQ(f32_to_f16(tiny), 0x0001);
  EXPECT_EQ(f16_to_f32(0x0001), tiny);
  EXPECT_EQ(f16_to_f32(0x03FF), 1023 * tiny);  // largest subnormal
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  // Halfway between 0 and the smallest subnormal: ties to even gives zero.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  // 3 * 2^-25 is halfway between subnormals 1 and 2: goes to the even one.
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(5 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(-tiny), 0x8001);
}

TEST(SupportDType, HalfRoundTripsEveryPattern) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
    if (is_nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
    } else {
      EXPECT_EQ(f32_to_f16(f), h) << h;
    }
  }
}

TEST(SupportDType, BFloat16EncodesAndRounds) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  // 1 + 2^-8 is halfway between 1 (even) and 1 + 2^-7.
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(f32_to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3F81);
  // The largest finite float rounds up to infinity.
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  uint16_t nan = f32_to_bf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16_to_f32(nan)));
  // A NaN whose payload lives only in the low bits must not become infinity.
  float low_nan;
  uint32_t low_nan_bits = 0x7F800001u;
  std::memcpy(&low_nan, &low_nan_bits, 4);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(low_nan))));
}

TEST(SupportDType, BFloat16SubnormalsAndRoundTrip) {
  // bf16 keeps f32's exponent range: the smallest f32 subnormal with only high bits is exact.
  float sub = std::ldexp(1.0f, -133);
  EXPECT_EQ(bits_of(sub), 0x00010000u);
  EXPECT_EQ(f32_to_bf16(sub), 0x0001);
  EXPECT_EQ(bf16_to_f32(0x0001), sub);
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_bf16(f), h) << h;
  }
}

TEST(SupportDType, RoundToFloatType) {
  EXPECT_EQ(round_to_float_type(0.1, DType::F64), 0.1);
  EXPECT_EQ(round_to_float_type(0.1, DType::F32), static_cast<double>(0.1f));
  EXPECT_EQ(round_to_float_type(0.1, DType::F16), 0.0999755859375);  // 1638 * 2^-14
  EXPECT_EQ(round_to_float_type(0.1, DType::BF16), 0.10009765625);   // 205 * 2^-11
}

TEST(SupportScalar, IntegerArithmeticWraps) {
  EXPECT_EQ(eval_binary(BinaryOp::Add, i8(127), i8(1)).i, -128);
  EXPECT_EQ(eval_binary(BinaryOp::Sub, i8(-128), i8(1)).i, 127);
  EXPECT_EQ(eval_binary(BinaryOp::Add, u8(250), u8(10)).u, 4u);
  EXPECT_EQ(eval_binary(BinaryOp::Sub, u8(0), u8(1)).u, 255u);
  EXPECT_EQ(eval_binary(BinaryOp::Mul, i32(65536), i32(65536)).i, 0);
  EXPECT_EQ(eval_binary(BinaryOp::Add, i64(std::numeric_limits<int64_t>::max()), i64(1)).i,
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(eval_unary(UnaryOp::Neg, i8(-128)).i, -128);
  EXPECT_EQ(Scalar::of_int(300, DType::U8).u, 44u);
  EXPECT_EQ(Scalar::of_int(-1, DType::U16).u, 65535u);
}

TEST(SupportScalar, IntegerDivisionTruncatesTowardZero) {
  EXPECT_EQ(eval_binary(BinaryOp::Div, i32(-7), i32(2)).i, -3);
  EXPECT_EQ(eval_binary(BinaryOp::Mod, i32(-7), i32(2)).i, -1);
  EXPECT_EQ(eval_binary(BinaryOp::Div, u8(200), u8(7)).u, 28u);
  // The one signed quotient that overflows wraps instead of trapping.
  EXPECT_EQ(eval_binary(BinaryOp::Div, i32(std::numeric_limits<int32_t>::min()), i32(-1)).i,
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(eval_binary(BinaryOp::Mod, i64(std::numeric_limits<int64_t>::min()), i64(-1)).i, 0);
}

TEST(SupportScalar, IntegerDivisionByZeroIsAnError) {
  EXPECT_THROW(eval_binary(BinaryOp::Div, i32(1), i32(0)), ScalarError);
  EXPECT_THROW(eval_binary(BinaryOp::Mod, u8(1), u8(0)), ScalarError);
  try {
    eval_binary(BinaryOp::Div, i64(5), i64(0));
    FAIL() << "expected ScalarError";
  } catch (const ScalarError& e) {
    EXPECT_STREQ(e.message, "integer division by zero");
  }
  // Float division by zero is IEEE, not an error.
  EXPECT_TRUE(std::isinf(eval_binary(BinaryOp::Div, f32(1), f32(0)).f));
}

TEST(SupportScalar, IntegerPower) {
  EXPECT_EQ(eval_binary(BinaryOp::Pow, i32(2), i32(10)).i, 1024);
  EXPECT_EQ(eval_binary(BinaryOp::Pow, i32(-1), i32(-3)).i, -1);
  EXPECT_EQ(eval_binary(BinaryOp::Pow, i32(1), i32(-5)).i, 1);
  EXPECT_THROW(eval_binary(BinaryOp::Pow, i32(2), i32(-1)), ScalarError);
  uint64_t expected = 1;  // 3^40 wraps modulo 2^64
  for (int k = 0; k < 40; ++k) expected *= 3;
  EXPECT_EQ(static_cast<uint64_t>(eval_binary(BinaryOp::Pow, i64(3), i64(40)).i), expected);
}

TEST(SupportScalar, FloatResultsRoundToTheirDType) {
  Scalar third = eval_binary(BinaryOp::Div, f32(1), f32(3));
  EXPECT_EQ(third.dtype, DType::F32);
  EXPECT_EQ(third.f, static_cast<double>(1.0f / 3.0f));
  Scalar h = eval_binary(BinaryOp::Add, Scalar::of_float(2048, DType::F16), Scalar::of_float(1, DType::F16));
  EXPECT_EQ(h.f, 2048.0);  // 2049 is not a half; ties to even
}

TEST(SupportScalar, ComparisonsGiveBool) {
  Scalar lt = eval_binary(BinaryOp::Lt, i32(-1), i32(2));
  EXPECT_EQ(lt.dtype, DType::Bool);
  EXPECT_TRUE(lt.truthy());
  EXPECT_FALSE(eval_binary(BinaryOp::Eq, f64(kNaN), f64(kNaN)).truthy());
  EXPECT_TRUE(eval_binary(BinaryOp::Ne, f64(kNaN), f64(kNaN)).truthy());
  // Unsigned values compare as unsigned.
  EXPECT_TRUE(eval_binary(BinaryOp::Gt, Scalar::of_uint(~uint64_t{0}), Scalar::of_uint(1)).truthy());
  EXPECT_TRUE(eval_binary(BinaryOp::And, i32(2), i32(3)).truthy());
  EXPECT_FALSE(eval_binary(BinaryOp::Or, f32(0), f32(0)).truthy());
}

TEST(SupportScalar, MinMaxPropagateNaN) {
  EXPECT_TRUE(std::isnan(eval_binary(BinaryOp::Min, f64(kNaN), f64(1)).f));
  EXPECT_TRUE(std::isnan(eval_binary(BinaryOp::Min, f64(1), f64(kNaN)).f));
  EXPECT_TRUE(std::isnan(eval_binary(BinaryOp::Max, f32(kNaN), f32(1)).f));
  EXPECT_TRUE(std::isnan(reduce_combine(ReduceOp::Max, f32(3), f32(kNaN)).f));
  EXPECT_TRUE(std::isnan(reduce_combine(ReduceOp::Min, f32(kNaN), f32(3)).f));
  EXPECT_TRUE(std::signbit(eval_binary(BinaryOp::Min, f64(0.0), f64(-0.0)).f));
  EXPECT_FALSE(std::signbit(eval_binary(BinaryOp::Max, f64(-0.0), f64(0.0)).f));
  EXPECT_EQ(eval_binary(BinaryOp::Min, i8(-3), i8(2)).i, -3);
}

TEST(SupportScalar, ArgBetterKeepsFirstOccurrenceAndPrefersNaN) {
  EXPECT_FALSE(arg_better(ReduceOp::ArgMax, f32(3), f32(3)));
  EXPECT_TRUE(arg_better(ReduceOp::ArgMax, f32(3), f32(4)));
  EXPECT_FALSE(arg_better(ReduceOp::ArgMin, f32(3), f32(4)));
  EXPECT_TRUE(arg_better(ReduceOp::ArgMin, f32(3), f32(-4)));
  EXPECT_TRUE(arg_better(ReduceOp::ArgMax, f32(3), f32(kNaN)));
  EXPECT_TRUE(arg_better(ReduceOp::ArgMin, f32(3), f32(kNaN)));
  EXPECT_FALSE(arg_better(ReduceOp::ArgMax, f32(kNaN), f32(kNaN)));
  EXPECT_FALSE(arg_better(ReduceOp::ArgMax, f32(kNaN), f32(100)));
  EXPECT_TRUE(arg_better(ReduceOp::ArgMax, u8(1), u8(200)));
  EXPECT_FALSE(arg_better(ReduceOp::ArgMin, i32(-5), i32(-5)));
}

TEST(SupportScalar, ReduceIdentities) {
  EXPECT_EQ(reduce_identity(ReduceOp::Min, DType::I8).i, 127);
  EXPECT_EQ(reduce_identity(ReduceOp::Max, DType::I8).i, -128);
  EXPECT_EQ(reduce_identity(ReduceOp::Min, DType::U16).u, 65535u);
  EXPECT_EQ(reduce_identity(ReduceOp::Max, DType::U16).u, 0u);
  EXPECT_EQ(reduce_identity(ReduceOp::Min, DType::I64).i, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(reduce_identity(ReduceOp::Sum, DType::F32).f, 0.0);
  EXPECT_EQ(reduce_identity(ReduceOp::Product, DType::I32).i, 1);
  EXPECT_TRUE(std::isinf(reduce_identity(ReduceOp::Min, DType::F16).f));
}

TEST(SupportScalar, ConversionsTruncateAndSaturate) {
  EXPECT_EQ(Scalar::from_double(-1.7, DType::I32).i, -1);
  EXPECT_EQ(Scalar::from_double(300.0, DType::U8).u, 255u);
  EXPECT_EQ(Scalar::from_double(-5.0, DType::U8).u, 0u);
  EXPECT_EQ(Scalar::from_double(1e30, DType::I64).i, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Scalar::from_double(-1e30, DType::I8).i, -128);
  EXPECT_EQ(Scalar::from_double(kNaN, DType::I32).i, 0);
  EXPECT_TRUE(Scalar::from_double(kNaN, DType::Bool).truthy());
  EXPECT_EQ(cast(i32(-1), DType::U8).u, 255u);
  EXPECT_EQ(cast(Scalar::of_uint(~uint64_t{0}), DType::F32).f, 18446744073709551616.0);
  EXPECT_EQ(cast(f32(2.5), DType::Bool).i, 1);
  EXPECT_EQ(cast(Scalar::of_bool(true), DType::F64).f, 1.0);
  EXPECT_EQ(f32(-2.9).as_int64(), -2);
}

TEST(SupportScalar, MathFunctions) {
  std::vector<Scalar> four = {f32(4)};
  EXPECT_EQ(eval_math(MathFn::Sqrt, four).f, 2.0);
  EXPECT_EQ(eval_math(MathFn::Sqrt, four).dtype, DType::F32);
  std::vector<Scalar> int_arg = {i32(9)};
  Scalar r = eval_math(MathFn::Sqrt, int_arg);
  EXPECT_EQ(r.dtype, DType::F64);  // callers pick the float type for integer inputs
  EXPECT_EQ(r.f, 3.0);
  std::vector<Scalar> most_negative = {i8(-128)};
  EXPECT_EQ(eval_math(MathFn::Abs, most_negative).i, -128);
  std::vector<Scalar> half = {f64(2.5)};
  EXPECT_EQ(eval_math(MathFn::Round, half).f, 2.0);
  std::vector<Scalar> clamp_args = {i32(15), i32(0), i32(10)};
  EXPECT_EQ(eval_math(MathFn::Clamp, clamp_args).i, 10);
  std::vector<Scalar> relu_nan = {f32(kNaN)};
  EXPECT_TRUE(std::isnan(eval_math(MathFn::Relu, relu_nan).f));
  EXPECT_EQ(math_fn_arity(MathFn::Clamp), 3);
  // fma rounds a * b + c once: the low bits a product rounded on its own loses stay.
  std::vector<Scalar> fma32 = {f32(1 + std::ldexp(1.0, -12)), f32(1 + std::ldexp(1.0, -12)), f32(-1)};
  EXPECT_EQ(eval_math(MathFn::Fma, fma32).f, std::ldexp(1.0, -11) + std::ldexp(1.0, -24));
  EXPECT_EQ(eval_math(MathFn::Fma, fma32).dtype, DType::F32);
  std::vector<Scalar> fma64 = {f64(1 + std::ldexp(1.0, -30)), f64(1 + std::ldexp(1.0, -30)), f64(-1)};
  EXPECT_EQ(eval_math(MathFn::Fma, fma64).f, std::ldexp(1.0, -29) + std::ldexp(1.0, -60));
  EXPECT_EQ(parse_math_fn("fma"), MathFn::Fma);
  EXPECT_EQ(math_fn_arity(MathFn::Fma), 3);
  EXPECT_TRUE(math_fn_keeps_int(MathFn::Abs));
  EXPECT_FALSE(math_fn_keeps_int(MathFn::Exp));
  EXPECT_EQ(parse_math_fn("gelu_tanh"), MathFn::GeluTanh);
}

TEST(SupportScalar, StrIsShortestRoundTrip) {
  EXPECT_EQ(f32(0.1).str(), "0.1");
  EXPECT_EQ(f64(0.1).str(), "0.1");
  EXPECT_EQ(f32(1.0).str(), "1.0");
  EXPECT_EQ(f64(-2.5).str(), "-2.5");
  EXPECT_EQ(f64(1e20).str(), "1e+20");
  EXPECT_EQ(Scalar::of_float(0.1, DType::F16).str(), "0.1");
  EXPECT_EQ(f64(kNaN).str(), "nan");
  EXPECT_EQ(f32(-std::numeric_limits<double>::infinity()).str(), "-inf");
  EXPECT_EQ(Scalar::of_bool(true).str(), "true");
  EXPECT_EQ(i64(std::numeric_limits<int64_t>::min()).str(), "-9223372036854775808");
  EXPECT_EQ(Scalar::of_uint(~uint64_t{0}).str(), "18446744073709551615");
  // Every value reads back to itself in its dtype.
  const DType types[] = {DType::F16, DType::BF16, DType::F32, DType::F64};
  uint64_t state = 12345;
  for (DType t : types)
    for (int k = 0; k < 500; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      double v = std::ldexp(static_cast<double>(state >> 11), -53 + static_cast<int>(state % 40) - 20);
      if (k % 2) v = -v;
      Scalar s = Scalar::of_float(v, t);
      double back = std::strtod(s.str().c_str(), nullptr);
      EXPECT_EQ(round_to_float_type(back, t), s.f) << s.str() << " " << dtype_name(t);
    }
}

}  // namespace
}  // namespace zyntax
