// The Hopper warpgroup product's layout, run on the CPU
// (codegen/llvm/nvptx/wgmma_layout.hpp): factor tiles written into a
// shared-memory image the way the tensor copy engine writes them (128-byte
// swizzle), read back through the wgmma descriptors the emitter makes, as
// the PTX ISA's canonical layouts read them (K-major: ((8,m),(T,2k)) with
// the stride offset between 8-row groups; MN-major: ((T,8,m),(8,k)) with the
// leading offset between 64-index chunks and the stride offset between
// 8-step groups), multiplied per wgmma step and scattered through the
// m64nNk16 accumulator layout: element by element the reference product, for
// every combination of operand majors, both element sizes and both tile
// widths. And the ring of stage barriers, for every count of depth steps
// and tiles a block takes.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "codegen/llvm/nvptx/wgmma_layout.hpp"

namespace zyntax {
namespace {

namespace w = codegen::wgmma;

TEST(WgmmaLayout, SwizzleIsAPermutationOfEachAtom) {
  std::vector<int> seen(w::kAtomBytes / 16, 0);
  for (uint32_t chunk = 0; chunk < w::kAtomBytes; chunk += 16) {
    uint32_t s = w::swizzle128(chunk);
    ASSERT_LT(s, static_cast<uint32_t>(w::kAtomBytes));
    EXPECT_EQ(w::swizzle128(s), chunk) << "an involution";
    ++seen[s / 16];
    EXPECT_EQ(w::swizzle128(chunk + 3), s + 3) << "bytes keep their place in a 16-byte chunk";
    EXPECT_EQ(w::swizzle128(chunk + 2048) , s + 2048) << "atoms keep their place";
  }
  for (int n : seen) EXPECT_EQ(n, 1);
  // Row r's chunk c lands in chunk c ^ r.
  EXPECT_EQ(w::swizzle128(3 * 128 + 5 * 16), 3u * 128 + (5 ^ 3) * 16);
}

TEST(WgmmaLayout, DescriptorFieldsRoundTrip) {
  uint64_t d = w::descriptor(0x2F400, 8192, 1024);
  EXPECT_EQ(w::descriptor_address(d), 0x2F400u);
  EXPECT_EQ(w::descriptor_leading(d), 8192u);
  EXPECT_EQ(w::descriptor_stride(d), 1024u);
  EXPECT_EQ(d >> 62, 1u) << "128-byte swizzle";
  EXPECT_EQ((d >> 49) & 7, 0u) << "base offset 0: stages start at 1024-byte boundaries";
  // Adding a step's bytes to the address field moves only it.
  uint64_t next = d + (w::tile_descriptor(true, 64).step_bytes >> 4);
  EXPECT_EQ(w::descriptor_address(next), 0x2F400u + 32);
  EXPECT_EQ(w::descriptor_leading(next), 8192u);
}

// A shared-memory image of one stage: the A tile (rows x depth) then the
// B tile (cols x depth), each written as the copy engine writes it.
struct Stage {
  std::vector<uint8_t> bytes;
  uint32_t a = 0, b = 0;
};

// Element values are small integers stored as float or as int16 "halves"
// (exact in either): what matters is where each lands.
void put(std::vector<uint8_t>& mem, uint32_t at, int size, float v) {
  if (size == 4) {
    std::memcpy(&mem[at], &v, 4);
  } else {
    auto h = static_cast<int16_t>(v);
    std::memcpy(&mem[at], &h, 2);
  }
}
float get(const std::vector<uint8_t>& mem, uint32_t at, int size) {
  if (size == 4) {
    float v;
    std::memcpy(&v, &mem[at], 4);
    return v;
  }
  int16_t h;
  std::memcpy(&h, &mem[at], 2);
  return h;
}

// The tensor copy engine's writes of a side x depth tile, box by box
// (K-major: one box of depth x side; MN-major: boxes of 128 bytes of side
// indices by depth, one after another), each box's bytes swizzled.
void copy_tile(std::vector<uint8_t>& mem, uint32_t base, bool k_major, int side, int depth, int size,
               const std::vector<float>& tile /* [side][depth] */) {
  for (int s = 0; s < side; ++s)
    for (int d = 0; d < depth; ++d) {
      uint32_t linear = w::tile_offset(k_major, depth, size, s, d);
      // The swizzle permutes within each 1024-byte atom of the box; boxes
      // start at multiples of 1024 bytes, so the tile's own offset does.
      put(mem, base + w::swizzle128(linear), size, tile[static_cast<size_t>(s * depth + d)]);
    }
}

// What wgmma reads as element (side index i, depth index k) of the 64 x N
// (A) or N x 16 (B) operand its descriptor describes, in the canonical
// layouts with the 128-byte swizzle applied to the computed address.
float read_operand(const std::vector<uint8_t>& mem, uint64_t desc, bool k_major, int size, int i, int k) {
  uint32_t start = w::descriptor_address(desc), lbo = w::descriptor_leading(desc), sbo = w::descriptor_stride(desc);
  uint32_t addr;
  if (k_major) {
    // ((8,m),(T,2k)):((8T,SBO),(1,T)) in 16-byte units: rows of 128 bytes, 8-row groups SBO apart.
    addr = start + static_cast<uint32_t>(i / 8) * sbo + static_cast<uint32_t>(i % 8) * w::kRowBytes + static_cast<uint32_t>(k * size);
  } else {
    // ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)): 128 bytes of side indices, 64-index chunks LBO apart, 8-step groups SBO apart.
    int per_chunk = w::kRowBytes / size;
    addr = start + static_cast<uint32_t>(i / per_chunk) * lbo + static_cast<uint32_t>(i % per_chunk * size) + static_cast<uint32_t>(k / 8) * sbo +
           static_cast<uint32_t>(k % 8) * w::kRowBytes;
  }
  return get(mem, w::swizzle128(addr), size);
}

// The whole tile product as the consumers compute it: for each consumer c
// (rows 64c..64c+63), each wgmma step, the descriptors the emitter makes;
// each thread's accumulators scattered to the tile through the layout.
std::vector<double> tile_product(const Stage& st, bool a_major, bool b_major, int rows, int cols, int depth, int size) {
  std::vector<double> out(static_cast<size_t>(rows * cols), 0.0);
  w::TileDescriptor da = w::tile_descriptor(a_major, depth), db = w::tile_descriptor(b_major, depth);
  int k_per_step = w::kStepBytes / size, steps = depth / k_per_step;
  for (int c = 0; c < rows / 64; ++c) {
    uint32_t a_part = st.a + static_cast<uint32_t>(c) * (a_major ? 64u * w::kRowBytes : static_cast<uint32_t>(depth) * w::kRowBytes);
    std::vector<double> acc(static_cast<size_t>(w::kWarpgroupThreads * cols / 2), 0.0);
    for (int step = 0; step < steps; ++step) {
      uint64_t a_desc = w::descriptor(a_part + static_cast<uint32_t>(step) * da.step_bytes, da.leading, da.stride);
      uint64_t b_desc = w::descriptor(st.b + static_cast<uint32_t>(step) * db.step_bytes, db.leading, db.stride);
      for (int t = 0; t < w::kWarpgroupThreads; ++t)
        for (int i = 0; i < cols / 2; ++i) {
          int r = w::accumulator_row(t, i), n = w::accumulator_col(t, i);
          double sum = 0;
          for (int k = 0; k < k_per_step; ++k)
            sum += static_cast<double>(read_operand(st.bytes, a_desc, a_major, size, r, k)) * read_operand(st.bytes, b_desc, b_major, size, n, k);
          acc[static_cast<size_t>(t * (cols / 2) + i)] += sum;
        }
    }
    for (int t = 0; t < w::kWarpgroupThreads; ++t)
      for (int i = 0; i < cols / 2; ++i) {
        size_t at = static_cast<size_t>((64 * c + w::accumulator_row(t, i)) * cols + w::accumulator_col(t, i));
        EXPECT_EQ(out[at], 0.0) << "two registers claim one element";
        out[at] = acc[static_cast<size_t>(t * (cols / 2) + i)];
      }
  }
  return out;
}

TEST(WgmmaLayout, SwizzledTilesThroughDescriptorsGiveTheProduct) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(-8, 8);
  for (int size : {2, 4})
    for (int cols : {128, 256})
      for (bool a_major : {true, false})
        for (bool b_major : {true, false}) {
          if (size == 4 && !(a_major && b_major)) continue;  // TF32 descriptors read K-major factors only (see below)
          const int rows = 128, depth = w::kRowBytes / size;
          std::vector<float> a(static_cast<size_t>(rows * depth)), b(static_cast<size_t>(cols * depth));
          for (float& x : a) x = static_cast<float>(value(rng));
          for (float& x : b) x = static_cast<float>(value(rng));
          Stage st;
          st.a = 4096;  // a stage at a 1024-byte boundary past the start
          st.b = st.a + static_cast<uint32_t>(rows * depth * size);
          st.bytes.assign(st.b + static_cast<size_t>(cols * depth * size) + 1024, 0);
          copy_tile(st.bytes, st.a, a_major, rows, depth, size, a);
          copy_tile(st.bytes, st.b, b_major, cols, depth, size, b);
          std::vector<double> got = tile_product(st, a_major, b_major, rows, cols, depth, size);
          for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) {
              double want = 0;
              for (int k = 0; k < depth; ++k) want += static_cast<double>(a[static_cast<size_t>(r * depth + k)]) * b[static_cast<size_t>(c * depth + k)];
              ASSERT_EQ(got[static_cast<size_t>(r * cols + c)], want)
                  << "size " << size << " cols " << cols << " a " << (a_major ? "K" : "MN") << "-major b " << (b_major ? "K" : "MN")
                  << "-major at " << r << "," << c;
            }
        }
}

// A TF32 first factor read into registers from its MN-major tile (the
// emitter's fragment_offset: tile_offset and the swizzle at each register's
// row and depth step), the second through its K-major descriptor: for each
// consumer and step, the 64 x 8 operand the registers spell (each element
// held by exactly one register) times the descriptor's, scattered through
// the accumulator layout, is the reference product.
TEST(WgmmaLayout, Tf32FirstFactorInRegistersGivesTheProduct) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> value(-8, 8);
  const int size = 4, depth = w::kRowBytes / size, rows = 128, k_per_step = w::kStepBytes / size;
  for (int cols : {128, 256}) {
    std::vector<float> a(static_cast<size_t>(rows * depth)), b(static_cast<size_t>(cols * depth));
    for (float& x : a) x = static_cast<float>(value(rng));
    for (float& x : b) x = static_cast<float>(value(rng));
    Stage st;
    st.a = 2048;
    st.b = st.a + static_cast<uint32_t>(rows * depth * size);
    st.bytes.assign(st.b + static_cast<size_t>(cols * depth * size) + 1024, 0);
    copy_tile(st.bytes, st.a, false, rows, depth, size, a);
    copy_tile(st.bytes, st.b, true, cols, depth, size, b);
    w::TileDescriptor db = w::tile_descriptor(true, depth);
    for (int c = 0; c < rows / 64; ++c) {
      std::vector<double> acc(static_cast<size_t>(w::kWarpgroupThreads * cols / 2), 0.0);
      for (int step = 0; step < depth / k_per_step; ++step) {
        // The operand as the registers hold it.
        std::vector<float> op(64 * 8, 0.0f);
        std::vector<int> held(64 * 8, 0);
        for (int t = 0; t < w::kWarpgroupThreads; ++t)
          for (int j = 0; j < w::kRegisterFragments; ++j) {
            int r = w::register_fragment_row(t, j), k = w::register_fragment_depth(t, j);
            ASSERT_LT(r, 64);
            ASSERT_LT(k, 8);
            uint32_t at = st.a + w::swizzle128(w::tile_offset(false, depth, size, 64 * c + r, step * k_per_step + k));
            op[static_cast<size_t>(r * 8 + k)] = get(st.bytes, at, size);
            ++held[static_cast<size_t>(r * 8 + k)];
          }
        for (int h : held) ASSERT_EQ(h, 1) << "an element held by no register or by two";
        uint64_t b_desc = w::descriptor(st.b + static_cast<uint32_t>(step) * db.step_bytes, db.leading, db.stride);
        for (int t = 0; t < w::kWarpgroupThreads; ++t)
          for (int i = 0; i < cols / 2; ++i) {
            int r = w::accumulator_row(t, i), n = w::accumulator_col(t, i);
            for (int k = 0; k < k_per_step; ++k)
              acc[static_cast<size_t>(t * (cols / 2) + i)] +=
                  static_cast<double>(op[static_cast<size_t>(r * 8 + k)]) * read_operand(st.bytes, b_desc, true, size, n, k);
          }
      }
      for (int t = 0; t < w::kWarpgroupThreads; ++t)
        for (int i = 0; i < cols / 2; ++i) {
          int r = 64 * c + w::accumulator_row(t, i), n = w::accumulator_col(t, i);
          double want = 0;
          for (int k = 0; k < depth; ++k) want += static_cast<double>(a[static_cast<size_t>(r * depth + k)]) * b[static_cast<size_t>(n * depth + k)];
          ASSERT_EQ(acc[static_cast<size_t>(t * (cols / 2) + i)], want) << "cols " << cols << " at " << r << "," << n;
        }
    }
  }
}

// The stage ring: one producer and `consumers` consumer warpgroups (4 warps
// each) over `stages` stages, with mbarrier semantics (a phase completes when
// its arrivals are in, or for full[s] when the expected bytes land;
// try_wait.parity(p) succeeds once the phase of parity p has completed, so
// a fresh barrier passes a wait for parity 1). Scheduled in random orders:
// every step a consumer computes reads the data copied for that very step,
// no copy overwrites a stage a warp still reads, and nothing deadlocks.
struct Barrier {
  int count = 1, arrived = 0, phase = 0;  // phase: completed phases
  bool passes(uint32_t parity) const { return (static_cast<uint32_t>(phase) & 1u) != parity; }
  void arrive() {
    if (++arrived == count) {
      arrived = 0;
      ++phase;
    }
  }
};

// `registers`: a TF32 first factor read into registers, where each step
// waits for its own wgmmas and releases its stage at once.
TEST(WgmmaLayout, StageRingKeepsEveryStepsDataForEveryCountOfSteps) {
  std::mt19937 rng(11);
  const int stages = 4, consumers = 2, warps = 4 * consumers;
  for (bool registers : {false, true})
    for (int steps_per_tile = 1; steps_per_tile <= 9; ++steps_per_tile)
      for (int tiles = 1; tiles <= 3; ++tiles)
        for (int trial = 0; trial < 20; ++trial) {
          std::vector<Barrier> full(stages), empty(stages);
          for (Barrier& b : empty) b.count = warps;
          std::vector<int> data(stages, -1);    // which step's tiles a stage holds
          std::vector<int> readers(stages, 0);  // warps still reading a stage
          int total = steps_per_tile * tiles, produced = 0;
          // Each consumer warp: its step, and whether it has issued that step
          // (waiting for the previous one's products before releasing it).
          std::vector<int> step(warps, 0);
          std::vector<int> pending(warps, -1);  // a step issued, its stage not yet released
          int idle = 0;
          while (idle < 1000) {
            bool moved = false;
            int who = std::uniform_int_distribution<int>(-1, warps - 1)(rng);
            if (who < 0) {
              if (produced < total) {
                int s = w::ring_stage(produced, stages);
                if (empty[s].passes(w::ring_parity(produced, stages) ^ 1u)) {
                  ASSERT_EQ(readers[s], 0) << "a copy over a stage still read";
                  data[s] = produced;
                  full[s].arrive();  // expect_tx and the bytes landing
                  ++produced;
                  moved = true;
                }
              }
            } else if (step[who] < total) {
              int it = step[who], s = w::ring_stage(it, stages);
              if (full[s].passes(w::ring_parity(it, stages))) {
                ASSERT_EQ(data[s], it) << "a step read another step's tiles";
                ++readers[s];
                // wait_group 1: the previous step's products are done, its stage released
                // (within a tile; the last step of a tile waits for all at the tile's end).
                if (pending[who] >= 0) {
                  int ps = w::ring_stage(pending[who], stages);
                  --readers[ps];
                  empty[ps].arrive();
                }
                pending[who] = it;
                if (registers || (it + 1) % steps_per_tile == 0) {  // wait_group 0: after each step, or the tile's last
                  --readers[s];
                  empty[s].arrive();
                  pending[who] = -1;
                }
                ++step[who];
                moved = true;
              }
            }
            idle = moved ? 0 : idle + 1;
          }
          EXPECT_EQ(produced, total);
          for (int wi = 0; wi < warps; ++wi) EXPECT_EQ(step[wi], total) << "deadlock at " << steps_per_tile << " steps x " << tiles << " tiles" << (registers ? " (registers)" : "");
        }
}

// In clusters of two blocks: each producer copies its A tile into its own
// stage and half of B's tile into both blocks' stages; a full barrier
// completes once its own producer's expect_tx has arrived and all three
// parts have landed (the partner's half may land before that expect_tx);
// each consumer warp releases a stage in both blocks; each producer, after
// its last step, waits for every stage's last release before its block
// goes. No copy lands in a stage that either block still reads, every step
// reads its own tiles, nothing arrives at a block that has gone, and no
// schedule of the threads deadlocks.
TEST(WgmmaLayout, PairedStageRingsShareBAndOutliveThePartnersArrivals) {
  std::mt19937 rng(23);
  const int stages = 4, consumers = 2, warps = 4 * consumers, blocks = 2;
  struct Full {
    int arrived = 0, tx = 0, phase = 0;
    bool passes(uint32_t parity) const { return (static_cast<uint32_t>(phase) & 1u) != parity; }
    void settle() {
      if (arrived == 1 && tx == 0) {
        arrived = 0;
        ++phase;
      }
    }
  };
  for (int steps_per_tile = 1; steps_per_tile <= 7; ++steps_per_tile)
    for (int tiles = 1; tiles <= 3; ++tiles)
      for (int trial = 0; trial < 20; ++trial) {
        const int total = steps_per_tile * tiles;
        std::vector<std::vector<Full>> full(blocks, std::vector<Full>(stages));
        std::vector<std::vector<Barrier>> empty(blocks, std::vector<Barrier>(stages));
        for (auto& ring : empty)
          for (Barrier& b : ring) b.count = warps * blocks;
        // Which step each part of a stage holds: A, B's first and second half.
        std::vector<std::vector<std::array<int, 3>>> data(blocks, std::vector<std::array<int, 3>>(stages, {-1, -1, -1}));
        std::vector<std::vector<int>> readers(blocks, std::vector<int>(stages, 0));
        std::vector<int> produced(blocks, 0), tail(blocks, 0);  // tail: stages waited for after the last step
        std::vector<bool> gone(blocks, false);
        std::vector<std::vector<int>> step(blocks, std::vector<int>(warps, 0)), pending(blocks, std::vector<int>(warps, -1));
        auto land = [&](int to, int s, int part, int it) {
          ASSERT_FALSE(gone[to]) << "a copy into a block that has gone";
          ASSERT_EQ(readers[to][s], 0) << "a copy over a stage still read";
          data[to][s][static_cast<size_t>(part)] = it;
          full[to][s].tx -= 1;
          full[to][s].settle();
        };
        auto release = [&](int s) {
          for (int to = 0; to < blocks; ++to) {
            ASSERT_FALSE(gone[to]) << "a release arriving at a block that has gone";
            empty[to][s].arrive();
          }
        };
        int idle = 0;
        while (idle < 2000) {
          bool moved = false;
          int b = std::uniform_int_distribution<int>(0, blocks - 1)(rng);
          int who = std::uniform_int_distribution<int>(-1, warps - 1)(rng);
          if (gone[b]) {
          } else if (who < 0 && produced[b] < total) {
            int it = produced[b], s = w::ring_stage(it, stages);
            if (empty[b][s].passes(w::ring_parity(it, stages) ^ 1u)) {
              full[b][s].arrived += 1;  // arrive.expect_tx of the three parts
              full[b][s].tx += 3;
              full[b][s].settle();
              land(b, s, 0, it);
              for (int to = 0; to < blocks; ++to) land(to, s, 1 + b, it);  // this block's half of B, into both
              ++produced[b];
              moved = true;
            }
          } else if (who < 0 && tail[b] < stages) {
            int it = total + tail[b], s = w::ring_stage(it, stages);
            if (empty[b][s].passes(w::ring_parity(it, stages) ^ 1u)) {
              ++tail[b];
              moved = true;
            }
          } else if (who < 0) {
            bool consumers_done = true;
            for (int wi = 0; wi < warps; ++wi) consumers_done = consumers_done && step[b][wi] == total && pending[b][wi] < 0;
            if (consumers_done) {
              gone[b] = true;
              moved = true;
            }
          } else if (step[b][who] < total) {
            int it = step[b][who], s = w::ring_stage(it, stages);
            if (full[b][s].passes(w::ring_parity(it, stages))) {
              for (int part = 0; part < 3; ++part) ASSERT_EQ(data[b][s][static_cast<size_t>(part)], it) << "a step read another step's tiles";
              ++readers[b][s];
              if (pending[b][who] >= 0) {
                int ps = w::ring_stage(pending[b][who], stages);
                --readers[b][ps];
                release(ps);
              }
              pending[b][who] = it;
              if ((it + 1) % steps_per_tile == 0) {
                --readers[b][s];
                release(s);
                pending[b][who] = -1;
              }
              ++step[b][who];
              moved = true;
            }
          }
          idle = moved ? 0 : idle + 1;
        }
        for (int bl = 0; bl < blocks; ++bl) EXPECT_TRUE(gone[bl]) << "deadlock at " << steps_per_tile << " steps x " << tiles << " tiles";
      }
}

}  // namespace
}  // namespace zyntax
