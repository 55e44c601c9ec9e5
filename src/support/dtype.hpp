// Element types shared by the language, the CIR, the runtime and every backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace zyntax {

enum class DType : uint8_t { F16, BF16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, Bool };

constexpr int kDTypeCount = 13;

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "i64", "bool", ...
// Accepts the short names and the NumPy-style long ones ("float32", "int64", "bfloat16").
std::optional<DType> parse_dtype(std::string_view name);

inline bool is_float(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }
inline bool is_signed_int(DType t) { return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64; }
inline bool is_unsigned_int(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64; }
inline bool is_int(DType t) { return is_signed_int(t) || is_unsigned_int(t); }
inline bool is_bool(DType t) { return t == DType::Bool; }
// Bits of an integer type (0 for others).
int int_bits(DType t);

// The type both operands of a binary operation are converted to: floats beat
// integers, wider beats narrower, f16 with bf16 gives f32, signed with unsigned
// of the same width gives the next wider signed type (u64 with a signed type gives i64).
DType promote(DType a, DType b);

// IEEE half and bfloat16 conversions, round to nearest even.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
// A float rounded to TF32 (10 mantissa bits), to nearest with ties away from
// zero, as tensor cores read f32 factors (cvt.rna.tf32.f32).
float round_to_tf32(float f);

// Rounds a double to the nearest value representable in the float type `t`.
double round_to_float_type(double v, DType t);

}  // namespace zyntax
