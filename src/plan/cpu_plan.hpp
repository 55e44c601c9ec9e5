// The CIR passes that make a kernel what a CPU backend compiles: tile
// values rewritten to loops, matrix products packed and register-blocked,
// row values computed once (reuse_row_values), other reductions inside
// parallel loops interchanged so they vectorise, and atomic updates run in
// order on one core unless many share them (serialize_atomic_loops).
// Shared by the cpu backend and `zyntax compile`, so what the command shows
// is what runs. The CPU is described by how many threads share a kernel and
// the width of its vector registers.
#pragma once

#include <optional>
#include <string>

#include "cir/ir.hpp"
#include "support/tuning_choice.hpp"

namespace zyntax {

struct CpuPlan {
  std::optional<cir::Kernel> kernel;  // none: the kernel runs on the reference executor
  std::string why_not;                // and why
  bool writes_whole_output = false;   // the output needs no zero-filling
  // Too little work to pay for waking other threads (tens of microseconds
  // on a busy machine): the calling thread runs all of it.
  bool one_thread = false;
};

// Operations (cir::count_operations) below which a kernel runs on the
// calling thread alone.
constexpr double kCpuOperationsToShare = 32768;

// The rules' tasks per thread: the outer loop widened to this many per
// thread, a whole-tensor reduction folded in this many chunks per thread.
constexpr int64_t kCpuTasksPerThread = 4;

// The rules' unroll of an interchanged reduction's loop into its vector
// loop (interchange_reductions' jam): a matrix-vector product's running
// sums loaded and stored once per 4 rows of the matrix.
constexpr int64_t kCpuReductionJam = 4;

// The rules' count of long row sums computed at once (jam_row_sums): each
// core then streams that many rows from memory side by side.
constexpr int64_t kCpuRowsAtOnce = 8;

// From this many threads a loop of atomic updates runs on all of them; with
// fewer, in order on one (one core's vector adds beat compare-and-swap
// loops on a few).
constexpr int kCpuAtomicThreads = 16;

// `threads`: how many threads will share the kernel's outer parallel loop;
// `vector_bits`: the widest vector register (256 for AVX2, 512 for AVX-512);
// `choice`: the tuner's knobs (plan/cpu_tuning), empty for the rules alone.
CpuPlan plan_cpu_kernel(const cir::Kernel& k, int threads, int vector_bits, const TuningChoice& choice = {});

}  // namespace zyntax
