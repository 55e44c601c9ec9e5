// sink_tile_loads: a tile is allocated and filled just before its first
// reader, giving exactly the same results; not past a statement that
// writes what its fill reads. (Flash attention with its key and value
// blocks loaded at the top of the loop is checked against the reference,
// scheduled for the GPU, in test_schedule_gpu_tiles.)
#include <gtest/gtest.h>

#include "cir/passes/sink_tile_loads.hpp"
#include "scalarized_tiles.hpp"

namespace zyntax {
namespace {

// The kernel with its tile loads sunk, printed, once the reference has
// given it exactly the result it gave before.
std::string sunk_text(const std::string& body, int64_t n, int64_t m, int64_t d) {
  cir::Kernel loops = testing::scalarized_tiles(body, n, m, d);
  return testing::checked_text(loops, cir::sink_tile_loads(loops));
}

TEST(SinkTileLoads, ATileIsLoadedWhereItIsFirstRead) {
  // Vb is named first and read last: it is filled after the scores.
  std::string body = "   let Vb = B[h]\n   let S = A[h] @ transpose(A[h])\n   let p = exp(S - row_max(S))\n   out[h] = p @ transpose(Vb)";
  for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {16, 3}}) {
    std::string text = sunk_text(body, n, m, n);
    size_t vb = text.find("local Vb:"), s = text.find("local S:");
    ASSERT_NE(vb, std::string::npos) << text;
    ASSERT_NE(s, std::string::npos) << text;
    EXPECT_GT(vb, s) << text;
    EXPECT_GT(vb, text.find("exp(")) << "after the exponentials\n" << text;
  }
}

TEST(SinkTileLoads, NotPastAWriteOfWhatItReads) {
  // T copies o before o is updated (o's new value is computed into a
  // temporary, then copied back): T may move past the computing, which only
  // reads o, but not past the copy back.
  std::string body = "   var o = A[h] * 1.0\n   let T = o * 2.0\n   o = o + 1.0\n   out[h] = T + o";
  std::string text = sunk_text(body, 4, 2, 3);
  size_t t = text.find("local T:"), copy_back = text.find("] = onew%");
  ASSERT_NE(t, std::string::npos) << text;
  ASSERT_NE(copy_back, std::string::npos) << text;
  EXPECT_LT(t, copy_back) << text;
}

}  // namespace
}  // namespace zyntax
