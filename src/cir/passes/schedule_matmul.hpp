// Schedules a matrix product the way BLIS does, for CPUs:
//
//   parallel for task (batch x row group x column group):
//     for jc (NC columns):
//       for pc (KC of the reduction):
//         pack B[pc.., jc..] into NR-wide panels, k-major      (stays in L2/L3; a row-major
//                                                               B read a row at a time)
//         for ic (MC rows):
//           pack A[ic.., pc..] into MR-tall panels, k-major   (stays in L2)
//           for each NR panel, for each MR panel:
//             matmul_block<MR x NR>                           (registers; B panel in L1)
//             (NR / 2 wide on the product's last panel where no more than half of it is real;
//              its last few columns as vectors along the rows: see row_vector_edge)
//     epilogue: out = f(sum) over the task's tile, if the store was not just the sum
//
// It rewrites a specialised kernel that computes a product of the form
// product_form.hpp recognises: plain, transposed and batched products, and
// convolutions as im2col products (row, column and reduction loops each run
// as one flat index; the padding guard packs zeros into the guarded factor).
// X and Y may be any expressions (transposed or batched operands, casts from
// f16), since packing evaluates them; only the inner product runs in the
// micro-kernel. A row-major f32 input is read in place instead of packed
// where that only copies it: A in whole row blocks when the tasks split the
// columns of one product or a task's columns are one block of B, B when a
// task's rows are one block of A. A convolution whose input is a sliding
// window (sliding_window.hpp: stride 1) packs no B at all: each task copies
// the part of the zero-padded input image it reads, once, and the
// micro-kernel reads B's rows from it through a table of window offsets
// (an implicit GEMM), into a block of sums from which the epilogue stores
// the real pixels. An output narrower than f32 (bf16, f16) gets its sums
// in a task's block of f32 the same way, rounded once at the epilogue's
// store (B then packed, not read as a sliding window).
// The sums are multiply-adds in k order, like the reference's,
// fused where the target has FMA, so results agree within rounding. A guarded
// product is exact as long as the other factor is finite; each task checks
// that first and runs the original loops over its tile when it is not.
#pragma once

#include <optional>

#include "cir/ir.hpp"

namespace zyntax::cir {

struct MatMulSchedule {
  int mr = 12, nr = 32;             // register block: rows x columns (columns in vector lanes)
  int lanes = 16;                   // floats in one of the target's vectors
  int64_t kc = 256;                 // reduction depth of a packed panel
  int64_t mc = 240, nc = 1024;      // rows of A and columns of B packed at once
  int threads = 1;                  // tasks are made for at least this many threads
  int64_t min_flops = 8192;         // smaller products keep their loops
  double min_window_use = 0.75;     // a convolution's input is read in place where this share of its virtual pixels is real
  // Choices the rules below make unless these say otherwise (the tuner's
  // knobs, plan/cpu_tuning): a factor read in place where it can be (1) or
  // always packed (0); the row groups a product's tasks split into (its
  // column groups then make up the threads' count); -1 / 0: the rules.
  int a_in_place = -1, b_in_place = -1;
  int64_t row_groups = 0;
};

// The blocking for a CPU with vectors of `vector_bits` (512, 256 or 128).
MatMulSchedule cpu_matmul_schedule(int vector_bits, int threads);

// What the schedule decides for one product: the sizes Builder builds with,
// and what the tuner's cost model prices.
struct MatMulBlocking {
  int64_t M = 0, N = 0, K = 0;  // rows, columns (a window's virtual pixels), depth
  int64_t batch = 1;            // products
  int64_t MR = 0, NR = 0, KC = 0, MC = 0, NC = 0;
  int64_t lanes = 16;           // floats per vector
  int64_t gm = 1, gn = 1;       // row and column groups per product: batch * gm * gn tasks
  bool a_in_place = false, b_in_place = false;  // read where they are rather than packed
  bool window = false;          // B as a sliding window of the input image
  bool narrow = false;          // sums in a task's block of f32, rounded at the store
  // A factor read in place whose rows lie whole 4 KiB pages apart: they
  // fall into the same few L1 sets (the rules pack such a factor).
  bool a_aliased = false, b_aliased = false;
  bool operator==(const MatMulBlocking&) const = default;
  int64_t task_rows() const { return ((M + MR - 1) / MR + gm - 1) / gm * MR; }  // rows of a task's group, whole panels
  // The last column panel is at most half real: it takes a block half as
  // wide (half a panel of whole vectors).
  bool half_edge() const { return NR % 2 == 0 && N % NR != 0 && N % NR <= NR / 2; }
  // The columns of the last panel past its first half (past none where
  // half_edge) when they are few enough that a block of vectors along A's
  // packed rows (one accumulator per column) does less than the block of
  // vectors along the columns (one per row): 257 = 8 x 32 + 1 columns,
  // 14-row blocks: per k step, one multiply-add for column 257 instead of
  // 14. Zero where the columns' blocks serve (A read in place, whose rows
  // are not adjacent; a sliding window, which packs no B).
  int64_t row_vector_edge = 0;
  // The last column panel's work over a whole panel's (vector
  // multiply-adds per k step).
  double last_panel_share() const;
};

// The blocking each schedule gives `k` (the product matched once), or
// nothing when `k` is not a product these schedules take (they differ in
// their blocking knobs only).
std::vector<MatMulBlocking> matmul_blockings(const Kernel& k, const std::vector<MatMulSchedule>& schedules);

// The scheduled kernel, or nothing when `k` is not a matrix product of this shape.
std::optional<Kernel> schedule_matmul(const Kernel& k, const MatMulSchedule& s);

}  // namespace zyntax::cir
