// Where a warpgroup product's numbers live on Hopper: the shared-memory
// layout the tensor copy engine writes with its 128-byte swizzle, the wgmma
// descriptors that read it back, and which accumulator element each thread
// holds. Plain functions, so that the unit tests can run the layout on the
// CPU (tests/unit/test_wgmma_layout.cpp) and the emitter
// (warpgroup_product.cpp) takes its constants from the same place.
//
// A factor tile in shared memory is a run of 128-byte rows. K-major (the
// depth is the input's fast axis): row r holds side index r's 64 depth
// steps of 2 bytes (32 of 4). MN-major: the tile is cut into chunks of 64
// side indices (128 bytes); chunk c holds, in row d, depth step d's 64 side
// indices, and chunks are depth * 128 bytes apart. Groups of 8 rows form the
// 1024-byte atoms the swizzle permutes within (aligned to 1024 bytes).
#pragma once

#include <cstdint>

namespace zyntax::codegen::wgmma {

constexpr int kRowBytes = 128;         // one swizzled row
constexpr int kAtomBytes = 1024;       // 8 rows: the swizzle's period
constexpr int kWarpgroupThreads = 128;
constexpr int kStepBytes = 32;         // the depth of one wgmma (16 of 2 bytes, 8 of 4)

// The byte a 128-byte swizzle puts at `offset` (of a 1024-byte-aligned
// region): the 16-byte chunk index within the row XOR the row within the atom.
constexpr uint32_t swizzle128(uint32_t offset) { return offset ^ (((offset >> 7) & 7u) << 4); }

// A wgmma shared-memory matrix descriptor with the 128-byte swizzle: the
// start address, the leading and the stride dimension byte offsets (each
// stored >> 4 in 14 bits).
constexpr uint64_t descriptor(uint32_t address, uint32_t leading_bytes, uint32_t stride_bytes) {
  return (uint64_t{(address & 0x3FFFFu) >> 4}) | (uint64_t{(leading_bytes >> 4) & 0x3FFFu} << 16) |
         (uint64_t{(stride_bytes >> 4) & 0x3FFFu} << 32) | (uint64_t{1} << 62);
}
constexpr uint32_t descriptor_address(uint64_t d) { return static_cast<uint32_t>(d & 0x3FFFu) << 4; }
constexpr uint32_t descriptor_leading(uint64_t d) { return static_cast<uint32_t>((d >> 16) & 0x3FFFu) << 4; }
constexpr uint32_t descriptor_stride(uint64_t d) { return static_cast<uint32_t>((d >> 32) & 0x3FFFu) << 4; }

// The descriptor fields for a factor tile of `depth` steps (64 for 2-byte
// factors, 32 for TF32): where wgmma step `step` (0..depth*size/32) starts
// from the tile's first byte, and the leading and stride byte offsets.
// K-major: the 8-row atoms are 1024 bytes apart (stride); the leading
// offset is unused (16). MN-major: atoms of 8 depth steps are 1024 bytes
// apart (stride), 64-index chunks depth * 128 bytes apart (leading).
struct TileDescriptor {
  uint32_t step_bytes = 0;  // added to the start address per wgmma step
  uint32_t leading = 16, stride = kAtomBytes;
};
constexpr TileDescriptor tile_descriptor(bool k_major, int depth) {
  if (k_major) return {kStepBytes, 16, kAtomBytes};
  return {16u * kRowBytes, static_cast<uint32_t>(depth) * kRowBytes, kAtomBytes};
}

// Where element (side s, depth d) of a factor tile of `depth` steps and
// `size`-byte elements lies (before the swizzle), from the tile's first byte.
constexpr uint32_t tile_offset(bool k_major, int depth, int size, int s, int d) {
  if (k_major) return static_cast<uint32_t>(s * kRowBytes + d * size);
  int per_chunk = kRowBytes / size;
  return static_cast<uint32_t>((s / per_chunk) * depth * kRowBytes + d * kRowBytes + (s % per_chunk) * size);
}

// The accumulator element register `i` of thread `t` (of the warpgroup's
// 128) holds in an m64nNk16 product's 64 x N result: warp t / 32 holds rows
// 16w..16w+15; in each 8-column block i / 4, lanes hold two neighbouring
// columns of a row and of the row 8 below.
constexpr int accumulator_row(int t, int i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2); }
constexpr int accumulator_col(int t, int i) { return 8 * (i / 4) + 2 * (t % 4) + i % 2; }

// A first factor in registers (TF32, m64nNk8): register j (0..3) of
// thread t holds row register_fragment_row(t, j) and depth step
// register_fragment_depth(t, j) of the 64 x 8 operand: warp t / 32 rows
// 16w..16w+15, lanes a row and a step of it, the row 8 below and 4 steps on.
constexpr int kRegisterFragments = 4;
constexpr int register_fragment_row(int t, int j) { return 16 * (t / 32) + (t % 32) / 4 + 8 * (j % 2); }
constexpr int register_fragment_depth(int t, int j) { return t % 4 + 4 * (j / 2); }

// The stage a warpgroup product's k-th tile step uses, and the parity of
// that stage's barrier phase it waits for, over a ring of `stages`.
constexpr int ring_stage(int64_t step, int stages) { return static_cast<int>(step % stages); }
constexpr uint32_t ring_parity(int64_t step, int stages) { return static_cast<uint32_t>((step / stages) & 1); }

}  // namespace zyntax::codegen::wgmma
