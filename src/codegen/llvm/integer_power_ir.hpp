// zyntax_rt_ipow (ir_emitter.hpp) as IR in the module, for the GPUs, where
// the runtime's own function is not callable: the same steps, square and
// multiply, an error for a negative exponent of a base other than ±1.
#pragma once

#include <llvm/IR/Module.h>

namespace zyntax::codegen {

// The module's internal "zyntax_ipow" of `type` (i64 base, i64 exponent,
// i32 signed, i32* error → i64), made at the first call.
llvm::FunctionCallee integer_power_function(llvm::Module& module, llvm::FunctionType* type);

}  // namespace zyntax::codegen
