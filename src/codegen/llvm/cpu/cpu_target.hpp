// The host CPU as a code generation target: its triple, model and features,
// read at run time, and the SIMD level kernels are compiled for. The level
// can be forced lower (ZYNTAX_CPU_SIMD=avx2|sse4.1|scalar, or
// `zyntax run --simd`) to test or to match another machine.
#pragma once

#include <string>

namespace zyntax::codegen {

struct CpuTarget {
  std::string triple;
  std::string cpu;       // e.g. "skylake-avx512"
  std::string features;  // "+avx2,+fma,..." as LLVM takes them
  std::string simd;      // "avx512", "avx2", "sse4.1", "neon" or "scalar"
  int vector_bits = 0;   // widest vector register used
};

// The host, at the level `force` names ("" for the best it has).
CpuTarget detect_host_cpu(const std::string& force = "");

// The SIMD level asked for by ZYNTAX_CPU_SIMD, or "".
std::string forced_simd_level();

}  // namespace zyntax::codegen
