// A block's share of a warpgroup product (cir::WarpgroupProduct) for
// Hopper (sm_90a), as LLVM IR with inline PTX: LLVM 19's NVPTX has no
// intrinsics for wgmma, the tensor copies, expect_tx or try_wait.parity.
//
//   warpgroup 0, the producer (registers given back: setmaxnreg.dec 40):
//     thread 0, for each tile and depth step it (ring stage s = it % stages):
//       wait until empty[s] completes the phase before this use
//       full[s].arrive.expect_tx(the stage's bytes); the copy engine brings
//       A's and B's tiles into stage s, completing on full[s]
//   warpgroups 1..consumers (setmaxnreg.inc 232), rows 64c..64c+63 of the tile:
//     for each depth step: wait for full[s]; wgmma.fence; the step's wgmmas
//     (m64nNk16, or k8 for TF32) from shared-memory descriptors; commit;
//     wait until one group is in flight (the previous step's is done) and
//     release that step's stage (lane 0 of each warp arrives on empty[s]);
//     a TF32 first factor that is MN-major is read into registers instead,
//     rounded to TF32 on the way, and each step waits for its own wgmmas
//     (the next one rewrites the registers they read) and releases its stage
//     after the tile: wait for all, release the last stage, run the
//     epilogue on each accumulator element from its registers
//
// In clusters of two blocks (the pair's row tiles over one column tile):
// the blocks meet after making their barriers; each producer copies its
// own A tile and every other box of B's tile into both blocks (multicast),
// so each full[s] still expects A's and all of B's bytes; each consumer
// warp releases a stage in both blocks (empty[s] counts both blocks'
// warps), since the partner's copies land here too; and the producer stays
// until every stage is released in its last phase, so that no arrival from
// the partner comes after the block has gone.
//
// The accumulators are threaded through every wgmma and wgmma.wait_group as
// tied operands, so nothing reads them before the tensor cores are done.
// Every barrier wait gives up after 2^26 tries with a trap: a pipeline
// fault becomes a launch error, never a hung GPU.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/llvm/emitter.hpp"
#include "codegen/llvm/kernel_abi.hpp"
#include "codegen/llvm/nvptx/nvptx_llvm_target.hpp"
#include "codegen/llvm/nvptx/tensor_map_args.hpp"
#include "codegen/llvm/nvptx/warpgroup_ir.hpp"
#include "codegen/llvm/nvptx/wgmma_layout.hpp"

namespace zyntax::codegen {

namespace {

constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;

class WarpgroupProductEmitter : WarpgroupIr {
 public:
  WarpgroupProductEmitter(Emitter& e, const cir::WarpgroupProduct& p) : WarpgroupIr(e), p_(p) {}

  void run() {
    llvm::Value* tid = b_.CreateTrunc(e_.gpu_coordinate(cir::GpuIndexKind::ThreadIdx, 0), b_.getInt32Ty());
    e_.check(b_.CreateICmpEQ(e_.gpu_coordinate(cir::GpuIndexKind::BlockDim, 0), b_.getInt64(p_.threads())), p_.span,
             "the GPU block has other than the warpgroup product's " + std::to_string(p_.threads()) + " threads");
    // In clusters: the block's rank (the product's own, which the
    // hardware's must match) and its partner's.
    rank_ = b_.getInt64(0);
    if (clustered()) {
      rank_ = e_.expr(p_.cluster_rank);
      llvm::Value* hardware = cluster_rank();
      e_.check(b_.CreateAnd(b_.CreateICmpEQ(cluster_blocks(), i32(p_.cluster)),
                            b_.CreateICmpEQ(b_.CreateZExt(hardware, b_.getInt64Ty()), rank_)),
               p_.span, "the warpgroup product's blocks were not launched in clusters of " + std::to_string(p_.cluster) + " along x");
      partner_ = b_.CreateXor(hardware, i32(1));
    }
    // The stages from the first 1024-byte boundary of the shared array, then the barriers.
    llvm::Value* raw = b_.CreatePtrToInt(e_.buffer(p_.stage).ptr, b_.getInt32Ty());
    base_ = b_.CreateAnd(b_.CreateAdd(raw, i32(wgmma::kAtomBytes - 1)), i32(~(wgmma::kAtomBytes - 1)));
    barriers_ = b_.CreateAdd(base_, i32(static_cast<int32_t>(p_.stages * p_.stage_tile_bytes())));
    // This product's two maps: the entry takes them per product, in order (kernel_abi.hpp).
    const std::vector<llvm::Value*>& maps = tensor_map_args(e_);
    size_t first = tensor_maps_before(e_.kernel(), &p_);
    if (maps.size() < first + 2) throw std::logic_error("warpgroup product: the entry has no tensor maps for it");
    map_a_ = maps[first];
    map_b_ = maps[first + 1];

    init_barriers(tid, [&] {
      for (int s = 0; s < p_.stages; ++s) {
        init_barrier(full(i32(s)), 1);
        init_barrier(empty(i32(s)), 4 * p_.consumers * p_.cluster);
      }
    }, clustered());
    split_roles(tid, kProducerRegisters, kConsumerRegisters, [&] { produce(); },
                [&](llvm::Value* consumer, llvm::Value* thread) { consume(consumer, thread); });
  }

 private:
  // ---- the ring of stages

  llvm::Value* full(llvm::Value* s) { return b_.CreateAdd(barriers_, b_.CreateMul(s, i32(8))); }
  llvm::Value* empty(llvm::Value* s) { return b_.CreateAdd(barriers_, b_.CreateMul(b_.CreateAdd(s, i32(p_.stages)), i32(8))); }
  llvm::Value* a_tile(llvm::Value* s) { return b_.CreateAdd(base_, b_.CreateMul(s, i32(static_cast<int32_t>(p_.stage_tile_bytes())))); }
  llvm::Value* b_tile(llvm::Value* s) { return b_.CreateAdd(a_tile(s), i32(static_cast<int32_t>(a_tile_bytes()))); }
  int64_t a_tile_bytes() const { return int64_t{p_.tile_rows} * p_.tile_depth * static_cast<int64_t>(dtype_size(p_.a.dtype)); }
  int64_t depth_tiles() const { return (p_.depth + p_.tile_depth - 1) / p_.tile_depth; }

  bool clustered() const { return p_.cluster > 1; }

  // The tile of the block's turn `t` (cir::product_tile over the pairs of
  // row tiles in clusters, the block taking its own of the pair), as i32 values.
  struct Tile {
    llvm::Value *batch, *row0, *col0;
  };
  Tile tile_of(llvm::Value* t) {
    llvm::Value* row_tiles = b_.getInt64(p_.pair_row_tiles());
    llvm::Value* col_tiles = b_.getInt64(p_.col_tiles());
    llvm::Value* group = b_.getInt64(p_.group);
    llvm::Value* per_batch = b_.CreateMul(row_tiles, col_tiles);
    llvm::Value* in_batch = b_.CreateURem(t, per_batch);
    llvm::Value* per_group = b_.CreateMul(group, col_tiles);
    llvm::Value* first_row = b_.CreateMul(b_.CreateUDiv(in_batch, per_group), group);
    llvm::Value* left = b_.CreateSub(row_tiles, first_row);
    llvm::Value* rows_here = b_.CreateSelect(b_.CreateICmpULT(left, group), left, group);
    llvm::Value* in_group = b_.CreateURem(in_batch, per_group);
    llvm::Value* pair_row = b_.CreateAdd(first_row, b_.CreateURem(in_group, rows_here));
    llvm::Value* row_tile = b_.CreateAdd(b_.CreateMul(pair_row, b_.getInt64(p_.cluster)), rank_);
    llvm::Value* col_tile = b_.CreateUDiv(in_group, rows_here);
    auto narrow = [&](llvm::Value* v) { return b_.CreateTrunc(v, b_.getInt32Ty()); };
    return {narrow(b_.CreateUDiv(t, per_batch)), narrow(b_.CreateMul(row_tile, b_.getInt64(p_.tile_rows))),
            narrow(b_.CreateMul(col_tile, b_.getInt64(p_.tile_cols)))};
  }

  // for t = first_tile; t < turns; t += tile_stride: body(t), with the ring
  // position `it` (the depth steps taken so far) kept across tiles; returns
  // the position after the last.
  template <class Body>
  llvm::Value* for_each_tile(Body body) {
    llvm::Value* first = e_.expr(p_.first_tile);
    llvm::Value* stride = e_.expr(p_.tile_stride);
    llvm::BasicBlock* before = b_.GetInsertBlock();
    llvm::BasicBlock* head = block("wgp.tile");
    llvm::BasicBlock* run = block("wgp.tile.run");
    llvm::BasicBlock* done = block("wgp.tile.done");
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* t = b_.CreatePHI(b_.getInt64Ty(), 2);
    llvm::PHINode* it = b_.CreatePHI(b_.getInt32Ty(), 2);
    t->addIncoming(first, before);
    it->addIncoming(i32(0), before);
    b_.CreateCondBr(b_.CreateICmpSLT(t, b_.getInt64(p_.turns())), run, done);
    b_.SetInsertPoint(run);
    llvm::Value* it_after = body(t, it);
    t->addIncoming(b_.CreateAdd(t, stride), b_.GetInsertBlock());
    it->addIncoming(it_after, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
    return it;
  }

  // for kt in 0..depth_tiles: body(kt, it + kt); returns it + depth_tiles.
  template <class Body>
  llvm::Value* for_each_depth_step(llvm::Value* it0, Body body) {
    llvm::BasicBlock* before = b_.GetInsertBlock();
    llvm::BasicBlock* loop = block("wgp.step");
    llvm::BasicBlock* done = block("wgp.step.done");
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* kt = b_.CreatePHI(b_.getInt32Ty(), 2);
    kt->addIncoming(i32(0), before);
    body(kt, b_.CreateAdd(it0, kt));
    llvm::Value* next = b_.CreateAdd(kt, i32(1));
    kt->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpULT(next, i32(static_cast<int32_t>(depth_tiles()))), loop, done);
    b_.SetInsertPoint(done);
    return b_.CreateAdd(it0, i32(static_cast<int32_t>(depth_tiles())));
  }

  llvm::Value* stage_of(llvm::Value* it) { return b_.CreateURem(it, i32(p_.stages)); }
  llvm::Value* parity_of(llvm::Value* it) { return b_.CreateAnd(b_.CreateUDiv(it, i32(p_.stages)), i32(1)); }

  // ---- the producer

  // One operand's copies into its tile of a stage: a box of the depth step
  // by the side (K-major) or 64-index chunks of the side by the depth step.
  // `shared`: the tile is the cluster's, each block copying every
  // cluster-th box (from its rank on) into every block (K-major tiles in
  // as many boxes as the cluster has blocks: kernel_abi's box says so too).
  void copy_operand(const cir::ProductOperand& o, llvm::Value* map, llvm::Value* dst, llvm::Value* side0, llvm::Value* depth0,
                    llvm::Value* batch, int side_tile, llvm::Value* bar, bool shared) {
    int size = static_cast<int>(dtype_size(o.dtype));
    int share = shared ? p_.cluster : 1;
    int per_copy = o.k_major ? side_tile / share : wgmma::kRowBytes / size;
    int copies = side_tile / per_copy;
    int32_t copy_bytes = per_copy * p_.tile_depth * size;
    llvm::Value* everyone = shared ? b_.getInt16(static_cast<uint16_t>((1u << p_.cluster) - 1)) : nullptr;
    for (int c = 0; c < copies; c += share) {
      llvm::Value* box = shared ? b_.CreateAdd(i32(c), b_.CreateTrunc(rank_, b_.getInt32Ty())) : i32(c);
      llvm::Value* side = b_.CreateAdd(side0, b_.CreateMul(box, i32(per_copy)));
      std::vector<llvm::Value*> coords = o.k_major ? std::vector<llvm::Value*>{depth0, side} : std::vector<llvm::Value*>{side, depth0};
      if (o.rank == 3) coords.push_back(batch);
      tensor_copy(map, b_.CreateAdd(dst, b_.CreateMul(box, i32(copy_bytes))), coords, bar, everyone);
    }
  }

  void produce() {
    llvm::Value* map_a = b_.CreatePtrToInt(map_a_, b_.getInt64Ty());
    llvm::Value* map_b = b_.CreatePtrToInt(map_b_, b_.getInt64Ty());
    asm_void("prefetch.tensormap [$0];", "l", {map_a});
    asm_void("prefetch.tensormap [$0];", "l", {map_b});
    llvm::Value* it_end = for_each_tile([&](llvm::Value* t, llvm::Value* it0) {
      Tile tile = tile_of(t);
      return for_each_depth_step(it0, [&](llvm::Value* kt, llvm::Value* it) {
        llvm::Value* s = stage_of(it);
        wait(empty(s), b_.CreateXor(parity_of(it), i32(1)));
        llvm::Value* bar = full(s);
        // A's tile and all of B's land here (half of B from the partner, in clusters).
        arrive_expect_tx(bar, p_.stage_tile_bytes());
        llvm::Value* depth0 = b_.CreateMul(kt, i32(p_.tile_depth));
        copy_operand(p_.a, map_a, a_tile(s), tile.row0, depth0, tile.batch, p_.tile_rows, bar, false);
        copy_operand(p_.b, map_b, b_tile(s), tile.col0, depth0, tile.batch, p_.tile_cols, bar, clustered());
      });
    });
    // In clusters the block stays until both blocks' consumers have
    // released every stage: until then the partner may still arrive on
    // this block's barriers.
    if (clustered())
      for (int k = 0; k < p_.stages; ++k) {
        llvm::Value* it = b_.CreateAdd(it_end, i32(k));
        wait(empty(stage_of(it)), b_.CreateXor(parity_of(it), i32(1)));
      }
  }

  // ---- the consumers

  int accumulators() const { return p_.tile_cols / 2; }  // per thread: 64 x N over 128 threads

  // A TF32 first factor that is not K-major: wgmma reads it from registers
  // (kRegisterFragments per thread and step), loaded from its tile.
  bool a_in_registers() const { return p_.a.dtype == DType::F32 && !p_.a.k_major; }

  // The wgmma of one step: acc = A . B (+ acc where `accumulate`), A from
  // its descriptor (one value) or from registers (kRegisterFragments).
  void mma(const Registers& acc, const std::vector<llvm::Value*>& a, llvm::Value* b_desc, llvm::Value* accumulate) {
    WarpgroupIr::mma(acc, p_.a.dtype, p_.tile_cols, a, b_desc, accumulate, p_.a.k_major, p_.b.k_major);
  }

  // Where register j of this thread's first-factor fragment for wgmma step
  // 0 lies in the tile of A (MN-major, swizzled; wgmma_layout.hpp), from
  // the tile's first byte: i32. Step k's is kStepRows * kRowBytes * k bytes
  // on: its depth steps are 8 rows further, which the swizzle leaves alone.
  static constexpr int kStepRows = wgmma::kStepBytes / 4;
  static constexpr int kRegisterSteps = 2;
  llvm::Value* fragment_offset(llvm::Value* consumer, llvm::Value* thread, int j) {
    // register_fragment_row/depth with the thread's part as IR values.
    llvm::Value* side = b_.CreateAdd(b_.CreateAdd(b_.CreateMul(consumer, i32(64)), b_.CreateMul(b_.CreateLShr(thread, 5), i32(16))),
                                     b_.CreateAdd(b_.CreateLShr(b_.CreateAnd(thread, i32(31)), 2), i32(8 * (j % 2))));
    llvm::Value* depth = b_.CreateAdd(b_.CreateAnd(thread, i32(3)), i32(4 * (j / 2)));
    // tile_offset(false, tile_depth, 4, side, depth), then swizzle128.
    int per_chunk = wgmma::kRowBytes / 4;
    llvm::Value* offset = b_.CreateAdd(b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(side, i32(per_chunk)), i32(p_.tile_depth * wgmma::kRowBytes)),
                                                    b_.CreateMul(depth, i32(wgmma::kRowBytes))),
                                       b_.CreateMul(b_.CreateURem(side, i32(per_chunk)), i32(4)));
    return b_.CreateXor(offset, b_.CreateShl(b_.CreateAnd(b_.CreateLShr(offset, 7), i32(7)), 4));
  }

  // One fragment register: the f32 at `address` (shared) rounded to TF32.
  llvm::Value* load_tf32(llvm::Value* address) {
    return asm_value(b_.getInt32Ty(), "{ .reg .f32 f; ld.shared.f32 f, [$1]; cvt.rna.tf32.f32 $0, f; }", "=r,r", {address});
  }

  // Lane 0 of each warp says its warp is done with stage s, in clusters to
  // both blocks (either one's copies of B land in both).
  void release(llvm::Value* s, llvm::Value* lane) {
    if_then(b_.CreateICmpEQ(lane, i32(0)), "wgp.release", [&] {
      arrive(empty(s));
      if (clustered()) arrive_in_block(empty(s), partner_);
    });
  }

  void consume(llvm::Value* consumer, llvm::Value* thread) {
    Registers acc = registers(accumulators(), "wgp.acc");
    llvm::Value* lane = b_.CreateAnd(thread, i32(31));
    int size = static_cast<int>(dtype_size(p_.a.dtype));
    wgmma::TileDescriptor da = wgmma::tile_descriptor(p_.a.k_major, p_.tile_depth);
    wgmma::TileDescriptor db = wgmma::tile_descriptor(p_.b.k_major, p_.tile_depth);
    int steps = p_.tile_depth * size / wgmma::kStepBytes;
    // This consumer's 64 rows of A's tile: 64 K-major rows, or one 64-index chunk.
    int64_t rows_bytes = p_.a.k_major ? 64 * wgmma::kRowBytes : int64_t{p_.tile_depth} * wgmma::kRowBytes;
    llvm::Value* a_part = b_.CreateMul(consumer, i32(static_cast<int32_t>(rows_bytes)));
    auto desc = [&](llvm::Value* address, const wgmma::TileDescriptor& d) { return descriptor(address, d); };
    // The first factor's fragments: each register's offset in the tile at
    // step 0, the same for every stage.
    std::vector<llvm::Value*> fragments;
    if (a_in_registers())
      for (int j = 0; j < wgmma::kRegisterFragments; ++j) fragments.push_back(fragment_offset(consumer, thread, j));
    for_each_tile([&](llvm::Value* t, llvm::Value* it0) {
      llvm::Value* it_end = for_each_depth_step(it0, [&](llvm::Value* kt, llvm::Value* it) {
        llvm::Value* s = stage_of(it);
        wait(full(s), parity_of(it));
        llvm::Value* b0 = b_tile(s);
        auto accumulate = [&](int k) { return k == 0 ? b_.CreateZExt(b_.CreateICmpNE(kt, i32(0)), b_.getInt32Ty()) : i32(1); };
        if (a_in_registers()) {
          // kRegisterSteps wgmma steps at a time: their fragments, the
          // wgmmas, then a wait for them, since the next ones rewrite the
          // registers these read (the other consumer warpgroup keeps the
          // matrix units busy meanwhile). Fewer steps in registers at once
          // leave the 64 x 256 accumulators room.
          for (int k0 = 0; k0 < steps; k0 += kRegisterSteps) {
            int k1 = std::min(steps, k0 + kRegisterSteps);
            std::vector<std::vector<llvm::Value*>> a(static_cast<size_t>(k1 - k0));
            for (llvm::Value* offset : fragments) {
              llvm::Value* at = b_.CreateAdd(a_tile(s), offset);
              for (int k = k0; k < k1; ++k) a[static_cast<size_t>(k - k0)].push_back(load_tf32(b_.CreateAdd(at, i32(k * kStepRows * wgmma::kRowBytes))));
            }
            fence();
            for (int k = k0; k < k1; ++k)
              mma(acc, a[static_cast<size_t>(k - k0)], desc(b_.CreateAdd(b0, i32(static_cast<int32_t>(k * db.step_bytes))), db), accumulate(k));
            commit();
            wait_group(acc, 0);
          }
          // The stage is read whole.
          release(s, lane);
          return;
        }
        llvm::Value* a0 = b_.CreateAdd(a_tile(s), a_part);
        fence();
        for (int k = 0; k < steps; ++k)
          mma(acc, {desc(b_.CreateAdd(a0, i32(static_cast<int32_t>(k * da.step_bytes))), da)},
              desc(b_.CreateAdd(b0, i32(static_cast<int32_t>(k * db.step_bytes))), db), accumulate(k));
        commit();
        // The previous step's products are done: its stage goes back.
        wait_group(acc, 1);
        if_then(b_.CreateICmpNE(kt, i32(0)), "wgp.previous", [&] { release(stage_of(b_.CreateSub(it, i32(1))), lane); });
      });
      if (!a_in_registers()) {
        wait_group(acc, 0);
        release(stage_of(b_.CreateSub(it_end, i32(1))), lane);
      }
      // The tile's place, found only now: no register holds it through the steps.
      epilogue(acc, tile_of(t), consumer, thread);
      return it_end;
    });
  }

  // The epilogue once per accumulator element, its row and column from
  // the m64nNk16 layout (wgmma_layout.hpp).
  void epilogue(const Registers& acc, const Tile& tile, llvm::Value* consumer, llvm::Value* thread) {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Value* warp = b_.CreateZExt(b_.CreateLShr(thread, 5), i64);
    llvm::Value* lane = b_.CreateZExt(b_.CreateAnd(thread, i32(31)), i64);
    llvm::Value* row_base = b_.CreateAdd(b_.CreateAdd(b_.CreateZExt(tile.row0, i64), b_.CreateMul(b_.CreateZExt(consumer, i64), b_.getInt64(64))),
                                         b_.CreateAdd(b_.CreateMul(warp, b_.getInt64(16)), b_.CreateLShr(lane, 2)));
    llvm::Value* col_base = b_.CreateAdd(b_.CreateZExt(tile.col0, i64), b_.CreateMul(b_.CreateAnd(lane, b_.getInt64(3)), b_.getInt64(2)));
    llvm::Value* batch = b_.CreateZExt(tile.batch, i64);
    for (int i = 0; i < accumulators(); ++i) {
      // accumulator_row/col with the thread's part taken out: what register i adds.
      llvm::Value* row = b_.CreateAdd(row_base, b_.getInt64(8 * ((i / 2) % 2)));
      llvm::Value* col = b_.CreateAdd(col_base, b_.getInt64(8 * (i / 4) + i % 2));
      llvm::Value* value = load(acc, i);
      e_.emit_with({{p_.batch_var, batch}, {p_.row, row}, {p_.col, col}, {p_.value, value}}, p_.epilogue);
    }
  }

  const cir::WarpgroupProduct& p_;
  llvm::Value* base_ = nullptr;      // i32 shared address of stage 0
  llvm::Value* barriers_ = nullptr;  // of full[0]; empty[s] follow the full ones
  llvm::Value *map_a_ = nullptr, *map_b_ = nullptr;  // its factors' tensor-map parameters
  llvm::Value* rank_ = nullptr;     // i64: the block's place in its cluster (0 outside clusters)
  llvm::Value* partner_ = nullptr;  // i32: the other block's cluster rank, in clusters
};

}  // namespace

void NvptxLlvmTarget::emit_warpgroup_product(Emitter& e, const cir::WarpgroupProduct& p) const {
  WarpgroupProductEmitter(e, p).run();
}

}  // namespace zyntax::codegen
