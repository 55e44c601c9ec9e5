#include "support/dtype.hpp"

#include <cmath>
#include <cstring>
#include <string>

namespace zyntax {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F64: case DType::I64: case DType::U64: return 8;
    case DType::I8: case DType::U8: case DType::Bool: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  static const char* kNames[] = {"f16", "bf16", "f32", "f64", "i8", "i16", "i32",
                                 "i64", "u8",  "u16",  "u32", "u64", "bool"};
  return kNames[static_cast<int>(t)];
}

std::optional<DType> parse_dtype(std::string_view name) {
  struct Alias { const char* name; DType t; };
  static const Alias kAliases[] = {
      {"f16", DType::F16},     {"float16", DType::F16}, {"half", DType::F16},
      {"bf16", DType::BF16},   {"bfloat16", DType::BF16},
      {"f32", DType::F32},     {"float32", DType::F32},
      {"f64", DType::F64},     {"float64", DType::F64}, {"double", DType::F64},
      {"i8", DType::I8},       {"int8", DType::I8},     {"i16", DType::I16}, {"int16", DType::I16},
      {"i32", DType::I32},     {"int32", DType::I32},   {"i64", DType::I64}, {"int64", DType::I64},
      {"u8", DType::U8},       {"uint8", DType::U8},    {"u16", DType::U16}, {"uint16", DType::U16},
      {"u32", DType::U32},     {"uint32", DType::U32},  {"u64", DType::U64}, {"uint64", DType::U64},
      {"bool", DType::Bool},
  };
  for (const Alias& a : kAliases)
    if (name == a.name) return a.t;
  return std::nullopt;
}

int int_bits(DType t) { return is_int(t) ? static_cast<int>(dtype_size(t)) * 8 : 0; }

static int float_rank(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: return 1;
    case DType::F32: return 2;
    case DType::F64: return 3;
    default: return 0;
  }
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (is_bool(a)) return b;
  if (is_bool(b)) return a;
  if (is_float(a) || is_float(b)) {
    if (!is_float(a)) return b;
    if (!is_float(b)) return a;
    int ra = float_rank(a), rb = float_rank(b);
    if (ra == rb) return DType::F32;  // f16 with bf16
    return ra > rb ? a : b;
  }
  int ba = int_bits(a), bb = int_bits(b);
  if (is_signed_int(a) == is_signed_int(b)) return ba >= bb ? a : b;
  // Mixed signedness: a signed type wide enough for both, i64 at most.
  DType s = is_signed_int(a) ? a : b;
  DType u = is_signed_int(a) ? b : a;
  int bs = int_bits(s), bu = int_bits(u);
  if (bs > bu) return s;
  if (bu >= 64) return DType::I64;
  int want = bu * 2;
  return want <= 16 ? DType::I16 : want <= 32 ? DType::I32 : DType::I64;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; man <<= 1; } while ((man & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t e = abs >> 23;
    uint32_t m = (abs & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14 + (113 - e)... total shift to 10-bit mantissa
    uint32_t half = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t e = (abs >> 23) - 127 + 15;
  uint32_t m = abs & 0x7FFFFFu;
  uint32_t half = e << 10 | m >> 13;
  uint32_t rem = m & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet nan
  uint32_t rounding = 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float round_to_tf32(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7F800000u) != 0x7F800000u) x = (x + 0x1000u) & 0xFFFFE000u;  // inf and nan stay
  std::memcpy(&f, &x, 4);
  return f;
}

double round_to_float_type(double v, DType t) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return static_cast<double>(static_cast<float>(v));
    case DType::F16: return f16_to_f32(f32_to_f16(static_cast<float>(v)));
    case DType::BF16: return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
    default: return v;
  }
}

}  // namespace zyntax
