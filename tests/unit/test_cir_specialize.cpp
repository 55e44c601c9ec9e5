// Specialising kernels on concrete sizes, substitution, and the kernel hash
// that caches key on.
#include <gtest/gtest.h>

#include <stdexcept>

#include "cir/hash.hpp"
#include "cir/passes/specialize.hpp"
#include "cir/printer.hpp"
#include "cir/substitute.hpp"
#include "support/diagnostics.hpp"
#include "test_cir_kernels.hpp"

namespace zyntax::cir {
namespace {

using namespace fixtures;

TEST(CirSpecialize, MatMulGetsConstantShapes) {
  Kernel k = specialize(matmul_kernel(), {{"M", 3}, {"K", 5}, {"N", 7}});
  EXPECT_TRUE(k.dims.empty());
  EXPECT_EQ(print(k),
            "kernel C: matmul\n"
            "  in A: tensor[3, 5, f32]\n"
            "  in B: tensor[5, 7, f32]\n"
            "  out out: tensor[3, 7, f32]\n"
            "{\n"
            "  parallel for i in 0..3 {\n"
            "    for j in 0..7 {\n"
            "      var sum: f32 = 0.0\n"
            "      for k in 0..5 {\n"
            "        sum = sum + A[i, k] * B[k, j]\n"
            "      }\n"
            "      out[i, j] = sum\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(CirSpecialize, NodeTypesAreSpecialisedToo) {
  Kernel k = specialize(flash_attention_kernel(), {{"B", 2}, {"H", 4}, {"S", 512}, {"D", 64}});
  std::string text = print(k);
  for (const char* d : {"\n  dims", "B", "H", "S", "D"})
    EXPECT_EQ(text.find(d), std::string::npos) << d << " in\n" << text;
  EXPECT_NE(text.find("let kt: tensor[min(kv + 64, 512) - kv, 64, f32] = K[b, h, kv:kv + 64]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("in Q: tensor[2, 4, 512, 64, f32]"), std::string::npos) << text;
}

TEST(CirSpecialize, EmptyLoopsVanish) {
  Kernel k = specialize(matmul_kernel(), {{"M", 0}, {"K", 5}, {"N", 7}});
  EXPECT_TRUE(k.body.empty()) << print(k);
}

TEST(CirSpecialize, MissingOrNegativeSizesAreRejected) {
  EXPECT_THROW(specialize(matmul_kernel(), {{"M", 3}, {"K", 5}}), std::invalid_argument);
  // A negative size of a tensor is the program's error (host values may be
  // negative where they size nothing).
  EXPECT_THROW(specialize(matmul_kernel(), {{"M", 3}, {"K", -1}, {"N", 7}}), Error);
}

TEST(CirSpecialize, HashFollowsThePrintedForm) {
  auto sized = [](int64_t m, int64_t k, int64_t n) {
    return hash_kernel(specialize(matmul_kernel(), {{"M", m}, {"K", k}, {"N", n}}));
  };
  EXPECT_EQ(sized(3, 5, 7), sized(3, 5, 7));
  EXPECT_NE(sized(3, 5, 7), sized(3, 5, 8));
  EXPECT_NE(sized(3, 5, 7), sized(7, 5, 3));
  EXPECT_NE(sized(3, 5, 7), hash_kernel(matmul_kernel()));
  EXPECT_EQ(hash_kernel(matmul_kernel()), hash_kernel(matmul_kernel()));
}

TEST(CirSpecialize, HashHex) {
  EXPECT_EQ(hash_hex(0), "0000000000000000");
  EXPECT_EQ(hash_hex(0x0123456789abcdefull), "0123456789abcdef");
  EXPECT_EQ(hash_hex(~0ull), "ffffffffffffffff");
  EXPECT_EQ(hash_hex(hash_kernel(matmul_kernel())).size(), 16u);
  // FNV-1a of the empty string is the offset basis: a kernel always prints something.
  EXPECT_NE(hash_kernel(Kernel{}), 0xcbf29ce484222325ull);
}

TEST(CirSubstitute, ReplacesNamesInExpressionsAndTypes) {
  Expr n = var("n");
  Expr e = make_access("A", tensor({n, n}), {at(var("i")), AxisSel::slice(var("i"), {})}) * f32(2.0);
  Expr r = substitute(e, {{"i", i64(3)}, {"n", var("m")}});
  EXPECT_EQ(print(r), "A[3, 3:] * 2.0");
  EXPECT_EQ(print(r->type), "tensor[m - 3, f32]");
  EXPECT_EQ(print(substitute(tensor({n * i64(2)}), {{"n", i64(4)}})), "tensor[4 * 2, f32]");
  // Untouched expressions come back as they were.
  Expr other = var("j") + i64(1);
  EXPECT_TRUE(substitute(other, {{"i", i64(3)}}).same_as(other));
}

TEST(CirSubstitute, ReachesDeclAndAllocateTypes) {
  Block b = {make_decl("t", tensor({var("n")}), {}),
             make_allocate("up", tensor({var("n"), i64(2)}), MemorySpace::Local)};
  EXPECT_EQ(print(substitute(b, {{"n", i64(8)}})), "var t: tensor[8, f32]\nlocal up: tensor[8, 2, f32]\n");
}

}  // namespace
}  // namespace zyntax::cir
