// NVIDIA's libdevice (the CUDA toolkit's nvvm/libdevice/libdevice.10.bc),
// embedded in the binary when the build found it, so that the machines that
// run kernels need no toolkit. Empty when the build did not find it.
#pragma once

#include <string_view>

namespace zyntax::codegen {

std::string_view libdevice_bitcode();

}  // namespace zyntax::codegen
