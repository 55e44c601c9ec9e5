#include "dist/mean.hpp"

#include <cstring>
#include <type_traits>

#include "dist/dist_error.hpp"

namespace zyntax::dist {

namespace {

template <class T>
void divide(void* data, int64_t count, int ranks) {
  auto* p = static_cast<unsigned char*>(data);
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(static_cast<double>(v) / ranks);
    } else {
      v = static_cast<T>(v / static_cast<T>(ranks));
    }
    std::memcpy(p + i * sizeof(T), &v, sizeof(T));
  }
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void divide_half(void* data, int64_t count, int ranks) {
  auto* p = static_cast<unsigned char*>(data);
  for (int64_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    h = Store(static_cast<float>(static_cast<double>(Load(h)) / ranks));
    std::memcpy(p + 2 * i, &h, 2);
  }
}

}  // namespace

void divide_by_ranks(void* data, int64_t count, DType t, int ranks) {
  switch (t) {
    case DType::F16: return divide_half<f16_to_f32, f32_to_f16>(data, count, ranks);
    case DType::BF16: return divide_half<bf16_to_f32, f32_to_bf16>(data, count, ranks);
    case DType::F32: return divide<float>(data, count, ranks);
    case DType::F64: return divide<double>(data, count, ranks);
    case DType::I8: return divide<int8_t>(data, count, ranks);
    case DType::I16: return divide<int16_t>(data, count, ranks);
    case DType::I32: return divide<int32_t>(data, count, ranks);
    case DType::I64: return divide<int64_t>(data, count, ranks);
    case DType::U8: return divide<uint8_t>(data, count, ranks);
    case DType::U16: return divide<uint16_t>(data, count, ranks);
    case DType::U32: return divide<uint32_t>(data, count, ranks);
    case DType::U64: return divide<uint64_t>(data, count, ranks);
    case DType::Bool: break;
  }
  throw DistError("the mean of a bool tensor is not defined");
}

}  // namespace zyntax::dist
