// The CPU's tuning space: the choices plan_cpu_kernel takes as knobs of a
// TuningChoice (support/tuning_choice), and a cost model that ranks them.
//
//   products (schedule_matmul):  mr, nr  the register block (rows x columns of
//                                        accumulators; nr a multiple of the vector)
//                                kc, mc, nc  the depth of a packed panel, the rows
//                                        of A and the columns of B packed at once
//                                ain, bin  A / B read in place where legal (1) or
//                                        packed (0)
//                                rows    the row groups a product's tasks split into
//   every kernel:                tasks   the iterations the outer parallel loop is
//                                        widened to (widen_task_loop; the pool's grain)
//                                block   the iterations of an innermost loop a task
//                                        takes when that loop is widened
//                                chunks  a whole-tensor reduction's tasks
//                                jam     an interchanged reduction's loop unrolled
//                                        into its vector loop (1: not)
//                                one     1: run on the calling thread alone
//
// The default (an empty choice) is the rules plan_cpu_kernel applies
// without one. The cost model estimates cycles per kernel from what each
// choice makes the schedule do (matmul_blocking): register-block
// throughput, edge waste, cache fits, packing and passes over the output,
// tasks per thread. It only orders candidates; timing decides.
#pragma once

#include <vector>

#include "cir/ir.hpp"
#include "support/tuning_choice.hpp"

namespace zyntax {

// The candidates for `kernel` (specialised) on `threads` threads with
// vectors of `vector_bits`: the default first, the rest by cost; at most
// `limit` of them (0: all).
std::vector<TuningCandidate> cpu_tuning_space(const cir::Kernel& kernel, int threads, int vector_bits, size_t limit = 0);

// The knob names the CPU's plans read: plan_cpu_kernel refuses a choice
// naming any other (a record of another build's knobs).
bool is_cpu_knob(const std::string& name);

}  // namespace zyntax
