// The ROCm device libraries' ocml (their math library as LLVM bitcode,
// Debian's rocm-device-libs or /opt/rocm/amdgcn/bitcode/ocml.bc), embedded
// in the binary when the build found it, so that the machines that compile
// kernels need no ROCm. Empty when the build did not find it.
#pragma once

#include <string_view>

namespace zyntax::codegen {

std::string_view ocml_bitcode();

}  // namespace zyntax::codegen
