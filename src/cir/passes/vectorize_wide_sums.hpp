// Running sums kept wider than what they add (an f64 accumulator of f32
// values, as reductions keep f32 sums): LLVM's vectoriser picks its width
// from the widest type in the loop, so such a loop would compute its f32
// values (an exp, a product) four at a time on AVX2 instead of eight. A
// serial innermost loop whose body updates `acc = acc + f64(value)` with
// `value` narrower becomes Vectorized with twice the width of the narrow
// type (`2 * vector_bits / 32`): the values two full vectors at a time, the
// accumulator in four registers, so four chains of additions overlap (at
// one vector's width, a fused softmax's f64 row sums took 1.3x the time of
// the same rows summed in f32; at two, 1.0-1.1x). The sum is reassociated
// as any running sum is (ir_emitter's `accumulation`); in f64, sums of f32
// values of one row keep every bit.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

Kernel vectorize_wide_sums(const Kernel& k, int vector_bits);

}  // namespace zyntax::cir
