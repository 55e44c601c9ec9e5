// How reduce_scatter splits n rows over the ranks: as evenly as possible,
// the first n % parts ranks taking one row more than the rest.
#pragma once

#include <algorithm>
#include <cstdint>

namespace zyntax::dist {

struct RowRange {
  int64_t begin = 0;
  int64_t count = 0;
};

inline RowRange row_split(int64_t n, int part, int parts) {
  int64_t base = n / parts, extra = n % parts;
  return {part * base + std::min<int64_t>(part, extra), base + (part < extra ? 1 : 0)};
}

}  // namespace zyntax::dist
