// Fusion of one compute block's kernel into the next: a producer whose
// result only the consumer reads, read at the element the producer wrote,
// becomes a value computed inside the consumer's loops instead of a tensor
// in memory.
//
// Decided on CIR, after lowering and before planning, so every device (and
// the reference executor) runs the fused kernel. The rule made here: an
// element-wise producer (a nest of parallel loops over its output storing
// each element once, at the loop variables, as its last statement) into a
// consumer whose parallel loops cover the same elements and read the
// producer's result only at their own loop variables. Everything else is
// refused with a reason, which `zyntax run --explain-fusion` prints.
#pragma once

#include <string>
#include <variant>

#include "cir/ir.hpp"

namespace zyntax::fusion {

// `consumer` with `producer`'s output, its input `input`, computed in its
// loops: the inputs of both (the producer's first, each name once), their
// scalars and dims; the consumer's output. Or why not.
std::variant<cir::Kernel, std::string> fuse_producer(const cir::Kernel& producer, const cir::Kernel& consumer, const std::string& input);

}  // namespace zyntax::fusion
