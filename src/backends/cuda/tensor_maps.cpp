#include "backends/cuda/tensor_maps.hpp"

#include "support/dtype.hpp"

namespace zyntax::cuda {

int tensor_map_data_type(DType dtype) {
  switch (dtype) {
    case DType::F16: return kTensorMapFloat16;
    case DType::BF16: return kTensorMapBfloat16;
    case DType::F32: return kTensorMapFloat32;
    case DType::F64: return kTensorMapFloat64;
    case DType::I8: case DType::U8: case DType::Bool: return kTensorMapUint8;
    case DType::I16: case DType::U16: return kTensorMapUint16;
    case DType::I32: return kTensorMapInt32;
    case DType::U32: return kTensorMapUint32;
    case DType::I64: return kTensorMapInt64;
    case DType::U64: return kTensorMapUint64;
  }
  return kTensorMapUint8;
}

TensorMapEncoding tensor_map_encoding(const codegen::TensorMapParam& param) {
  const cir::ProductOperand& o = param.operand;
  TensorMapEncoding e;
  e.data_type = tensor_map_data_type(o.dtype);
  e.rank = static_cast<uint32_t>(o.rank);
  uint64_t size = dtype_size(o.dtype);
  for (int i = 0; i < o.rank && i < 3; ++i) {
    e.dims[i] = static_cast<cuuint64_t>(o.dims[i]);
    e.box[i] = param.box[i];
    e.element_strides[i] = 1;
  }
  for (int i = 0; i + 1 < o.rank && i < 2; ++i) e.strides[i] = static_cast<cuuint64_t>(o.strides[i]) * size;
  e.interleave = kTensorMapInterleaveNone;
  e.swizzle = kTensorMapSwizzle128B;
  e.l2_promotion = kTensorMapL2Promotion256B;
  e.oob_fill = kTensorMapOobFillNone;
  return e;
}

namespace {

int element_bytes(int data_type) {
  switch (data_type) {
    case kTensorMapUint8: return 1;
    case kTensorMapUint16: case kTensorMapFloat16: case kTensorMapBfloat16: return 2;
    case kTensorMapUint64: case kTensorMapInt64: case kTensorMapFloat64: return 8;
    default: return 4;
  }
}

}  // namespace

std::string tensor_map_problem(const TensorMapEncoding& e, CUdeviceptr address) {
  if (e.rank < 1 || e.rank > 3) return "rank " + std::to_string(e.rank) + " is not 1 to 3";
  if (address % 16 != 0) return "the input's address is not a multiple of 16 bytes";
  for (uint32_t i = 0; i < e.rank; ++i) {
    if (e.dims[i] == 0 || e.dims[i] > (uint64_t{1} << 32))
      return "extent " + std::to_string(e.dims[i]) + " of axis " + std::to_string(i) + " is not 1 to 2^32";
    if (e.box[i] == 0 || e.box[i] > 256)
      return "box extent " + std::to_string(e.box[i]) + " of axis " + std::to_string(i) + " is not 1 to 256";
    if (e.element_strides[i] == 0 || e.element_strides[i] > 8)
      return "element stride " + std::to_string(e.element_strides[i]) + " of axis " + std::to_string(i) + " is not 1 to 8";
  }
  for (uint32_t i = 0; i + 1 < e.rank; ++i)
    if (e.strides[i] % 16 != 0 || e.strides[i] >= (uint64_t{1} << 40))
      return "stride " + std::to_string(e.strides[i]) + " B of axis " + std::to_string(i + 1) +
             " is not a multiple of 16 below 2^40";
  int swizzle_bytes = e.swizzle == kTensorMapSwizzle128B ? 128 : e.swizzle == kTensorMapSwizzle64B ? 64
                      : e.swizzle == kTensorMapSwizzle32B ? 32 : 0;
  uint64_t inner = uint64_t{e.box[0]} * static_cast<uint64_t>(element_bytes(e.data_type));
  if (swizzle_bytes && inner > static_cast<uint64_t>(swizzle_bytes))
    return "the box's first axis is " + std::to_string(inner) + " bytes, more than the " + std::to_string(swizzle_bytes) +
           "-byte swizzle";
  if (inner % 16 != 0) return "the box's first axis is " + std::to_string(inner) + " bytes, not a multiple of 16";
  return "";
}

std::string describe_tensor_map(const codegen::TensorMapParam& param, const TensorMapEncoding& e) {
  std::string dims, strides, box;
  for (uint32_t i = 0; i < e.rank && i < 3; ++i) {
    dims += (i ? " x " : "") + std::to_string(e.dims[i]);
    box += (i ? " x " : "") + std::to_string(e.box[i]);
  }
  for (uint32_t i = 0; i + 1 < e.rank && i < 2; ++i) strides += (i ? ", " : "") + std::to_string(e.strides[i]) + " B";
  return "'" + param.operand.buffer + "' (" + dtype_name(param.operand.dtype) + ", " +
         (param.operand.k_major ? "depth" : "side") + " contiguous, dims " + dims + ", strides " +
         (strides.empty() ? "none" : strides) + ", box " + box + ")";
}

CUtensorMap encode_tensor_map(const Driver& driver, const codegen::TensorMapParam& param, CUdeviceptr address) {
  TensorMapEncoding e = tensor_map_encoding(param);
  std::string what = "making the tensor map of " + describe_tensor_map(param, e);
  if (!driver.cuTensorMapEncodeTiled)
    throw CudaError(what + " failed: the CUDA driver lacks cuTensorMapEncodeTiled (CUDA 12 or newer has it)",
                    CUDA_ERROR_NOT_FOUND);
  CUtensorMap map{};
  CUresult r = driver.cuTensorMapEncodeTiled(&map, e.data_type, e.rank, reinterpret_cast<void*>(static_cast<uintptr_t>(address)),
                                             e.dims.data(), e.strides.data(), e.box.data(), e.element_strides.data(), e.interleave,
                                             e.swizzle, e.l2_promotion, e.oob_fill);
  if (r != CUDA_SUCCESS) {
    std::string problem = tensor_map_problem(e, address);
    throw CudaError(what + " failed: " + driver.error_text(r) + (problem.empty() ? "" : "; likely cause: " + problem), r);
  }
  return map;
}

}  // namespace zyntax::cuda
