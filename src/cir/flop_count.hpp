// The floating-point operations a specialised kernel performs, counted from
// its CIR: every float add, subtract, multiply, divide, min/max and math
// function is one; a dot product of n pairs 2n, a matrix product 2mnk, a
// reduction of n values n. Loops multiply their bodies by their trip count;
// a branch counts as taken. For `zyntax run --profile`'s GFLOP/s.
#pragma once

#include <optional>

#include "cir/ir.hpp"

namespace zyntax::cir {

// nullopt where a loop's bounds are not constants (a generic kernel).
std::optional<double> count_flops(const Kernel& k);

// The work a specialised kernel does, counted the same way but over every
// operation (integer arithmetic, element reads and writes, stores of
// locals too): what decides whether spreading it over threads pays.
std::optional<double> count_operations(const Kernel& k);

}  // namespace zyntax::cir
