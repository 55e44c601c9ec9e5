// What the lowerings of Hopper's warpgroup kernels (warpgroup_product.cpp,
// warpgroup_attention.cpp) build their LLVM IR from: inline PTX for what
// LLVM 19's NVPTX has no intrinsics for (wgmma, tensor copies, mbarrier
// waits and transaction counts, setmaxnreg), bounded barrier waits, shared
// memory descriptors, and registers threaded through the matrix units'
// asynchronous instructions.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <string>
#include <vector>

#include "codegen/llvm/emitter.hpp"
#include "codegen/llvm/nvptx/wgmma_layout.hpp"

namespace zyntax::codegen {

class WarpgroupIr {
 public:
  explicit WarpgroupIr(Emitter& e) : e_(e), b_(e.builder()) {}

  llvm::Value* i32(int32_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }
  llvm::BasicBlock* block(const char* name);

  template <class Body>
  void if_then(llvm::Value* cond, const char* name, Body body) {
    llvm::BasicBlock* then = block(name);
    llvm::BasicBlock* done = block("wg.endif");
    b_.CreateCondBr(cond, then, done);
    b_.SetInsertPoint(then);
    body();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // Thread `tid` 0 makes the barriers (`init`: init_barrier calls) and
  // fences them for the copy engine; the block meets before anyone uses
  // them, and where `cluster`, every block of its cluster too (they copy
  // into each other's stages and arrive on each other's barriers).
  template <class Init>
  void init_barriers(llvm::Value* tid, Init init, bool cluster = false) {
    if_then(b_.CreateICmpEQ(tid, i32(0)), "wg.init", [&] {
      init();
      asm_void("fence.mbarrier_init.release.cluster;", "", {});
      asm_void("fence.proxy.async.shared::cta;", "", {});
    });
    if (cluster) {
      asm_void("barrier.cluster.arrive.release.aligned;", "", {});
      asm_void("barrier.cluster.wait.acquire.aligned;", "", {});
    } else {
      asm_void("bar.sync 0;", "", {});
    }
  }

  // Warpgroup 0 produces (its registers given back, its thread 0 runs
  // `produce()`); the others consume (`consume(consumer, thread)`: which
  // consumer, from 0, and the thread within its warpgroup), with the
  // registers the producer gave back.
  template <class Produce, class Consume>
  void split_roles(llvm::Value* tid, int producer_registers, int consumer_registers, Produce produce, Consume consume) {
    llvm::Value* warpgroup = b_.CreateLShr(tid, 7);
    llvm::BasicBlock* producer = block("wg.producer");
    llvm::BasicBlock* consumer = block("wg.consumer");
    llvm::BasicBlock* done = block("wg.done");
    b_.CreateCondBr(b_.CreateICmpEQ(warpgroup, i32(0)), producer, consumer);
    b_.SetInsertPoint(producer);
    asm_void("setmaxnreg.dec.sync.aligned.u32 " + std::to_string(producer_registers) + ";", "", {});
    if_then(b_.CreateICmpEQ(tid, i32(0)), "wg.copies", produce);
    b_.CreateBr(done);
    b_.SetInsertPoint(consumer);
    asm_void("setmaxnreg.inc.sync.aligned.u32 " + std::to_string(consumer_registers) + ";", "", {});
    consume(b_.CreateSub(warpgroup, i32(1)), b_.CreateAnd(tid, i32(127)));
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // Inline PTX, side-effecting and convergent (every thread of a warp or
  // warpgroup runs it together).
  llvm::Value* asm_value(llvm::Type* result, const std::string& text, const std::string& constraints, const std::vector<llvm::Value*>& args);
  void asm_void(const std::string& text, const std::string& constraints, const std::vector<llvm::Value*>& args);

  // ---- mbarriers (i32 shared addresses)
  void init_barrier(llvm::Value* bar, int count);
  void arrive(llvm::Value* bar);
  void arrive_expect_tx(llvm::Value* bar, int64_t bytes);
  // Arrives on the barrier at the same place as `bar` in the block of
  // cluster rank `rank` (i32).
  void arrive_in_block(llvm::Value* bar, llvm::Value* rank);
  // This block's place in its cluster, and the cluster's blocks (i32).
  llvm::Value* cluster_rank();
  llvm::Value* cluster_blocks();
  // Waits until the barrier's phase of `parity` has completed, trapping
  // after 2^26 tries: a pipeline fault becomes a launch error, never a hung GPU.
  void wait(llvm::Value* bar, llvm::Value* parity);

  // One tensor copy of a box into shared memory at `dst`, completing on
  // `bar`: coordinates fastest first (i32 values), `map` the generic address
  // of its tensor map (i64).
  // With `blocks` (an i16 mask of cluster ranks), the box lands at `dst`
  // in each of those blocks and completes on the barrier at `bar`'s place
  // in each.
  void tensor_copy(llvm::Value* map, llvm::Value* dst, const std::vector<llvm::Value*>& coords, llvm::Value* bar,
                   llvm::Value* blocks = nullptr);

  // A wgmma shared-memory descriptor of the tile at `address` (i32 shared).
  llvm::Value* descriptor(llvm::Value* address, const wgmma::TileDescriptor& d);

  // Registers kept in an f32 array (an alloca LLVM promotes: every index
  // constant), threaded through inline PTX.
  struct Registers {
    llvm::Value* array = nullptr;
    int count = 0;
  };
  Registers registers(int count, const char* name);
  llvm::Value* element(const Registers& r, int i);
  llvm::Value* load(const Registers& r, int i) { return b_.CreateLoad(b_.getFloatTy(), element(r, i)); }
  void store(const Registers& r, int i, llvm::Value* v) { b_.CreateStore(v, element(r, i)); }
  // Runs `text` with the registers as tied in-out operands ($0..$n-1), then
  // `args` (`constraints`) as $n...: nothing reads them before it is done.
  void tied_asm(const Registers& r, const std::string& text, const std::string& constraints, const std::vector<llvm::Value*>& args);

  // A wgmma of shape m64n{n}k{k} into the registers (n / 2 of them):
  // acc = A . B (+ acc where `accumulate`, an i32), A from a descriptor
  // (one i64 value) or from registers (i32 values), B from a descriptor.
  // `a_k_major`/`b_k_major` give the transposition flags of 16-bit factors.
  void mma(const Registers& acc, DType factors, int n, const std::vector<llvm::Value*>& a, llvm::Value* b_desc, llvm::Value* accumulate,
           bool a_k_major, bool b_k_major);
  void fence() { asm_void("wgmma.fence.sync.aligned;", "", {}); }
  void commit() { asm_void("wgmma.commit_group.sync.aligned;", "", {}); }
  // Waits until at most `pending` groups are in flight; `acc` threaded through.
  void wait_group(const Registers& acc, int pending);

 protected:
  Emitter& e_;
  llvm::IRBuilder<>& b_;
};

}  // namespace zyntax::codegen
