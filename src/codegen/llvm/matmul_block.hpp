// The register-blocked micro-kernel of a packed matrix product, as LLVM IR.
//
// Lowers one cir::MatMulBlock: `rows` accumulators of <cols x float> live in
// registers for the whole k loop; each step loads one packed row of B as a
// vector, broadcasts one packed element of A per accumulator and multiply-adds.
// LLVM splits the <cols x float> vectors into the target's registers, so the
// same IR serves AVX-512 (cols = 32: two zmm per row), AVX2 and NEON. A
// block of fewer than eight vectors keeps several sets of accumulators, k
// steps in turn, so that it is not bound by the multiply-add's latency.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace zyntax::codegen {

struct MatMulBlockArgs {
  int rows = 0, cols = 0;
  llvm::Value* a = nullptr;   // float*: A, at the block's first element
  llvm::Value* a_row_stride = nullptr;  // i64: elements between rows of A (1 when packed)
  llvm::Value* a_k_stride = nullptr;    // i64: elements between k steps of A (rows when packed)
  llvm::Value* b = nullptr;   // float*: packed B, at the block's first element
  llvm::Value* c = nullptr;   // float*: C's top-left element
  llvm::Value* kc = nullptr;  // i64
  llvm::Value* ldb = nullptr;       // i64: elements between rows of B
  llvm::Value* b_rows = nullptr;    // i64*: row p of B at b + b_rows[p] instead (ldb unused), or null
  llvm::Value* ldc = nullptr;       // i64: elements between rows of C
  llvm::Value* m_valid = nullptr;   // i64: rows of C written
  llvm::Value* n_valid = nullptr;   // i64: columns of C written
  llvm::Value* accumulate = nullptr;  // i1: add to C rather than overwrite it
};

// Emits the block at the builder's insertion point, which it leaves after it.
void emit_matmul_block(llvm::IRBuilder<>& b, const MatMulBlockArgs& args);

}  // namespace zyntax::codegen
