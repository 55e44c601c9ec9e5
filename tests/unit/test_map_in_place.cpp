// map_in_place: an element-wise map written over the tile it maps when
// nothing reads that tile afterwards, every element getting exactly the
// value it had; not where the tile is read again, the map reads other
// elements of it, or its extents differ. (Flash attention's
// p = exp(S - m_new) written over S is checked against the reference,
// scheduled for the GPU, in test_schedule_gpu_tiles.)
#include <gtest/gtest.h>

#include "cir/passes/fuse_product_epilogues.hpp"
#include "cir/passes/map_in_place.hpp"
#include "scalarized_tiles.hpp"

namespace zyntax {
namespace {

// The kernel with its maps written in place (after the GPU plan's fusion),
// printed, once the reference has given it exactly the result it gave before.
std::string in_place_text(const std::string& body, int64_t n, int64_t m, int64_t d) {
  cir::Kernel fused = cir::fuse_product_epilogues(testing::scalarized_tiles(body, n, m, d));
  return testing::checked_text(fused, cir::map_in_place(fused));
}

TEST(MapInPlace, SoftmaxNumeratorsOverTheScores) {
  // S is read for its row maxima and then only by p's map: p takes S's
  // elements. (With one column p is the row maxima's map, fused with them.)
  std::string body = "   let S = A[h] @ transpose(B[h])\n   let p = exp(S - row_max(S))\n   out[h] = p / row_sum(p)";
  for (auto [n, m] : {std::pair<int64_t, int64_t>{2, 2}, {5, 7}, {16, 3}, {1, 9}}) {
    std::string text = in_place_text(body, n, m, 4);
    EXPECT_EQ(text.find("local p:"), std::string::npos) << text;
    EXPECT_NE(text.find("      S[pi%"), std::string::npos) << text;
    EXPECT_NE(text.find("= exp(S["), std::string::npos) << text;
  }
}

TEST(MapInPlace, ATileReadAgainKeepsItsElements) {
  std::string text = in_place_text("   let S = A[h] @ transpose(B[h])\n   let p = exp(S - row_max(S))\n   out[h] = p + S", 4, 6, 3);
  EXPECT_NE(text.find("local p:"), std::string::npos) << text;
}

TEST(MapInPlace, AMapOverOtherElementsGetsAnArrayOfItsOwn) {
  // S[i, j] - S[j, i]: written in place, S[j, i] could already be overwritten.
  std::string text = in_place_text("   let S = A[h] @ transpose(A[h])\n   let s = row_max(S)\n   let p = S - transpose(S) + s\n   out[h] = p", 5, 2, 3);
  EXPECT_NE(text.find("local p:"), std::string::npos) << text;
}

TEST(MapInPlace, ABroadcastSourceIsNotWrittenOver) {
  // r is [n, 1]; the map is [n, m]: r's elements cannot hold it.
  std::string text = in_place_text("   let S = A[h] @ transpose(B[h])\n   let r = row_max(S) * 2.0\n   let p = exp(S - r) + S\n   out[h] = p + S", 4, 6, 3);
  EXPECT_NE(text.find("local p:"), std::string::npos) << text;
}

}  // namespace
}  // namespace zyntax
