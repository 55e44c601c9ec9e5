// fuse_product_epilogues: a tile product's element-wise map computed in the
// product's store, giving every element exactly the value the two nests
// gave; not where the product's array is read again or the map reads other
// elements of it. (Flash attention with its scores fused is checked
// against the reference, scheduled for the GPU, in test_schedule_gpu_tiles.)
#include <gtest/gtest.h>

#include "cir/passes/fuse_product_epilogues.hpp"
#include "scalarized_tiles.hpp"

namespace zyntax {
namespace {

// The kernel with its maps fused, printed, once the reference has given it
// exactly the unfused kernel's result on random inputs.
std::string fused_text(const std::string& body, int64_t n, int64_t m, int64_t d) {
  cir::Kernel loops = testing::scalarized_tiles(body, n, m, d);
  return testing::checked_text(loops, cir::fuse_product_epilogues(loops));
}

TEST(FuseProductEpilogues, AScaledProductIsStoredScaled) {
  std::string body = "   let S = A[h] @ transpose(B[h]) / sqrt(8.0)\n   out[h] = S * 2.0";
  for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {16, 3}, {1, 9}}) {
    std::string text = fused_text(body, n, m, 8);
    // The product's temporary is gone; its dot products store S divided.
    EXPECT_EQ(text.find("local mm%"), std::string::npos) << text;
    EXPECT_NE(text.find("      S[mm%"), std::string::npos) << text;
    EXPECT_NE(text.find("] = acc%"), std::string::npos) << text;
    EXPECT_NE(text.find(" / 2.828"), std::string::npos) << text;
  }
}

TEST(FuseProductEpilogues, MapsAfterMapsFuseInTurn) {
  // The copy into P, then S = P * 2: the dot products store S.
  std::string text = fused_text("   let P = A[h] @ transpose(B[h])\n   let S = P * 2.0\n   out[h] = S", 3, 5, 4);
  EXPECT_EQ(text.find("local mm%"), std::string::npos) << text;
  EXPECT_EQ(text.find("local P:"), std::string::npos) << text;
  EXPECT_NE(text.find("      S[mm%"), std::string::npos) << text;
}

TEST(FuseProductEpilogues, AProductReadAgainIsKept) {
  // `let P = A @ B` copies the product into P: that copy is fused, so the
  // dot products store P. P is then read by the map S and again after it:
  // S stays a map of its own.
  std::string text = fused_text("   let P = A[h] @ transpose(B[h])\n   let S = P * 2.0\n   out[h] = S + P", 4, 6, 3);
  EXPECT_EQ(text.find("local mm%"), std::string::npos) << text;
  EXPECT_NE(text.find("local P:"), std::string::npos) << text;
  EXPECT_NE(text.find("S[Si"), std::string::npos) << text;
}

TEST(FuseProductEpilogues, AMapOverOtherElementsIsKept) {
  // The map reads the product transposed: other elements than its own.
  std::string text = fused_text("   let P = A[h] @ transpose(A[h])\n   let T = P + transpose(P)\n   out[h] = T", 5, 2, 3);
  EXPECT_NE(text.find("local P:"), std::string::npos) << text;
  EXPECT_NE(text.find("T[Ti"), std::string::npos) << text;
}

// `o = a * o + P V` (flash attention's output): the product stores the new
// value into a temporary, and the copy back into o fuses too, since each
// element of o is read only where it is written.
TEST(FuseProductEpilogues, AnAccumulatorIsUpdatedInPlace) {
  std::string body = "   var o = zeros(n, n)\n   for r in 0..3:\n    o = o * 0.5 + A[h] @ transpose(A[h])\n   out[h] = o";
  for (int64_t n : {1, 4, 7}) {
    std::string text = fused_text(body, n, 2, 3);
    EXPECT_EQ(text.find("local onew%"), std::string::npos) << text;
    EXPECT_NE(text.find("      o[mm%"), std::string::npos) << text;
  }
}

TEST(FuseProductEpilogues, AnAccumulatorReadElsewhereIsNotUpdatedInPlace) {
  // o's new value reads o transposed: written in place, an element could be
  // read after it was overwritten, so the copy back stays.
  std::string text = fused_text("   var o = zeros(n, n)\n   for r in 0..3:\n    o = transpose(o) * 0.5 + A[h] @ transpose(A[h])\n   out[h] = o", 5, 2, 3);
  EXPECT_NE(text.find("local onew%"), std::string::npos) << text;
  EXPECT_NE(text.find("      onew%"), std::string::npos) << text;
  EXPECT_NE(text.find("o[oi%"), std::string::npos) << text;
}

}  // namespace
}  // namespace zyntax
