// Float operations with a literal zero operand, written out as their IEEE
// results. Shader compilers may treat a constant zero divisor as undefined
// behaviour (Mesa folds `x / 0.0` into garbage: the store goes) and, with
// fast-math flags they set themselves, fold `x * 0.0` to 0 (wrong for NaN
// and infinities) and `x + 0.0` to x (wrong for -0), whatever the shader
// says. For the GLSL and WGSL emitters. The same holds for an operand the
// driver may come to know by its own constant propagation (an integer loop
// variable converted to float, once it unrolls the loop): there the forms
// below are chosen by a compare with zero. An operand read from memory
// computes as usual.
//
//   a / ±0.0  ->  NaN where a is NaN or 0, else ±inf by the signs
//   a % ±0.0  ->  NaN
//   a * ±0.0  ->  NaN where a is NaN or infinite, else a zero signed by the signs
//   a + 0.0, a - -0.0  ->  +0 where a is ±0, else a
//   0.0 / a   ->  NaN where a is NaN or 0, else a zero signed by the signs
//   a op NaN  ->  NaN for + - * / % min max
//   fma(a, ±0, c)  ->  (a * ±0, as above) + c
//   fma(a, b, ±0)  ->  (a * b) + ±0, as above
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel spell_out_special_literals(const Kernel& k);

}  // namespace zyntax::cir
