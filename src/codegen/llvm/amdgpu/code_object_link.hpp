// An AMDGPU ELF object linked into an HSA code object (a shared object the
// HIP and HSA runtimes load) by LLVM's linker, ld.lld, run as a process:
// $ZYNTAX_LLD, else ld.lld-19 or ld.lld on PATH or in LLVM 19's or ROCm's
// directories.
#pragma once

#include <string>

namespace zyntax::codegen {

// The linker's path, or "" where there is none.
std::string find_lld();

// The code object's bytes; throws std::runtime_error with the linker's
// messages where it fails.
std::string link_code_object(const std::string& object);

}  // namespace zyntax::codegen
