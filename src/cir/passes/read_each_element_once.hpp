// Reads an element once per statement where the statement reads it several
// times: a long expression over `x[i]` (a sum of a thousand terms that each
// read it) reads it once, checks its index once and gives the code
// generator one value, not a thousand loads and bounds checks (LLVM's
// InstCombine takes time quadratic in the checks on one value).
//
//   out[i] = f(x[i], y[j]) + g(x[i])   →   let r0 = x[i]
//                                          let r1 = y[j]
//                                          out[i] = f(r0, r1) + g(r0)
//
// Every element the statement reads becomes a let, in the order the
// expression first reads them, so the first failing check is the same one.
// It applies only where every part of the expression is evaluated, in order
// (no select, `and`/`or`, reduction, product or fill, whose parts may be
// skipped or looped over) and no operation of it can fail but a read (no
// integer division, remainder or power), only to scalar reads, and only to
// a store whose indices read nothing and cannot fail (they are evaluated
// before its value).
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel read_each_element_once(const Kernel& k);

}  // namespace zyntax::cir
