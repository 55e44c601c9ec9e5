#include "codegen/llvm/ir_emitter.hpp"

#include "codegen/llvm/emitter.hpp"

namespace zyntax::codegen {

extern "C" uint64_t zyntax_rt_ipow(uint64_t base, int64_t exponent, int32_t is_signed, int32_t* error) {
  if (is_signed && exponent < 0) {
    int64_t b = static_cast<int64_t>(base);
    if (b == 1) return 1;
    if (b == -1) return (exponent % 2 == 0) ? 1 : static_cast<uint64_t>(-1);
    *error = 1;
    return 0;
  }
  uint64_t e = static_cast<uint64_t>(exponent), result = 1;
  while (e) {  // wraps like repeated multiplication
    if (e & 1) result *= base;
    base *= base;
    e >>= 1;
  }
  return result;
}

EmittedKernel emit_kernel(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& function_name, const LlvmTarget& target) {
  return Emitter(k, ctx, function_name, target).run();
}

}  // namespace zyntax::codegen
