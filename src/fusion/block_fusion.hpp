// Fusion of compute blocks' kernels into the blocks that read their
// results: a producer's result, instead of a tensor in memory, becomes a
// value computed where the consumer reads it.
//
// Decided on CIR, after lowering and before planning, so every device (and
// the reference executor) runs the fused kernel. The rules:
// - an element-wise producer whose element is an expression (lets and one
//   store, at its parallel loop variables) is recomputed at each read of
//   the consumer whose indices are loop variables over the producer's
//   whole axes (several reads, several consumers: computed where read,
//   while that stays cheap; read again in a loop over another axis, as a
//   product reads its operands, only an element of a few operations);
// - a reduction of rows (parallel loops over its output, each element
//   folded from a loop inside) is computed once per row in the consumer,
//   at the top of the loop that binds the row it reads (the softmax and
//   norm patterns: one kernel of rows), accumulating as the reduction does;
// - any other element-wise producer without loops of its own (vars,
//   conditions) moves its statements into a consumer whose parallel loops
//   cover the same elements and read it only there;
// - a producer with loops of its own (a matrix product, a convolution)
//   takes such a consumer in as its epilogue, where the consumer only maps
//   each element (lets and one store): the product keeps its loops, its
//   schedule and its summation order, and stores the consumer's element.
// Never: a read under a condition (the producer's checks must still run on
// every element), at an index that is not a whole loop, arg and logical
// reductions, atomics, arrays, a fused kernel beyond the limits of the
// device that runs it (its GpuTarget's: storage buffers, parameter bytes, a
// kernel its GPU plan cannot take where the consumer's can, as for shared
// memory, more registers per thread than the consumer alone within the
// budget). Refusals
// come with a reason, which `zyntax run --explain-fusion` prints.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cir/ir.hpp"
#include "target/gpu_target.hpp"

namespace zyntax::fusion {

// Producers computed where they are read, by the names consumers read them
// as; their own inputs may name other pending producers.
using Pending = std::map<std::string, cir::Kernel>;

struct Inlined {
  std::optional<cir::Kernel> kernel;   // the consumer, no read of a pending producer left
  std::vector<std::string> producers;  // those it took in, in the order taken
  std::string refused, why;            // else: the first it could not take, and why
};

// Every read of a pending producer in `consumer` inlined, and those of the
// producers it takes in, by the rules above; within the limits of `target`,
// the GPU that runs the kernel (none on CPUs and the reference executor).
Inlined inline_producers(const cir::Kernel& consumer, const Pending& pending, const GpuTarget* target = nullptr);

}  // namespace zyntax::fusion
