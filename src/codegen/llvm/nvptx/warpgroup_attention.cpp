// A block's share of a warpgroup attention (cir::WarpgroupAttention) for
// Hopper (sm_90a), as LLVM IR with inline PTX, the flash-attention way:
//
//   warpgroup 0, the producer (registers given back: setmaxnreg.dec 24),
//   thread 0, for each query tile:
//     wait until the query tile is free; the copy engine brings it (q_full)
//     for each key tile (ring stage s): wait until stage s is free, bring
//     its keys (k_full[s]) and then its values (v_full[s])
//   warpgroups 1..consumers (setmaxnreg.inc 240), 64 query rows each:
//     wait for the queries; m = -inf, l = 0, O = 0 (registers)
//     for each key tile:
//       wait for its keys; S = Q K^T (wgmma m64n{keys}k16, both factors
//       from shared memory); release the keys
//       mask keys past the end and, under a causal mask, past the row
//       the online softmax in registers: a row's scores lie in 4 lanes of
//       a quad (wgmma_layout.hpp), whose maxima meet by two shuffles;
//       m_new = max(m, max S * scale'), P = 2^(S * scale' - m_new) with
//       scale' = scale * log2(e), l = l * 2^(m - m_new) + (this thread's
//       sum of P), O *= 2^(m - m_new)
//       P rounded to the values' type, two to a register: the accumulator
//       layout of S is the register layout wgmma reads a first factor in,
//       so P goes to the second product without leaving registers
//       wait for its values; O += P V (wgmma m64n{head_dim}k16, V from
//       shared memory, MN-major); release the values
//     release the queries; l summed over the quad; the epilogue on O / l
//
// Every wait is bounded (WarpgroupIr::wait): a pipeline fault is an error.
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cmath>
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

constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;
constexpr int kHeadStep = cir::WarpgroupAttention::kHeadStep;

class WarpgroupAttentionEmitter : WarpgroupIr {
 public:
  WarpgroupAttentionEmitter(Emitter& e, const cir::WarpgroupAttention& a) : WarpgroupIr(e), a_(a) {}

  void run() {
    if (a_.head_dim % kHeadStep != 0 || a_.tile_keys % 16 != 0 || a_.tile_rows != 64 * a_.consumers)
      throw std::logic_error("warpgroup attention: tiles the lowering does not take");
    llvm::Value* tid = b_.CreateTrunc(e_.gpu_coordinate(cir::GpuIndexKind::ThreadIdx, 0), b_.getInt32Ty());
    e_.check(b_.CreateICmpEQ(e_.gpu_coordinate(cir::GpuIndexKind::BlockDim, 0), b_.getInt64(a_.threads())), a_.span,
             "the GPU block has other than the warpgroup attention's " + std::to_string(a_.threads()) + " threads");
    llvm::Value* raw = b_.CreatePtrToInt(e_.buffer(a_.stage).ptr, b_.getInt32Ty());
    base_ = b_.CreateAnd(b_.CreateAdd(raw, i32(wgmma::kAtomBytes - 1)), i32(~(wgmma::kAtomBytes - 1)));
    barriers_ = b_.CreateAdd(base_, i32(static_cast<int32_t>(a_.q_tile_bytes() + 2 * a_.stages * a_.kv_tile_bytes())));
    const std::vector<llvm::Value*>& maps = tensor_map_args(e_);
    size_t first = tensor_maps_before(e_.kernel(), &a_);
    if (maps.size() < first + 3) throw std::logic_error("warpgroup attention: the entry has no tensor maps for it");
    map_q_ = maps[first];
    map_k_ = maps[first + 1];
    map_v_ = maps[first + 2];

    int arrivals = 4 * a_.consumers;  // lane 0 of each consumer warp
    init_barriers(tid, [&] {
      init_barrier(q_full(), 1);
      init_barrier(q_empty(), arrivals);
      for (int s = 0; s < a_.stages; ++s) {
        init_barrier(k_full(i32(s)), 1);
        init_barrier(k_empty(i32(s)), arrivals);
        init_barrier(v_full(i32(s)), 1);
        init_barrier(v_empty(i32(s)), arrivals);
      }
    });
    split_roles(tid, kProducerRegisters, kConsumerRegisters, [&] { produce(); },
                [&](llvm::Value* consumer, llvm::Value* thread) { consume(consumer, thread); });
  }

 private:
  // ---- shared memory: the query tile, then per stage a key and a value
  // tile, then the barriers. Each tile is a run of 64-wide head-dimension
  // chunks of rows * 128 bytes (K-major queries and keys: a row per query
  // or key; MN-major values: a row per key).

  int64_t chunk_bytes(int rows) const { return int64_t{rows} * wgmma::kRowBytes; }
  llvm::Value* q_tile() { return base_; }
  llvm::Value* k_tile(llvm::Value* s) {
    return b_.CreateAdd(base_, b_.CreateAdd(i32(static_cast<int32_t>(a_.q_tile_bytes())),
                                            b_.CreateMul(s, i32(static_cast<int32_t>(2 * a_.kv_tile_bytes())))));
  }
  llvm::Value* v_tile(llvm::Value* s) { return b_.CreateAdd(k_tile(s), i32(static_cast<int32_t>(a_.kv_tile_bytes()))); }
  llvm::Value* bar(int index) { return b_.CreateAdd(barriers_, i32(8 * index)); }
  llvm::Value* bar(int first, llvm::Value* s) { return b_.CreateAdd(barriers_, b_.CreateMul(b_.CreateAdd(s, i32(first)), i32(8))); }
  llvm::Value* q_full() { return bar(0); }
  llvm::Value* q_empty() { return bar(1); }
  llvm::Value* k_full(llvm::Value* s) { return bar(2, s); }
  llvm::Value* k_empty(llvm::Value* s) { return bar(2 + a_.stages, s); }
  llvm::Value* v_full(llvm::Value* s) { return bar(2 + 2 * a_.stages, s); }
  llvm::Value* v_empty(llvm::Value* s) { return bar(2 + 3 * a_.stages, s); }

  llvm::Value* stage_of(llvm::Value* it) { return b_.CreateURem(it, i32(a_.stages)); }
  llvm::Value* parity_of(llvm::Value* it) { return b_.CreateAnd(b_.CreateUDiv(it, i32(a_.stages)), i32(1)); }
  int head_chunks() const { return static_cast<int>(a_.head_dim / kHeadStep); }

  // The tile of turn `t` (cir::attention_tile): batch element and first row, i32.
  struct Tile {
    llvm::Value *batch, *row0;
  };
  Tile tile_of(llvm::Value* t) {
    llvm::Value* batches = b_.getInt64(a_.batches);
    llvm::Value* row_tile = b_.CreateSub(b_.getInt64(a_.row_tiles() - 1), b_.CreateUDiv(t, batches));
    return {b_.CreateTrunc(b_.CreateURem(t, batches), b_.getInt32Ty()),
            b_.CreateTrunc(b_.CreateMul(row_tile, b_.getInt64(a_.tile_rows)), b_.getInt32Ty())};
  }
  // The key tiles of a query tile (WarpgroupAttention::key_tiles), i32.
  llvm::Value* key_tiles(llvm::Value* row0) {
    llvm::Value* seen = i32(static_cast<int32_t>(a_.keys));
    if (a_.causal) {
      llvm::Value* end = b_.CreateAdd(row0, i32(a_.tile_rows));
      seen = b_.CreateSelect(b_.CreateICmpULT(end, seen), end, seen);
    }
    return b_.CreateUDiv(b_.CreateAdd(seen, i32(a_.tile_keys - 1)), i32(a_.tile_keys));
  }

  // for t = first_tile; t < tiles; t += tile_stride: body(t, n, it) with n
  // the block's tiles so far and `it` its key tiles so far (the ring's
  // position); body returns `it` after the tile.
  template <class Body>
  void for_each_tile(Body body) {
    llvm::Value* first = e_.expr(a_.first_tile);
    llvm::Value* stride = e_.expr(a_.tile_stride);
    llvm::BasicBlock* before = b_.GetInsertBlock();
    llvm::BasicBlock* head = block("wga.tile");
    llvm::BasicBlock* run = block("wga.tile.run");
    llvm::BasicBlock* done = block("wga.tile.done");
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* t = b_.CreatePHI(b_.getInt64Ty(), 2);
    llvm::PHINode* n = b_.CreatePHI(b_.getInt32Ty(), 2);
    llvm::PHINode* it = b_.CreatePHI(b_.getInt32Ty(), 2);
    t->addIncoming(first, before);
    n->addIncoming(i32(0), before);
    it->addIncoming(i32(0), before);
    b_.CreateCondBr(b_.CreateICmpSLT(t, b_.getInt64(a_.tiles())), run, done);
    b_.SetInsertPoint(run);
    llvm::Value* it_after = body(t, n, it);
    t->addIncoming(b_.CreateAdd(t, stride), b_.GetInsertBlock());
    n->addIncoming(b_.CreateAdd(n, i32(1)), b_.GetInsertBlock());
    it->addIncoming(it_after, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  }

  // for kb in 0..count: body(kb, it0 + kb); returns it0 + count. At least
  // one key tile always: every row sees key 0.
  template <class Body>
  llvm::Value* for_each_key_tile(llvm::Value* count, llvm::Value* it0, Body body) {
    llvm::BasicBlock* before = b_.GetInsertBlock();
    llvm::BasicBlock* loop = block("wga.keys");
    llvm::BasicBlock* done = block("wga.keys.done");
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* kb = b_.CreatePHI(b_.getInt32Ty(), 2);
    kb->addIncoming(i32(0), before);
    body(kb, b_.CreateAdd(it0, kb));
    llvm::Value* next = b_.CreateAdd(kb, i32(1));
    kb->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpULT(next, count), loop, done);
    b_.SetInsertPoint(done);
    return b_.CreateAdd(it0, count);
  }

  // ---- the producer

  // A tile's chunks: K-major boxes of 64 head-dimension steps by `rows`
  // (queries, keys), or MN-major boxes of 64 head-dimension indices by
  // `rows` keys (values): the same coordinates, fastest first.
  void copy_tile(llvm::Value* map, llvm::Value* dst, llvm::Value* row0, llvm::Value* batch, int rows, llvm::Value* barrier) {
    for (int c = 0; c < head_chunks(); ++c)
      tensor_copy(map, b_.CreateAdd(dst, i32(static_cast<int32_t>(c * chunk_bytes(rows)))), {i32(c * kHeadStep), row0, batch}, barrier);
  }

  void produce() {
    llvm::Value* map_q = b_.CreatePtrToInt(map_q_, b_.getInt64Ty());
    llvm::Value* map_k = b_.CreatePtrToInt(map_k_, b_.getInt64Ty());
    llvm::Value* map_v = b_.CreatePtrToInt(map_v_, b_.getInt64Ty());
    for (llvm::Value* m : {map_q, map_k, map_v}) asm_void("prefetch.tensormap [$0];", "l", {m});
    for_each_tile([&](llvm::Value* t, llvm::Value* n, llvm::Value* it0) {
      Tile tile = tile_of(t);
      wait(q_empty(), b_.CreateXor(b_.CreateAnd(n, i32(1)), i32(1)));
      arrive_expect_tx(q_full(), a_.q_tile_bytes());
      copy_tile(map_q, q_tile(), tile.row0, tile.batch, a_.tile_rows, q_full());
      return for_each_key_tile(key_tiles(tile.row0), it0, [&](llvm::Value* kb, llvm::Value* it) {
        llvm::Value* s = stage_of(it);
        llvm::Value* free = b_.CreateXor(parity_of(it), i32(1));
        llvm::Value* key0 = b_.CreateMul(kb, i32(a_.tile_keys));
        wait(k_empty(s), free);
        arrive_expect_tx(k_full(s), a_.kv_tile_bytes());
        copy_tile(map_k, k_tile(s), key0, tile.batch, a_.tile_keys, k_full(s));
        wait(v_empty(s), free);
        arrive_expect_tx(v_full(s), a_.kv_tile_bytes());
        copy_tile(map_v, v_tile(s), key0, tile.batch, a_.tile_keys, v_full(s));
      });
    });
  }

  // ---- the consumers

  // Lane 0 of each warp says its warp is done with what `barrier` guards.
  void release(llvm::Value* barrier, llvm::Value* lane) {
    if_then(b_.CreateICmpEQ(lane, i32(0)), "wga.release", [&] { arrive(barrier); });
  }

  llvm::Value* f32(double v) { return llvm::ConstantFP::get(b_.getFloatTy(), v); }
  llvm::Value* ex2(llvm::Value* x) { return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {x}); }
  llvm::Value* fmax(llvm::Value* x, llvm::Value* y) { return b_.CreateMaxNum(x, y); }
  llvm::Value* shuffle_xor(llvm::Value* x, int mask) {
    return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, {}, {i32(-1), x, i32(mask), i32(31)});
  }
  // Two f32 into one register of two 16-bit values, the first in the low half.
  llvm::Value* pack(llvm::Value* lo, llvm::Value* hi) {
    const char* type = a_.v.dtype == DType::F16 ? "f16x2" : "bf16x2";
    return asm_value(b_.getInt32Ty(), std::string("cvt.rn.") + type + ".f32 $0, $1, $2;", "=r,f,f", {hi, lo});
  }

  // Which of a thread's two rows accumulator register i holds (0: the upper).
  static int half_of(int i) { return (i / 2) % 2; }

  void consume(llvm::Value* consumer, llvm::Value* thread) {
    int score_regs = a_.tile_keys / 2, out_regs = static_cast<int>(a_.head_dim / 2);
    Registers S = registers(score_regs, "wga.s");
    Registers O = registers(out_regs, "wga.o");
    Registers m = registers(2, "wga.m"), l = registers(2, "wga.l");
    llvm::Value* lane = b_.CreateAnd(thread, i32(31));
    const double scale = a_.scale * M_LOG2E;
    wgmma::TileDescriptor k_major = wgmma::tile_descriptor(true, kHeadStep);
    wgmma::TileDescriptor values = wgmma::tile_descriptor(false, a_.tile_keys);
    // This consumer's rows of the query tile: 64 rows of each chunk.
    llvm::Value* q_rows = b_.CreateAdd(q_tile(), b_.CreateMul(consumer, i32(64 * wgmma::kRowBytes)));
    // A thread's rows and first column in the accumulator layout (wgmma_layout.hpp).
    llvm::Value* row_in = b_.CreateAdd(b_.CreateMul(consumer, i32(64)),
                                       b_.CreateAdd(b_.CreateMul(b_.CreateLShr(thread, 5), i32(16)), b_.CreateLShr(lane, 2)));
    llvm::Value* col_in = b_.CreateMul(b_.CreateAnd(lane, i32(3)), i32(2));
    int steps = static_cast<int>(a_.head_dim / 16);

    for_each_tile([&](llvm::Value* t, llvm::Value* n, llvm::Value* it0) {
      Tile tile = tile_of(t);
      for (int h = 0; h < 2; ++h) {
        store(m, h, f32(-INFINITY));
        store(l, h, f32(0.0));
      }
      for (int i = 0; i < out_regs; ++i) store(O, i, f32(0.0));
      wait(q_full(), b_.CreateAnd(n, i32(1)));
      llvm::Value* row = b_.CreateAdd(tile.row0, row_in);  // the thread's upper row; the lower is 8 on
      // The first row of this consumer: a key tile past it needs the causal mask.
      llvm::Value* first_row = b_.CreateAdd(tile.row0, b_.CreateMul(consumer, i32(64)));
      llvm::Value* it_end = for_each_key_tile(key_tiles(tile.row0), it0, [&](llvm::Value* kb, llvm::Value* it) {
        llvm::Value* s = stage_of(it);
        llvm::Value* parity = parity_of(it);
        llvm::Value* key0 = b_.CreateMul(kb, i32(a_.tile_keys));
        // S = Q K^T
        wait(k_full(s), parity);
        fence();
        llvm::Value* keys = k_tile(s);
        for (int k = 0; k < steps; ++k) {
          int chunk = k / 4, within = (k % 4) * wgmma::kStepBytes;
          llvm::Value* qa = b_.CreateAdd(q_rows, i32(static_cast<int32_t>(chunk * chunk_bytes(a_.tile_rows) + within)));
          llvm::Value* kbase = b_.CreateAdd(keys, i32(static_cast<int32_t>(chunk * chunk_bytes(a_.tile_keys) + within)));
          mma(S, a_.q.dtype, a_.tile_keys, {descriptor(qa, k_major)}, descriptor(kbase, k_major), i32(k == 0 ? 0 : 1), true, true);
        }
        commit();
        wait_group(S, 0);
        release(k_empty(s), lane);
        // Keys past the end, and under a causal mask keys past the row, score -inf.
        llvm::Value* last_key = b_.CreateAdd(key0, i32(a_.tile_keys - 1));
        llvm::Value* masked = b_.CreateICmpSGE(last_key, i32(static_cast<int32_t>(a_.keys)));
        if (a_.causal) masked = b_.CreateOr(masked, b_.CreateICmpSGT(last_key, first_row));
        if_then(masked, "wga.mask", [&] {
          for (int i = 0; i < score_regs; ++i) {
            llvm::Value* col = b_.CreateAdd(b_.CreateAdd(key0, col_in), i32(wgmma::accumulator_col(0, i)));
            llvm::Value* out = b_.CreateICmpSGE(col, i32(static_cast<int32_t>(a_.keys)));
            if (a_.causal) out = b_.CreateOr(out, b_.CreateICmpSGT(col, b_.CreateAdd(row, i32(8 * half_of(i)))));
            store(S, i, b_.CreateSelect(out, f32(-INFINITY), load(S, i)));
          }
        });
        // The online softmax, a row at a time (each thread holds two).
        llvm::Value* alpha[2];
        llvm::Value* m_new[2];
        for (int h = 0; h < 2; ++h) {
          llvm::Value* mx = f32(-INFINITY);
          for (int i = 0; i < score_regs; ++i)
            if (half_of(i) == h) mx = fmax(mx, load(S, i));
          mx = fmax(mx, shuffle_xor(mx, 1));
          mx = fmax(mx, shuffle_xor(mx, 2));
          llvm::Value* old = load(m, h);
          m_new[h] = fmax(old, b_.CreateFMul(mx, f32(scale)));
          alpha[h] = ex2(b_.CreateFSub(old, m_new[h]));
          store(m, h, m_new[h]);
        }
        llvm::Value* sum[2] = {f32(0.0), f32(0.0)};
        std::vector<llvm::Value*> p(static_cast<size_t>(score_regs));
        for (int i = 0; i < score_regs; ++i) {
          int h = half_of(i);
          // 2^(s * scale' - m_new): a fused multiply-add, as exp(S - m_new) up to rounding.
          llvm::Value* x = b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()}, {load(S, i), f32(scale), b_.CreateFNeg(m_new[h])});
          p[static_cast<size_t>(i)] = ex2(x);
          sum[h] = b_.CreateFAdd(sum[h], p[static_cast<size_t>(i)]);
        }
        for (int h = 0; h < 2; ++h) store(l, h, b_.CreateFAdd(b_.CreateFMul(load(l, h), alpha[h]), sum[h]));
        for (int i = 0; i < out_regs; ++i) store(O, i, b_.CreateFMul(load(O, i), alpha[half_of(i)]));
        // P as the first factor: step k's four registers are S's accumulators 8k..8k+7 in pairs.
        std::vector<llvm::Value*> packed;
        for (int i = 0; i < score_regs; i += 2) packed.push_back(pack(p[static_cast<size_t>(i)], p[static_cast<size_t>(i + 1)]));
        // O += P V
        wait(v_full(s), parity);
        fence();
        llvm::Value* vals = v_tile(s);
        for (int k = 0; k < a_.tile_keys / 16; ++k) {
          std::vector<llvm::Value*> a(packed.begin() + 4 * k, packed.begin() + 4 * k + 4);
          llvm::Value* vb = b_.CreateAdd(vals, i32(static_cast<int32_t>(k * values.step_bytes)));
          mma(O, a_.v.dtype, static_cast<int>(a_.head_dim), a, descriptor(vb, values), i32(1), true, false);
        }
        commit();
        wait_group(O, 0);
        release(v_empty(s), lane);
      });
      release(q_empty(), lane);
      // Each row's sum over its quad, then O / l.
      llvm::Value* total[2];
      for (int h = 0; h < 2; ++h) {
        llvm::Value* x = load(l, h);
        x = b_.CreateFAdd(x, shuffle_xor(x, 1));
        total[h] = b_.CreateFAdd(x, shuffle_xor(x, 2));
      }
      epilogue(O, tile, row_in, col_in, total);
      return it_end;
    });
  }

  // The epilogue once per output register: its row and column from the
  // accumulator layout.
  void epilogue(const Registers& O, const Tile& tile, llvm::Value* row_in, llvm::Value* col_in, llvm::Value* total[2]) {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Value* row_base = b_.CreateZExt(b_.CreateAdd(tile.row0, row_in), i64);
    llvm::Value* col_base = b_.CreateZExt(col_in, i64);
    llvm::Value* batch = b_.CreateZExt(tile.batch, i64);
    for (int i = 0; i < O.count; ++i) {
      llvm::Value* row = b_.CreateAdd(row_base, b_.getInt64(8 * half_of(i)));
      llvm::Value* col = b_.CreateAdd(col_base, b_.getInt64(wgmma::accumulator_col(0, i)));
      llvm::Value* value = b_.CreateFDiv(load(O, i), total[half_of(i)]);
      e_.emit_with({{a_.batch_var, batch}, {a_.row, row}, {a_.col, col}, {a_.value, value}}, a_.epilogue);
    }
  }

  const cir::WarpgroupAttention& a_;
  llvm::Value* base_ = nullptr;      // i32 shared address of the query tile
  llvm::Value* barriers_ = nullptr;  // of q_full; the others follow
  llvm::Value *map_q_ = nullptr, *map_k_ = nullptr, *map_v_ = nullptr;
};

}  // namespace

void NvptxLlvmTarget::emit_warpgroup_attention(Emitter& e, const cir::WarpgroupAttention& a) const {
  WarpgroupAttentionEmitter(e, a).run();
}

}  // namespace zyntax::codegen
