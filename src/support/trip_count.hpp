// How many times `for v in lo..hi step step` runs (step > 0), counted
// without overflow: (hi - lo - 1) / step + 1 in unsigned arithmetic, where
// hi - lo + step - 1 would leave 64 bits near +-2^63. Saturates at 2^63 - 1.
#pragma once

#include <cstdint>

namespace zyntax {

inline int64_t trip_count(int64_t lo, int64_t hi, int64_t step) {
  if (hi <= lo) return 0;
  uint64_t n = (static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) - 1) / static_cast<uint64_t>(step) + 1;
  return n > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(n);
}

}  // namespace zyntax
