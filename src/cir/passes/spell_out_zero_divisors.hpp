// Float division and remainder by a literal zero, written out as their
// IEEE results. Shader compilers may treat a constant zero divisor as
// undefined behaviour: Mesa folds `x / 0.0` into garbage (the store goes)
// and `2 * x / 0.0` into the wrong infinity. For the GLSL and WGSL
// emitters; a divisor that is zero only at run time divides as usual.
//
//   a / ±0.0  ->  NaN where a is NaN or 0, else ±inf by the signs
//   a % ±0.0  ->  NaN
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel spell_out_zero_divisors(const Kernel& k);

}  // namespace zyntax::cir
