// Loop metadata the LLVM lowerings attach to a loop's back edge.
#pragma once

#include <llvm/IR/Constants.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>

namespace zyntax::codegen {

// Asks for the loop to be unrolled whole (factor 0: a schedule's short
// loop over registers, whose indices then become constants), or `factor`
// iterations at a time where that is fewer than the loop runs.
inline llvm::MDNode* unroll_metadata(llvm::LLVMContext& ctx, int factor) {
  llvm::MDNode* how = factor > 0 ? llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.count"),
                                                           llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), factor))})
                                 : llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.full")});
  llvm::MDNode* node = llvm::MDNode::getDistinct(ctx, {nullptr, how});
  node->replaceOperandWith(0, node);
  return node;
}

}  // namespace zyntax::codegen
