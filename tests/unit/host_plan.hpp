// A kernel's CPU plan for this machine's vector width, as the cpu device makes it.
#pragma once

#include "codegen/llvm/cpu/cpu_jit.hpp"
#include "plan/cpu_plan.hpp"

namespace zyntax::testing {

inline CpuPlan host_cpu_plan(const cir::Kernel& k, int threads) {
  return plan_cpu_kernel(k, threads, codegen::CpuJit::instance().target().vector_bits);
}

}  // namespace zyntax::testing
