// Gives each GPU thread of an element-wise kernel `width` consecutive
// iterations instead of one, so that its loads and stores of consecutive
// elements can merge into vector accesses of 16 bytes (ld.global.v4.f32):
//
//   parallel for i in 0..n:          parallel for q in 0..n / width:
//     body                     →       unrolled for u in 0..width:
//                                        let i = q * width + u
//                                        body
//
// A warp then reads 32 runs of 16 bytes side by side: still coalesced, in a
// quarter of the instructions. It applies to a kernel whose whole body is
// one parallel loop from 0 with step 1 over a constant count that `width`
// divides, holding no loop, array or GPU statement of its own (a schedule's
// kernel, or a reduction, keeps its form). Iterations are independent, so
// any grouping computes the same result.
#pragma once

#include "cir/ir.hpp"

namespace zyntax::cir {

// `vector_bytes` (a target's widest access: 16 on NVIDIA GPUs) of the
// widest element the kernel reads or writes (4 f32 for 16 bytes, 8 f16), at least 1.
int thread_element_width(const Kernel& k, int vector_bytes);

// The kernel with its parallel loop grouped so, or `k` where it does not apply.
Kernel group_thread_elements(const Kernel& k, int width);

}  // namespace zyntax::cir
