// LLVM's O3 pipeline over a module, for a target machine: what every
// backend runs between emitting a kernel's IR and generating its code.
#pragma once

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace zyntax::codegen {

// `vectorize`: the loop and SLP vectorizers (off to compile scalar code).
void optimize_o3(llvm::Module& m, llvm::TargetMachine& tm, bool vectorize = true);

}  // namespace zyntax::codegen
