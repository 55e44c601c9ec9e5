// A GPU block's tile product on tensor cores (cir::TileMma), as LLVM IR with
// the NVPTX wmma intrinsics.
//
// The accumulator tile is split over the block's warps as a grid; warp w
// holds the part at grid row w / warp_cols, column w % warp_cols, in 16 x 16
// pieces of 8 floats per lane. The pieces live in one array per thread that
// is indexed by constants only, so LLVM keeps them in registers. wmma loads
// and stores place the elements among the lanes themselves: nothing here
// depends on the fragments' register layout. Warps past the grid skip every
// step; all lanes of a warp take part in each (the intrinsics are .aligned).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "support/dtype.hpp"

namespace zyntax::codegen {

struct TileMmaFragments {
  llvm::Value* pieces = nullptr;  // [pieces x 8 x float] of this thread
  llvm::Value* warp = nullptr;    // i64: the warp's index in the block
  int rows = 0, cols = 0, warp_rows = 1, warp_cols = 1;
  DType factors = DType::BF16;    // the factors' dtype, F32 for TF32 (set by accumulate)

  int piece_rows() const { return rows / warp_rows / 16; }
  int piece_cols() const { return cols / warp_cols / 16; }
  int pieces_per_warp() const { return piece_rows() * piece_cols(); }
};

// The per-thread storage of `f`'s pieces (an alloca at the function's entry).
llvm::Type* tile_mma_storage_type(llvm::LLVMContext& ctx, const TileMmaFragments& f);

void emit_mma_zero(llvm::IRBuilder<>& b, const TileMmaFragments& f);
// acc += a . b: a is rows x depth with rows lda elements apart, b depth x cols
// with rows ldb apart (b_transposed: cols x depth, read as its transpose;
// pointers to their first elements, any address space). TF32 factors are
// rounded to TF32 unless exact (a_exact, b_exact: their values are).
void emit_mma_accumulate(llvm::IRBuilder<>& b, const TileMmaFragments& f, llvm::Value* a, int lda, llvm::Value* bm, int ldb, int depth,
                         bool b_transposed = false, bool a_exact = false, bool b_exact = false);
// d[r * ldd + c] = acc[row0 + r, c] for r < count.
void emit_mma_store(llvm::IRBuilder<>& b, const TileMmaFragments& f, llvm::Value* d, int ldd, int row0, int count);

}  // namespace zyntax::codegen
