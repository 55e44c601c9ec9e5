// Where along a loop a guard holds. A guard that is a conjunction of
// comparisons, each either free of the loop variable or affine in it with a
// coefficient of +1 or -1, holds exactly for
//
//   uniform  and  max(lower..) <= var < min(upper..)
//
// so a loop over such a guard can be split into a part where it fails, a
// part where it holds (no test left, every index in bounds: it vectorises)
// and a part where it fails again. Zero padding in convolutions is the case
// this is for: `iy >= 0 and iy < h and iz >= 0 and iz < w`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cir/ir.hpp"

namespace zyntax::cir {

struct GuardRange {
  Expr uniform;             // the conjuncts that do not read the variable (true when none)
  std::vector<Expr> lower;  // var >= each
  std::vector<Expr> upper;  // var < each
};

// Nothing when a conjunct is not of that form, or could fault (reads memory,
// divides by anything but a positive constant) and so may not be hoisted.
std::optional<GuardRange> guard_range(const Expr& guard, const std::string& var);

// A guard that is no such range still splits into the conjuncts a loop over
// `var` may test once (free of it, cannot fault) and the rest, tested per
// iteration. Either is `true` when it has no conjunct.
struct GuardSplit {
  Expr uniform;
  Expr rest;
};
GuardSplit split_uniform(const Expr& guard, const std::string& var);

}  // namespace zyntax::cir
