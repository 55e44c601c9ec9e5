// Recognises a matrix product inside a specialised kernel, for the
// schedules that run one (schedule_matmul). The form is
//
//   for b.., i.., j.. (parallel, from 0):       batch loops, row loops, column loops
//     var s: f32 = init                         0.0, or added after the sum (a bias)
//     for k.. (nested, constant bounds):        the reduction loops
//       let ..                                  (substituted into what follows)
//       [if guard:] s = s + X * Y               X reads rows and k, Y columns and k
//     out[b.., i.., j..] = f(s)                 out of any float type (schedules that sum in it need f32)
//
// Several row, column or reduction loops each count as one flat index, the
// last loop fastest: a plain product has one of each; a convolution in NCHW
// has rows = output channel, columns = (oh, ow), reduction = (ic, kh, kw),
// with Y the input read through a padding guard (im2col). The guard moves
// into the factor whose loops it reads; the schedule packs that factor with
// zeros where the guard fails.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "cir/substitute.hpp"

namespace zyntax::cir {

// Nested loops run as one flat index, the last loop fastest.
struct LoopGroup {
  struct Loop {
    std::string var;
    int64_t lo = 0, extent = 1;
  };
  std::vector<Loop> loops;

  int64_t size() const;
  std::set<std::string> names() const;
  // How far one step of loop t moves the flat index.
  int64_t weight(size_t t) const;
  // Each loop variable's value at flat index `flat` (0 <= flat < size()).
  // Remainders are written `q - q / e * e` so that the linear forms of
  // addresses built from them cancel back to the flat index.
  Substitution at(const Expr& flat) const;
};

struct ProductForm {
  std::vector<const For*> loops;  // batch loops, then the row group's, then the column group's
  size_t rows_at = 0, cols_at = 0;
  LoopGroup rows, cols, depth;    // i.., j.. and the reduction k..
  Stmt sum_decl, reduction, store_stmt;  // the body's three statements, as written
  const Decl* sum = nullptr;
  const Store* store = nullptr;
  Expr init;                      // the sum's start when it is not +0.0
  Expr x, y;                      // X reads rows and depth, Y columns and depth (lets substituted)
  Expr guard;                     // undefined when every term is added
  bool guard_on_x = false;        // the guard reads X's loops (else Y's, or neither)

  int64_t extent(const For& f) const;
  int64_t batch() const;
  // For a GPU block per output tile: from the tile's number (batch element,
  // then row tile, then column tile, of row_tiles x col_tiles per batch
  // element), lets binding bt, rt and ct and the batch loops' variables.
  Block tile_lets(const std::string& tile, int64_t row_tiles, int64_t col_tiles, const std::string& bt, const std::string& rt,
                  const std::string& ct) const;
  // The factor the guard is not attached to: the schedule checks it is finite
  // before it multiplies it by the zeros that stand for skipped terms.
  const Expr& unguarded() const { return guard_on_x ? y : x; }
};

// The product `k` computes, or nothing when its body is not of this form.
std::optional<ProductForm> match_product(const Kernel& k);

}  // namespace zyntax::cir
