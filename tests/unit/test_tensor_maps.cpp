// Tensor maps for Hopper's tensor copies, without a GPU: which factors a
// kernel's entry takes maps for (kernel_abi's tensor_map_params), each
// factor's box, and the arguments the cuda backend gives
// cuTensorMapEncodeTiled (extents, byte strides, box, element type,
// swizzle) for factors read depth first and side first, with a batch axis.
#include <gtest/gtest.h>

#include "backends/cuda/tensor_maps.hpp"
#include "cir/ir.hpp"
#include "codegen/llvm/kernel_abi.hpp"

namespace zyntax {
namespace {

cir::ProductOperand operand(std::string buffer, DType dtype, bool k_major, std::array<int64_t, 3> dims, std::array<int64_t, 2> strides,
                            int rank = 3) {
  cir::ProductOperand o;
  o.buffer = std::move(buffer);
  o.dtype = dtype;
  o.k_major = k_major;
  o.rank = rank;
  o.dims = dims;
  o.strides = strides;
  return o;
}

TEST(TensorMaps, BoxesAreTheDepthStepByTheSideOrOneSwizzleRowByTheDepthStep) {
  cir::ProductOperand k_major = operand("a", DType::BF16, true, {512, 1000, 4}, {512, 512 * 1000});
  EXPECT_EQ(codegen::product_operand_box(k_major, 128, 64), (std::array<uint32_t, 3>{64, 128, 1}));
  // Side first: 128 bytes of side indices per copy, whatever the tile's side.
  cir::ProductOperand bf16 = operand("b", DType::BF16, false, {768, 320, 2}, {768, 768 * 320});
  EXPECT_EQ(codegen::product_operand_box(bf16, 256, 64), (std::array<uint32_t, 3>{64, 64, 1}));
  cir::ProductOperand f32 = operand("b", DType::F32, false, {768, 320, 2}, {768, 768 * 320});
  EXPECT_EQ(codegen::product_operand_box(f32, 256, 32), (std::array<uint32_t, 3>{32, 32, 1}));
}

TEST(TensorMaps, KMajorFactorEncodesDepthFirstWithItsBatch) {
  // a: [4 batches][1000 rows][512 depth] bf16, depth contiguous.
  codegen::TensorMapParam p{operand("a", DType::BF16, true, {512, 1000, 4}, {512, 512 * 1000}), {64, 128, 1}};
  cuda::TensorMapEncoding e = cuda::tensor_map_encoding(p);
  EXPECT_EQ(e.data_type, cuda::kTensorMapBfloat16);
  EXPECT_EQ(e.data_type, 9);
  EXPECT_EQ(e.rank, 3u);
  EXPECT_EQ(e.dims, (std::array<cuda::cuuint64_t, 3>{512, 1000, 4}));
  EXPECT_EQ(e.strides, (std::array<cuda::cuuint64_t, 2>{1024, 1024 * 1000}));
  EXPECT_EQ(e.box, (std::array<cuda::cuuint32_t, 3>{64, 128, 1}));
  EXPECT_EQ(e.element_strides, (std::array<cuda::cuuint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(e.interleave, 0);
  EXPECT_EQ(e.swizzle, cuda::kTensorMapSwizzle128B);
  EXPECT_EQ(e.swizzle, 3);
  EXPECT_EQ(e.l2_promotion, cuda::kTensorMapL2Promotion256B);
  EXPECT_EQ(e.l2_promotion, 3);
  EXPECT_EQ(e.oob_fill, 0);  // zeros past the edges
  EXPECT_EQ(cuda::tensor_map_problem(e, 0x7f0000001000), "");
  std::string d = cuda::describe_tensor_map(p, e);
  EXPECT_NE(d.find("'a'"), std::string::npos) << d;
  EXPECT_NE(d.find("512 x 1000 x 4"), std::string::npos) << d;
  EXPECT_NE(d.find("1024 B, 1024000 B"), std::string::npos) << d;
}

TEST(TensorMaps, MnMajorFactorEncodesTheSideFirst) {
  // b: [2 batches][320 depth][768 columns] f16, columns contiguous.
  cir::ProductOperand o = operand("w", DType::F16, false, {768, 320, 2}, {768, 768 * 320});
  codegen::TensorMapParam p{o, codegen::product_operand_box(o, 256, 64)};
  cuda::TensorMapEncoding e = cuda::tensor_map_encoding(p);
  EXPECT_EQ(e.data_type, cuda::kTensorMapFloat16);
  EXPECT_EQ(e.data_type, 6);
  EXPECT_EQ(e.rank, 3u);
  EXPECT_EQ(e.dims, (std::array<cuda::cuuint64_t, 3>{768, 320, 2}));
  EXPECT_EQ(e.strides, (std::array<cuda::cuuint64_t, 2>{1536, 1536 * 320}));
  EXPECT_EQ(e.box, (std::array<cuda::cuuint32_t, 3>{64, 64, 1}));
  EXPECT_EQ(cuda::tensor_map_problem(e, 0x7f0000001000), "");
}

TEST(TensorMaps, F32FactorsKeepTheirBytesAndRankTwoHasOneStride) {
  // f32 as FLOAT32: the copy moves the bytes; TF32 rounding is the matrix units' own.
  cir::ProductOperand o = operand("x", DType::F32, true, {256, 300, 1}, {256, 0}, /*rank=*/2);
  codegen::TensorMapParam p{o, codegen::product_operand_box(o, 128, 32)};
  cuda::TensorMapEncoding e = cuda::tensor_map_encoding(p);
  EXPECT_EQ(e.data_type, cuda::kTensorMapFloat32);
  EXPECT_EQ(e.data_type, 7);
  EXPECT_EQ(e.rank, 2u);
  EXPECT_EQ(e.dims[0], 256u);
  EXPECT_EQ(e.dims[1], 300u);
  EXPECT_EQ(e.strides[0], 1024u);
  EXPECT_EQ(e.box[0], 32u);
  EXPECT_EQ(e.box[1], 128u);
  EXPECT_EQ(cuda::tensor_map_problem(e, 0x7f0000001000), "");
}

TEST(TensorMaps, ProblemsTheDriverWouldRefuseAreNamed) {
  // A depth of 100 bf16: rows 200 bytes apart, not a multiple of 16.
  codegen::TensorMapParam odd{operand("a", DType::BF16, true, {100, 64, 1}, {100, 0}, 2), {64, 64, 1}};
  EXPECT_NE(cuda::tensor_map_problem(cuda::tensor_map_encoding(odd), 0x1000).find("stride 200 B"), std::string::npos);
  // A box's first axis past the 128-byte swizzle.
  codegen::TensorMapParam wide{operand("a", DType::BF16, true, {512, 64, 1}, {512, 0}, 2), {128, 64, 1}};
  EXPECT_NE(cuda::tensor_map_problem(cuda::tensor_map_encoding(wide), 0x1000).find("swizzle"), std::string::npos);
  // An address off 16 bytes.
  codegen::TensorMapParam fine{operand("a", DType::BF16, true, {512, 64, 1}, {512, 0}, 2), {64, 64, 1}};
  EXPECT_NE(cuda::tensor_map_problem(cuda::tensor_map_encoding(fine), 0x1008).find("multiple of 16"), std::string::npos);
}

TEST(TensorMaps, AnEntryTakesAMapPerFactorOfEachProductInOrder) {
  cir::WarpgroupProduct p1({});
  p1.a = operand("x", DType::BF16, true, {512, 1000, 1}, {512, 0}, 2);
  p1.b = operand("w", DType::BF16, false, {768, 512, 1}, {768, 0}, 2);
  p1.tile_rows = 128;
  p1.tile_cols = 256;
  p1.tile_depth = 64;
  p1.first_tile = cir::i64(0);
  p1.tile_stride = cir::i64(132);
  cir::WarpgroupProduct p2 = p1;
  p2.a.buffer = "y";
  p2.b = operand("v", DType::BF16, true, {512, 768, 1}, {512, 0}, 2);
  p2.tile_cols = 128;
  cir::Kernel k;
  k.body = {cir::make_warpgroup_product(p1), cir::make_warpgroup_product(p2)};
  std::vector<codegen::TensorMapParam> maps = codegen::tensor_map_params(k);
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(maps[0].operand.buffer, "x");
  EXPECT_EQ(maps[0].box, (std::array<uint32_t, 3>{64, 128, 1}));
  EXPECT_EQ(maps[1].operand.buffer, "w");
  EXPECT_EQ(maps[1].box, (std::array<uint32_t, 3>{64, 64, 1}));
  EXPECT_EQ(maps[2].operand.buffer, "y");
  EXPECT_EQ(maps[3].operand.buffer, "v");
  EXPECT_EQ(maps[3].box, (std::array<uint32_t, 3>{64, 128, 1}));
  EXPECT_TRUE(codegen::tensor_map_params(cir::Kernel{}).empty());
}

}  // namespace
}  // namespace zyntax
