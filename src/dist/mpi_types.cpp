#include "dist/mpi_types.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dist/dist_error.hpp"
#include "dist/mpi_process.hpp"

namespace zyntax::dist {

namespace {

// A 2-byte float format: its conversions to and from float.
struct F16Format {
  static float load(uint16_t h) { return f16_to_f32(h); }
  static uint16_t store(float f) { return f32_to_f16(f); }
};
struct BF16Format {
  static float load(uint16_t h) { return bf16_to_f32(h); }
  static uint16_t store(float f) { return f32_to_bf16(f); }
};

struct Add {
  static float apply(float a, float b) { return a + b; }
};
// NaN wins max and min, whichever side it is on, so every rank ends with
// the same value whatever order MPI combines them in.
struct Larger {
  static float apply(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? b : a); }
};
struct Smaller {
  static float apply(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (b < a ? b : a); }
};

// An MPI_User_function: inout[i] = in[i] (op) inout[i], each element
// widened to float and the result rounded back (to nearest even).
template <class Format, class Op>
void combine(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const unsigned char*>(in);
  auto* b = static_cast<unsigned char*>(inout);
  for (int i = 0; i < *len; ++i) {
    uint16_t x, y;
    std::memcpy(&x, a + 2 * i, 2);
    std::memcpy(&y, b + 2 * i, 2);
    uint16_t r = Format::store(Op::apply(Format::load(x), Format::load(y)));
    std::memcpy(b + 2 * i, &r, 2);
  }
}

// An MPI_User_function: inout[i] = in[i] + inout[i], wrapping as two's
// complement (ZynML's integer arithmetic). MPI's own sum of 8- and 16-bit
// integers may saturate instead (Open MPI's vectorised reductions use
// saturating adds for them).
template <class T>
void wrapping_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  using U = std::make_unsigned_t<T>;
  const auto* a = static_cast<const unsigned char*>(in);
  auto* b = static_cast<unsigned char*>(inout);
  for (int i = 0; i < *len; ++i) {
    U x, y;
    std::memcpy(&x, a + sizeof(U) * i, sizeof(U));
    std::memcpy(&y, b + sizeof(U) * i, sizeof(U));
    U r = static_cast<U>(x + y);
    std::memcpy(b + sizeof(U) * i, &r, sizeof(U));
  }
}

// The datatype and operations of f16 and bf16, made once MPI runs and kept
// until it finalises (which frees them).
struct HalfTypes {
  MPI_Datatype f16 = MPI_DATATYPE_NULL, bf16 = MPI_DATATYPE_NULL;
  MPI_Op f16_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum, max, min
  MPI_Op bf16_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  MPI_Op sum8 = MPI_OP_NULL, sum16 = MPI_OP_NULL;  // 8- and 16-bit integers (signed or not: the same bits)

  HalfTypes() {
    if (!mpi_running()) throw DistError("MPI is not running: no collective can run");
    make_type(&f16);
    make_type(&bf16);
    make_op(combine<F16Format, Add>, &f16_ops[0]);
    make_op(combine<F16Format, Larger>, &f16_ops[1]);
    make_op(combine<F16Format, Smaller>, &f16_ops[2]);
    make_op(combine<BF16Format, Add>, &bf16_ops[0]);
    make_op(combine<BF16Format, Larger>, &bf16_ops[1]);
    make_op(combine<BF16Format, Smaller>, &bf16_ops[2]);
    make_op(wrapping_sum<int8_t>, &sum8);
    make_op(wrapping_sum<int16_t>, &sum16);
  }

  static void make_type(MPI_Datatype* t) {
    int rc = MPI_Type_contiguous(2, MPI_BYTE, t);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(t);
    if (rc != MPI_SUCCESS) throw DistError("cannot make the MPI datatype of 16-bit floats: " + mpi_error_text(rc));
  }
  static void make_op(MPI_User_function* f, MPI_Op* op) {
    int rc = MPI_Op_create(f, /*commute=*/1, op);
    if (rc != MPI_SUCCESS) throw DistError("cannot make an MPI reduction of 16-bit floats: " + mpi_error_text(rc));
  }
};

const HalfTypes& half_types() {
  static const HalfTypes types;
  return types;
}

int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: case ReduceOp::Mean: return 0;
    case ReduceOp::Max: return 1;
    case ReduceOp::Min: return 2;
  }
  return 0;
}

}  // namespace

MPI_Datatype mpi_datatype(DType t) {
  switch (t) {
    case DType::F16: return half_types().f16;
    case DType::BF16: return half_types().bf16;
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I8: return MPI_INT8_T;
    case DType::I16: return MPI_INT16_T;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    case DType::U8: return MPI_UINT8_T;
    case DType::U16: return MPI_UINT16_T;
    case DType::U32: return MPI_UINT32_T;
    case DType::U64: return MPI_UINT64_T;
    case DType::Bool: return MPI_C_BOOL;  // one byte, as a bool tensor's elements are
  }
  throw DistError(std::string("no MPI datatype for dtype ") + dtype_name(t));
}

MPI_Op mpi_op(DType t, ReduceOp op) {
  if (t == DType::F16) return half_types().f16_ops[op_index(op)];
  if (t == DType::BF16) return half_types().bf16_ops[op_index(op)];
  if (t == DType::Bool) return op == ReduceOp::Min ? MPI_LAND : MPI_LOR;
  bool sum = op == ReduceOp::Sum || op == ReduceOp::Mean;
  if (sum && (t == DType::I8 || t == DType::U8)) return half_types().sum8;
  if (sum && (t == DType::I16 || t == DType::U16)) return half_types().sum16;
  switch (op) {
    case ReduceOp::Sum: case ReduceOp::Mean: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
  }
  return MPI_SUM;
}

}  // namespace zyntax::dist
