// support/nearest_name: the "did you mean" of every diagnostic.
#include <gtest/gtest.h>

#include "support/nearest_name.hpp"

namespace zyntax {
namespace {

TEST(SupportNearestName, EditsCountOneEach) {
  EXPECT_EQ(edit_distance("softmax", "softmax"), 0u);
  EXPECT_EQ(edit_distance("sofmax", "softmax"), 1u);   // a letter left out
  EXPECT_EQ(edit_distance("softmaxx", "softmax"), 1u); // one too many
  EXPECT_EQ(edit_distance("softnax", "softmax"), 1u);  // one wrong
  EXPECT_EQ(edit_distance("gleu", "gelu"), 1u);        // two swapped
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);
  EXPECT_EQ(edit_distance("abc", "ca"), 3u);
}

TEST(SupportNearestName, OnlyNearEnoughNamesAreSuggested) {
  EXPECT_EQ(nearest_name("gleu", {"relu", "gelu", "silu"}), "gelu");
  EXPECT_EQ(nearest_name("layre_norm", {"layer_norm", "rms_norm"}), "layer_norm");
  EXPECT_EQ(nearest_name("x", {"y", "xx"}), "y");
  EXPECT_EQ(nearest_name("matmul", {"conv2d", "softmax"}), "");
}

}  // namespace
}  // namespace zyntax
