// A convolution's input as a sliding window, for schedule_matmul to read in
// place (an implicit GEMM) rather than pack as im2col.
//
// In a product recognised by product_form.hpp whose factor Y reads the
// column loops (the output pixels o_t), Y is a sliding window when it and
// its guard read each column loop o_t together with one reduction loop k_t
// (the window position) only through o_t + k_t, or only through o_t - k_t
// (a mirrored window: a true convolution, or the gradient of one with
// respect to its input): stride 1, no dilation. Then every term Y(o, k) is
// an element of one padded image
//
//   P[c.., y_1, .., y_n] = guard ? Y : 0   at o_t = y_t, k_t = its first value
//                                          (its last, mirrored)
//
// with y_t in 0..E_t + D_t - 1 (E_t pixels, D_t window positions) and c..
// the remaining reduction loops (input channels). Counting the pixels in
// P's row widths (a virtual pixel j = sum o_t * S_t, S_t P's stride), the
// im2col matrix B[k][j] is P at offset(k) + j, offset(k) = c-plane + sum
// k_t * S_t (k_t counted from the window's first position, or back from
// its last where mirrored): B's rows are P itself, each shifted by a table
// entry. The
// price is columns for the virtual pixels past each row's end (o_t >= E_t),
// which are computed and dropped.
//
// Where the padding guard zeroes the first and the last `shared` columns of
// every row of P, the rows are stored `shared` columns narrower: a row's
// last columns, read past its end, are then the next row's first ones,
// zero too (for a 3x3 window with padding 1, rows of W + 1 instead of W + 2:
// one virtual pixel dropped per row instead of two).
#pragma once

#include <optional>
#include <vector>

#include "cir/passes/product_form.hpp"

namespace zyntax::cir {

struct SlidingWindow {
  std::vector<size_t> partner;   // per column loop: the reduction loop that slides with it
  std::vector<bool> mirrored;    // per column loop: Y reads o_t - k_t rather than o_t + k_t
  std::vector<size_t> channels;  // the other reduction loops, in order
  std::vector<int64_t> extent;   // per column loop: P's extent, E_t + D_t - 1
  int64_t shared = 0;            // zero columns at both ends of every row of P, stored once

  // P's extent as stored along column loop t: `extent`, the rows `shared` narrower.
  int64_t width(size_t t) const;
  // The stored width of P's rows (of the last column loop).
  int64_t row_width() const { return width(extent.size() - 1); }
  // Elements of one channel's image (the product of the widths).
  int64_t plane() const;
  // P's stride along column loop t.
  int64_t stride(size_t t) const;
  // The virtual pixels: the first column loop's E_1 rows of P's row width.
  int64_t columns(const ProductForm& m) const;
  // The fraction of virtual pixels that are real ones.
  double useful(const ProductForm& m) const;
  // The virtual pixel grid: the column loops (their own names) with the
  // extents E_1, then P's; flat indices in it are P's.
  LoopGroup virtual_pixels(const ProductForm& m) const;
  // P's grid: the column loops (their own names) with P's extents.
  LoopGroup image(const ProductForm& m) const;
  // The channel loops as a group.
  LoopGroup channel_group(const ProductForm& m) const;
  // offset(k) as an expression in the reduction loops' variables.
  Expr offset(const ProductForm& m) const;
  // The value P is filled at of column loop t's partner: its first, or last.
  int64_t partner_at(const ProductForm& m, size_t t) const;
  // The largest offset(k).
  int64_t max_offset(const ProductForm& m) const;
};

// The window, or nothing when Y is no sliding window (the guard on X, a
// stride or dilation, a column loop with no partner).
std::optional<SlidingWindow> find_sliding_window(const ProductForm& m);

}  // namespace zyntax::cir
