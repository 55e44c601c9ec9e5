// Element-wise maps of 2-D tiles as scalarize_tiles writes them, and
// whether an expression reads a tile only at the element being computed:
// what fuse_product_epilogues and map_in_place look for.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "cir/mutator.hpp"

namespace zyntax::cir {

// `for i in 0..n0 { for j in 0..n1 { T[i, j] = value } }`: serial loops
// from 0 in unit steps around one store of a 2-D array at (i, j).
struct ElementMap {
  const For* rows;
  const For* cols;
  const Store* store;
};
std::optional<ElementMap> element_map(const Stmt& s);

// Whether two extents are the same wherever they are seen.
using SameExtent = std::function<bool(const Expr&, const Expr&)>;

// Replaces every read of `buffer` by `element` and says whether each read
// was of the element at (row, col) of loops over 0..n0 and 0..n1: the loop
// variables themselves or broadcast indices `select(n == 1, 0, i)` of them
// (n the loop's extent, by `same`; one in another for broadcasts of
// broadcasts).
class ElementReads : public IRMutator {
 public:
  ElementReads(std::string buffer, std::string row, std::string col, Expr n0, Expr n1, Expr element, SameExtent same);
  bool only_own_element = true;
  using IRMutator::visit;

 protected:
  Expr visit(const Access* op) override;

 private:
  bool at(const Expr& index, const std::string& v, const Expr& n) const;
  std::string buffer_, row_, col_;
  Expr n0_, n1_, element_;
  SameExtent same_;
};

// Whether `e` reads `buffer` at (row, col) only (see ElementReads).
bool reads_only_element(const Expr& e, const std::string& buffer, const ElementMap& at, const SameExtent& same);

}  // namespace zyntax::cir
