// A whole-tensor reduction over the CPU's tasks. A reduce kernel whose body
// is one loop (or a nest, merged into one) yielding to one output element
// (a sum, product, min or max of everything it visits) becomes `tasks`
// parallel iterations, each folding one contiguous chunk into a variable of
// the accumulator's dtype and yielding it once:
//
//   for i in 0..n:            parallel for t in 0..T:
//     yield x[i] * x[i]   →     var yield%p: f64 = 0.0
//                               for i in t * c..min(n, t * c + c):
//                                 yield%p = yield%p + f64(x[i] * x[i])
//                               yield yield%p
//
// The partial lives in a register, and a running sum may be reassociated
// (ir_emitter's `accumulation`), so each chunk vectorises; the tasks' yields
// meet in the accumulator atomically. Float sums and products of f32, f16
// or bf16 values are kept in f64 and rounded once, so the order in which
// the tasks' partials meet cannot show in the result; where the partials
// are as wide as the output (f64 sums and products) a single task folds
// everything, so that a run repeats bit for bit. Arg and logical
// reductions are left as they are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

// `tasks`: at most this many chunks; fewer where each would fold fewer than
// `min_chunk` iterations.
std::optional<Kernel> schedule_cpu_reduce(const Kernel& k, int64_t tasks, int64_t min_chunk = 8192, std::string* why_not = nullptr);

}  // namespace zyntax::cir
