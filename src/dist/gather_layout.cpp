#include "dist/gather_layout.hpp"

#include <cstring>
#include <numeric>

namespace zyntax::dist {

void interleave_blocks(const unsigned char* blocks, const std::vector<int64_t>& axis_sizes, int64_t outer,
                       int64_t inner_bytes, unsigned char* out) {
  int64_t total = std::accumulate(axis_sizes.begin(), axis_sizes.end(), int64_t{0});
  const unsigned char* block = blocks;
  int64_t before = 0;  // the rows of the ranks before this one, along the axis
  for (int64_t rows : axis_sizes) {
    int64_t run = rows * inner_bytes;  // one outer index's rows of this rank
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + (o * total + before) * inner_bytes, block + o * run, static_cast<size_t>(run));
    block += outer * run;
    before += rows;
  }
}

}  // namespace zyntax::dist
