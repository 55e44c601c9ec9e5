#include "codegen/llvm/matmul_block.hpp"

#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/llvm/loop_metadata.hpp"

namespace zyntax::codegen {

namespace {

constexpr int kUnrollSteps = 4;

// for i in 0..n: body(i), with the body's blocks created by `body`.
template <class Body>
void counted_loop(llvm::IRBuilder<>& b, llvm::Value* n, const std::string& name, Body body) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, name + ".head", fn);
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, name + ".body", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, name + ".end", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, name);
  i->addIncoming(b.getInt64(0), pre);
  b.CreateCondBr(b.CreateICmpSLT(i, n), loop, done);
  b.SetInsertPoint(loop);
  body(static_cast<llvm::Value*>(i));
  i->addIncoming(b.CreateAdd(i, b.getInt64(1)), b.GetInsertBlock());
  b.CreateBr(head);
  b.SetInsertPoint(done);
}

}  // namespace

void emit_matmul_block(llvm::IRBuilder<>& b, const MatMulBlockArgs& m) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::Type* f32 = b.getFloatTy();
  auto* vec = llvm::FixedVectorType::get(f32, static_cast<unsigned>(m.cols));
  llvm::Function* fmuladd = llvm::Intrinsic::getDeclaration(fn->getParent(), llvm::Intrinsic::fmuladd, {vec});
  llvm::Value* zero = llvm::ConstantAggregateZero::get(vec);

  // C is read and written only after the k loop: start fetching its lines
  // now, so that the update does not wait for memory (prefetches never fault).
  llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(fn->getParent(), llvm::Intrinsic::prefetch, {b.getPtrTy()});
  for (int r = 0; r < m.rows; ++r) {
    llvm::Value* row = b.CreateGEP(f32, m.c, b.CreateMul(b.getInt64(r), m.ldc));
    for (int c = 0; c < m.cols; c += 16)
      b.CreateCall(prefetch, {b.CreateConstGEP1_64(f32, row, static_cast<uint64_t>(c)), b.getInt32(1), b.getInt32(3), b.getInt32(1)});
  }

  // The k loop: the accumulators are loop-carried values, never memory,
  // its steps unrolled four at a time (1000^3 and 4095x4097x257 measured
  // 4-7% faster than one step per iteration, two at a time no faster). A
  // block of few accumulators (the last columns of a product as vectors
  // along its rows: one) would wait on each multiply-add's latency; it
  // keeps `chains` sets of them, k steps taken in turn, added at the end
  // (reassociated like any running sum: the result differs by rounding).
  const int vectors = m.rows * std::max(1, m.cols / 16);  // registers, counted as AVX-512's (a rough rule elsewhere)
  const int chains = std::clamp(8 / vectors, 1, 8);
  auto load_b = [&](llvm::Value* p) {
    llvm::Value* b_step = m.b_rows ? static_cast<llvm::Value*>(b.CreateAlignedLoad(b.getInt64Ty(), b.CreateGEP(b.getInt64Ty(), m.b_rows, p), llvm::Align(8)))
                                   : b.CreateMul(p, m.ldb);
    return b.CreateAlignedLoad(vec, b.CreateGEP(f32, m.b, b_step), llvm::Align(4), "mmb.b");
  };
  // One k step p into the accumulators `acc`.
  auto step = [&](llvm::Value* p, const std::vector<llvm::Value*>& acc) {
    llvm::Value* bv = load_b(p);
    llvm::Value* acol = b.CreateGEP(f32, m.a, b.CreateMul(p, m.a_k_stride));
    std::vector<llvm::Value*> next(acc.size());
    for (int r = 0; r < m.rows; ++r) {
      llvm::Value* av = b.CreateAlignedLoad(f32, b.CreateGEP(f32, acol, b.CreateMul(b.getInt64(r), m.a_row_stride)), llvm::Align(4));
      llvm::Value* splat = b.CreateVectorSplat(static_cast<unsigned>(m.cols), av);
      next[static_cast<size_t>(r)] = b.CreateCall(fmuladd, {splat, bv, acc[static_cast<size_t>(r)]});
    }
    return next;
  };
  // A loop over p in [from, to) by `sets` steps, `sets` of accumulators
  // carried (starting at `init`), set u taking step p + u, its iterations
  // unrolled `unroll` at a time; returns p and the sets at its end.
  auto k_loop = [&](const std::string& name, llvm::Value* from, llvm::Value* to, int sets,
                    const std::vector<std::vector<llvm::Value*>>& init, int unroll) {
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, name + ".head", fn);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, name + ".body", fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, name + ".end", fn);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode* p = b.CreatePHI(b.getInt64Ty(), 2, "mmb.p");
    p->addIncoming(from, pre);
    std::vector<std::vector<llvm::PHINode*>> acc(static_cast<size_t>(sets));
    std::vector<std::vector<llvm::Value*>> out(static_cast<size_t>(sets));
    for (int u = 0; u < sets; ++u)
      for (int r = 0; r < m.rows; ++r) {
        acc[u].push_back(b.CreatePHI(vec, 2, "mmb.acc" + std::to_string(r)));
        acc[u].back()->addIncoming(init[u][r], pre);
        out[u].push_back(acc[u].back());
      }
    b.CreateCondBr(b.CreateICmpSLT(p, to), body, done);
    b.SetInsertPoint(body);
    std::vector<std::vector<llvm::Value*>> next(static_cast<size_t>(sets));
    for (int u = 0; u < sets; ++u)
      next[u] = step(b.CreateAdd(p, b.getInt64(u)), std::vector<llvm::Value*>(acc[u].begin(), acc[u].end()));
    llvm::BasicBlock* latch = b.GetInsertBlock();
    p->addIncoming(b.CreateAdd(p, b.getInt64(sets)), latch);
    for (int u = 0; u < sets; ++u)
      for (int r = 0; r < m.rows; ++r) acc[u][r]->addIncoming(next[u][r], latch);
    llvm::BranchInst* back = b.CreateBr(head);
    if (unroll > 1) back->setMetadata(llvm::LLVMContext::MD_loop, unroll_metadata(ctx, unroll));
    b.SetInsertPoint(done);
    return std::make_pair(static_cast<llvm::Value*>(p), out);
  };
  std::vector<llvm::Value*> acc;
  if (chains == 1) {
    acc = k_loop("mmb.k", b.getInt64(0), m.kc, 1, {std::vector<llvm::Value*>(m.rows, zero)}, kUnrollSteps).second[0];
  } else {
    // Whole rounds of `chains` steps, then what is left on the first set.
    llvm::Value* whole = b.CreateMul(b.CreateSDiv(m.kc, b.getInt64(chains)), b.getInt64(chains));
    auto [p, sets] = k_loop("mmb.k", b.getInt64(0), whole, chains, std::vector<std::vector<llvm::Value*>>(chains, std::vector<llvm::Value*>(m.rows, zero)), 1);
    sets[0] = k_loop("mmb.kr", p, m.kc, 1, {sets[0]}, 1).second[0];
    for (int width = 1; width < chains; width *= 2)  // a fixed tree: (0 + 1) + (2 + 3), ...
      for (int u = 0; u + width < chains; u += 2 * width)
        for (int r = 0; r < m.rows; ++r) sets[u][r] = b.CreateFAdd(sets[u][r], sets[u + width][r]);
    acc = sets[0];
  }

  // Whole blocks store vectors; edge blocks go through memory element by element.
  llvm::Value* whole = b.CreateAnd(b.CreateICmpEQ(m.m_valid, b.getInt64(m.rows)), b.CreateICmpEQ(m.n_valid, b.getInt64(m.cols)));
  llvm::BasicBlock* vstore = llvm::BasicBlock::Create(ctx, "mmb.store", fn);
  llvm::BasicBlock* estore = llvm::BasicBlock::Create(ctx, "mmb.edge", fn);
  llvm::BasicBlock* merged = llvm::BasicBlock::Create(ctx, "mmb.done", fn);
  b.CreateCondBr(whole, vstore, estore);

  b.SetInsertPoint(vstore);
  for (int r = 0; r < m.rows; ++r) {
    llvm::Value* row = b.CreateGEP(f32, m.c, b.CreateMul(b.getInt64(r), m.ldc));
    llvm::Value* old = b.CreateAlignedLoad(vec, row, llvm::Align(4));
    llvm::Value* sum = b.CreateFAdd(old, acc[static_cast<size_t>(r)]);
    b.CreateAlignedStore(b.CreateSelect(m.accumulate, sum, acc[static_cast<size_t>(r)]), row, llvm::Align(4));
  }
  b.CreateBr(merged);

  b.SetInsertPoint(estore);
  llvm::BasicBlock* entry = &fn->getEntryBlock();
  llvm::IRBuilder<> eb(entry, entry->begin());
  llvm::AllocaInst* tmp = eb.CreateAlloca(llvm::ArrayType::get(vec, static_cast<uint64_t>(m.rows)), nullptr, "mmb.tmp");
  for (int r = 0; r < m.rows; ++r)
    b.CreateAlignedStore(acc[static_cast<size_t>(r)], b.CreateConstGEP2_64(tmp->getAllocatedType(), tmp, 0, static_cast<uint64_t>(r)),
                         llvm::Align(4));
  counted_loop(b, m.m_valid, "mmb.r", [&](llvm::Value* r) {
    counted_loop(b, m.n_valid, "mmb.c", [&](llvm::Value* c) {
      llvm::Value* v = b.CreateAlignedLoad(
          f32, b.CreateGEP(f32, tmp, b.CreateAdd(b.CreateMul(r, b.getInt64(m.cols)), c)), llvm::Align(4));
      llvm::Value* out = b.CreateGEP(f32, m.c, b.CreateAdd(b.CreateMul(r, m.ldc), c));
      llvm::Value* sum = b.CreateFAdd(b.CreateAlignedLoad(f32, out, llvm::Align(4)), v);
      b.CreateAlignedStore(b.CreateSelect(m.accumulate, sum, v), out, llvm::Align(4));
    });
  });
  b.CreateBr(merged);
  b.SetInsertPoint(merged);
}

}  // namespace zyntax::codegen
