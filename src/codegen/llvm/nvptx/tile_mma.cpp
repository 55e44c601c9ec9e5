#include "codegen/llvm/nvptx/tile_mma.hpp"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <string>
#include <vector>

namespace zyntax::codegen {

namespace {

constexpr int kAccElements = 8;  // f32 elements of a 16 x 16 accumulator piece, per lane

// The wmma shape of the factors: m16n16k16 for f16/bf16, m16n16k8 for TF32.
int k_step(DType factors) { return factors == DType::F32 ? 8 : 16; }
std::string shape(DType factors) { return factors == DType::F32 ? "m16n16k8" : "m16n16k16"; }
const char* factor_name(DType factors) { return factors == DType::F32 ? "tf32" : factors == DType::F16 ? "f16" : "bf16"; }

llvm::Type* element_type(llvm::LLVMContext& ctx, DType factors) {
  if (factors == DType::F32) return llvm::Type::getFloatTy(ctx);
  return factors == DType::F16 ? llvm::Type::getHalfTy(ctx) : llvm::Type::getBFloatTy(ctx);
}

// The registers of one A or B piece: 8 x <2 x half> for f16, 4 x i32 for bf16 and TF32.
std::vector<llvm::Type*> factor_registers(llvm::LLVMContext& ctx, DType factors) {
  if (factors == DType::F16) return std::vector<llvm::Type*>(8, llvm::FixedVectorType::get(llvm::Type::getHalfTy(ctx), 2));
  return std::vector<llvm::Type*>(4, llvm::Type::getInt32Ty(ctx));
}

std::string address_space(llvm::Value* p) { return ".p" + std::to_string(p->getType()->getPointerAddressSpace()); }

llvm::FunctionCallee intrinsic(llvm::IRBuilder<>& b, const std::string& name, llvm::Type* result, std::vector<llvm::Type*> params) {
  llvm::Module& m = *b.GetInsertBlock()->getModule();
  return m.getOrInsertFunction(name, llvm::FunctionType::get(result, params, false));
}

std::vector<llvm::Value*> fields(llvm::IRBuilder<>& b, llvm::Value* aggregate, unsigned n) {
  std::vector<llvm::Value*> out;
  for (unsigned i = 0; i < n; ++i) out.push_back(b.CreateExtractValue(aggregate, {i}));
  return out;
}

// One A (`which` = "a") or B piece from memory: a warp-wide wmma load, of
// a piece whose rows (`layout` "row") or columns ("col") are `stride` apart.
std::vector<llvm::Value*> load_piece(llvm::IRBuilder<>& b, DType factors, const char* which, const char* layout, llvm::Value* at, int stride,
                                     bool exact) {
  llvm::LLVMContext& ctx = b.getContext();
  std::vector<llvm::Type*> regs = factor_registers(ctx, factors);
  llvm::Type* result = llvm::StructType::get(ctx, regs);
  std::string name = "llvm.nvvm.wmma." + shape(factors) + ".load." + which + "." + layout + ".stride." + factor_name(factors) + address_space(at);
  llvm::Value* piece = b.CreateCall(intrinsic(b, name, result, {at->getType(), b.getInt32Ty()}), {at, b.getInt32(stride)});
  std::vector<llvm::Value*> out = fields(b, piece, static_cast<unsigned>(regs.size()));
  if (factors == DType::F32 && !exact) {
    // TF32 factors rounded to nearest, ties away (the hardware would truncate;
    // exact ones lose nothing either way).
    for (llvm::Value*& r : out)
      r = b.CreateIntrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {b.CreateBitCast(r, b.getFloatTy())});
  }
  return out;
}

llvm::Value* piece_element(llvm::IRBuilder<>& b, const TileMmaFragments& f, int piece, int e) {
  return b.CreateConstInBoundsGEP2_32(tile_mma_storage_type(b.getContext(), f), f.pieces, 0, static_cast<unsigned>(piece * kAccElements + e));
}

// Runs `body` only in `cond`'s warps; the condition is the same in all lanes of a warp.
template <class Body>
void in_warps(llvm::IRBuilder<>& b, llvm::Value* cond, const char* name, Body body) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* run = llvm::BasicBlock::Create(b.getContext(), std::string(name) + ".run", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), std::string(name) + ".done", fn);
  b.CreateCondBr(cond, run, done);
  b.SetInsertPoint(run);
  body();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

llvm::Value* in_grid(llvm::IRBuilder<>& b, const TileMmaFragments& f) {
  return b.CreateICmpULT(f.warp, b.getInt64(static_cast<uint64_t>(f.warp_rows) * static_cast<uint64_t>(f.warp_cols)));
}
// The first row and column of this warp's part of the tile (i64).
llvm::Value* part_row(llvm::IRBuilder<>& b, const TileMmaFragments& f) {
  return b.CreateMul(b.CreateUDiv(f.warp, b.getInt64(static_cast<uint64_t>(f.warp_cols))), b.getInt64(f.rows / f.warp_rows));
}
llvm::Value* part_col(llvm::IRBuilder<>& b, const TileMmaFragments& f) {
  return b.CreateMul(b.CreateURem(f.warp, b.getInt64(static_cast<uint64_t>(f.warp_cols))), b.getInt64(f.cols / f.warp_cols));
}

}  // namespace

llvm::Type* tile_mma_storage_type(llvm::LLVMContext& ctx, const TileMmaFragments& f) {
  return llvm::ArrayType::get(llvm::Type::getFloatTy(ctx), static_cast<uint64_t>(f.pieces_per_warp() * kAccElements));
}

void emit_mma_zero(llvm::IRBuilder<>& b, const TileMmaFragments& f) {
  in_warps(b, in_grid(b, f), "mma.zero", [&] {
    for (int p = 0; p < f.pieces_per_warp(); ++p)
      for (int e = 0; e < kAccElements; ++e) b.CreateStore(llvm::ConstantFP::get(b.getFloatTy(), 0.0), piece_element(b, f, p, e));
  });
}

void emit_mma_accumulate(llvm::IRBuilder<>& b, const TileMmaFragments& f, llvm::Value* a, int lda, llvm::Value* bm, int ldb, int depth,
                         bool b_transposed, bool a_exact, bool b_exact) {
  llvm::LLVMContext& ctx = b.getContext();
  in_warps(b, in_grid(b, f), "mma", [&] {
    llvm::Type* elem = element_type(ctx, f.factors);
    llvm::Value* row = part_row(b, f);
    llvm::Value* col = part_col(b, f);
    std::vector<llvm::Type*> regs = factor_registers(ctx, f.factors);
    std::vector<llvm::Type*> params;
    for (int side = 0; side < 2; ++side) params.insert(params.end(), regs.begin(), regs.end());
    params.insert(params.end(), kAccElements, b.getFloatTy());
    llvm::Type* result = llvm::StructType::get(ctx, std::vector<llvm::Type*>(kAccElements, b.getFloatTy()));
    std::string mma_name = "llvm.nvvm.wmma." + shape(f.factors) + ".mma.row." + (b_transposed ? "col." : "row.") +
                           (f.factors == DType::F16 ? std::string("f32.f32") : std::string(factor_name(f.factors)));
    llvm::FunctionCallee mma = intrinsic(b, mma_name, result, params);
    for (int k = 0; k < depth; k += k_step(f.factors)) {
      std::vector<std::vector<llvm::Value*>> as, bs;
      for (int i = 0; i < f.piece_rows(); ++i) {
        llvm::Value* r = b.CreateAdd(row, b.getInt64(i * 16));
        llvm::Value* at = b.CreateGEP(elem, a, b.CreateAdd(b.CreateMul(r, b.getInt64(lda)), b.getInt64(k)));
        as.push_back(load_piece(b, f.factors, "a", "row", at, lda, a_exact));
      }
      for (int j = 0; j < f.piece_cols(); ++j) {
        llvm::Value* c = b.CreateAdd(col, b.getInt64(j * 16));
        // (k, c) at k * ldb + c, or at c * ldb + k where b's rows are the product's columns.
        llvm::Value* offset = b_transposed ? b.CreateAdd(b.CreateMul(c, b.getInt64(ldb)), b.getInt64(k))
                                           : b.CreateAdd(b.getInt64(static_cast<int64_t>(k) * ldb), c);
        bs.push_back(load_piece(b, f.factors, "b", b_transposed ? "col" : "row", b.CreateGEP(elem, bm, offset), ldb, b_exact));
      }
      for (int i = 0; i < f.piece_rows(); ++i)
        for (int j = 0; j < f.piece_cols(); ++j) {
          int piece = i * f.piece_cols() + j;
          std::vector<llvm::Value*> args = as[static_cast<size_t>(i)];
          args.insert(args.end(), bs[static_cast<size_t>(j)].begin(), bs[static_cast<size_t>(j)].end());
          for (int e = 0; e < kAccElements; ++e) args.push_back(b.CreateLoad(b.getFloatTy(), piece_element(b, f, piece, e)));
          llvm::Value* sum = b.CreateCall(mma, args);
          for (int e = 0; e < kAccElements; ++e) b.CreateStore(b.CreateExtractValue(sum, {static_cast<unsigned>(e)}), piece_element(b, f, piece, e));
        }
    }
  });
}

void emit_mma_store(llvm::IRBuilder<>& b, const TileMmaFragments& f, llvm::Value* d, int ldd, int row0, int count) {
  llvm::LLVMContext& ctx = b.getContext();
  in_warps(b, in_grid(b, f), "mma.store", [&] {
    llvm::Value* row = part_row(b, f);
    llvm::Value* col = part_col(b, f);
    std::string name = "llvm.nvvm.wmma." + shape(f.factors) + ".store.d.row.stride.f32" + address_space(d);
    std::vector<llvm::Type*> params = {d->getType()};
    params.insert(params.end(), kAccElements, b.getFloatTy());
    params.push_back(b.getInt32Ty());
    llvm::FunctionCallee store = intrinsic(b, name, llvm::Type::getVoidTy(ctx), params);
    for (int i = 0; i < f.piece_rows(); ++i) {
      // The piece's row in d: inside [0, count) for the warps holding it.
      llvm::Value* r = b.CreateSub(b.CreateAdd(row, b.getInt64(i * 16)), b.getInt64(row0));
      in_warps(b, b.CreateICmpULT(r, b.getInt64(count)), "mma.store.rows", [&] {
        for (int j = 0; j < f.piece_cols(); ++j) {
          llvm::Value* c = b.CreateAdd(col, b.getInt64(j * 16));
          llvm::Value* at = b.CreateGEP(b.getFloatTy(), d, b.CreateAdd(b.CreateMul(r, b.getInt64(ldd)), c));
          std::vector<llvm::Value*> args = {at};
          int piece = i * f.piece_cols() + j;
          for (int e = 0; e < kAccElements; ++e) args.push_back(b.CreateLoad(b.getFloatTy(), piece_element(b, f, piece, e)));
          args.push_back(b.getInt32(ldd));
          b.CreateCall(store, args);
        }
      });
    }
  });
}

}  // namespace zyntax::codegen
