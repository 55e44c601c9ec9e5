// Element-wise maps of 2-D tiles as scalarize_tiles writes them, and
// whether an expression reads a tile only at the element being computed:
// what fuse_product_epilogues and map_in_place look for.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "cir/mutator.hpp"
#include "cir/substitute.hpp"

namespace zyntax::cir {

// `for i in 0..n0 { for j in 0..n1 { T[i, j] = value } }`: serial loops
// from 0 in unit steps around one store of a 2-D array at (i, j).
struct ElementMap {
  const For* rows;
  const For* cols;
  const Store* store;
};
std::optional<ElementMap> element_map(const Stmt& s);

bool is_var(const Expr& e, const std::string& name);
bool is_zero(const Expr& e);

// Whether two extents are the same wherever they are seen.
using SameExtent = std::function<bool(const Expr&, const Expr&)>;

// A mutator of blocks that knows the loops around the block it is in and
// compares extents there.
class ExtentAwareMutator : public IRMutator {
 public:
  explicit ExtentAwareMutator(const Kernel& k);
  using IRMutator::mutate;
  using IRMutator::visit;
  Stmt visit(const For* op) override;

 protected:
  // Extents compared by the values of the lets of `b` before `end`, and
  // where that is not enough, at every iteration of the loops around
  // (equal_everywhere, the kernel's lets seen through).
  SameExtent same_extent(const Block& b, size_t end) const;
  // Whether `e` has one value all through the block: it names no var,
  // array or output, its lets seen through.
  bool unchanging(const Expr& e) const;

 private:
  Substitution kernel_lets_;
  std::set<std::string> changing_;  // mutable_names()
  std::vector<const For*> loops_;  // around the block being rewritten, outermost first
};

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
