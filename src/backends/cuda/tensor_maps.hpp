// Tensor maps for Hopper's tensor copies: a kernel's factor
// (codegen::TensorMapParam, kernel_abi.hpp) at a device address encoded by
// the driver (cuTensorMapEncodeTiled) into the 128-byte value the kernel
// takes. The arguments are worked out apart from the driver call
// (tensor_map_encoding), so they can be checked without a GPU.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "backends/cuda/cuda_driver.hpp"
#include "codegen/llvm/kernel_abi.hpp"

namespace zyntax::cuda {

// Every argument of cuTensorMapEncodeTiled but the map and the address.
// The first `rank` entries of dims, box and element_strides count, the
// first rank - 1 of strides (bytes between consecutive indices of axes
// 1, 2, ...; axis 0 is contiguous).
struct TensorMapEncoding {
  int data_type = kTensorMapBfloat16;
  uint32_t rank = 2;
  std::array<cuuint64_t, 3> dims = {1, 1, 1};
  std::array<cuuint64_t, 2> strides = {0, 0};
  std::array<cuuint32_t, 3> box = {1, 1, 1};
  std::array<cuuint32_t, 3> element_strides = {1, 1, 1};
  int interleave = kTensorMapInterleaveNone;
  int swizzle = kTensorMapSwizzle128B;
  int l2_promotion = kTensorMapL2Promotion256B;
  int oob_fill = kTensorMapOobFillNone;  // zeros past the edges
};

// The tensor map data type of a dtype: its bytes as they are (f32 as
// FLOAT32: TF32 rounding is the matrix units' own), integers and bools by
// width.
int tensor_map_data_type(DType dtype);

// A factor's encoding: rank, extents, byte strides and element type of its
// view (cir::ProductOperand), its box, unit element strides, 128-byte
// swizzle, 256-byte L2 promotion, zeros past the edges.
TensorMapEncoding tensor_map_encoding(const codegen::TensorMapParam& param);

// What the driver's documented limits refuse in an encoding at `address`
// ("" if nothing): a global address not a multiple of 16, extents of 0 or
// above 2^32, strides not a multiple of 16 or from 2^40, boxes of 0 or
// above 256 elements, a box's first axis past the 128-byte swizzle, element
// strides outside 1..8. For messages; the driver decides.
std::string tensor_map_problem(const TensorMapEncoding& e, CUdeviceptr address);

// "'a' (bf16, depth contiguous, dims 512 x 1000, strides 1024 B, box 64 x 128)": the view, for messages.
std::string describe_tensor_map(const codegen::TensorMapParam& param, const TensorMapEncoding& e);

// The tensor map of `param` for the input at `address` (the current
// context's). Throws CudaError naming the factor's input, its extents and
// strides, and the driver's error, where the driver refuses it or lacks
// cuTensorMapEncodeTiled.
CUtensorMap encode_tensor_map(const Driver& driver, const codegen::TensorMapParam& param, CUdeviceptr address);

}  // namespace zyntax::cuda
