// Compiles kernels for the host CPU: the shared CIR → LLVM lowering, LLVM's
// O3 pipeline tuned for the host (its vector width, unless a lower SIMD level
// is forced), object code, then ORC's LLJIT. One JIT per process; compiled
// kernels are kept for its lifetime under the hash of their CIR, and their
// object code on disk (runtime/disk_cache.hpp) under the CIR, the target and
// the compiler's version.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cir/ir.hpp"
#include "codegen/llvm/cpu/cpu_target.hpp"
#include "codegen/llvm/ir_emitter.hpp"
#include "codegen/llvm/kernel_abi.hpp"

namespace llvm {
class TargetMachine;
namespace orc {
class LLJIT;
}
}  // namespace llvm

namespace zyntax::codegen {

class CpuJit {
 public:
  static CpuJit& instance();
  ~CpuJit();

  const CpuTarget& target() const { return target_; }

  struct Compiled {
    KernelFn fn = nullptr;
  };
  // The kernel must be specialised and accepted by cpu_unsupported_reason().
  const Compiled& compile(const cir::Kernel& k, uint64_t hash);

  // Code another emitter built (host functions, host/host_compiler): the
  // kernels' O3 pipeline, object code and disk cache (under `key`, unless
  // empty), in a library of its own that also sees `helpers`; the address
  // of `symbol`. The module is optimised in place.
  void* compile_module(llvm::Module& m, const std::string& key, const std::string& symbol,
                       const std::vector<std::pair<std::string, void*>>& helpers);

  // How the last compile() that did work went: built from CIR (lowering,
  // O3, code generation) or loaded from the disk cache, and how long it took.
  struct Stats {
    bool from_disk = false;
    double milliseconds = 0;
  };
  Stats last_compile() const { return last_; }

  // The optimised kernel as LLVM IR ("llvm"), assembly ("asm") or an ELF
  // object ("obj", bytes).
  std::string emit(const cir::Kernel& k, const std::string& what);

 private:
  CpuJit();
  std::string cache_key(const cir::Kernel& k) const;
  std::string object_code(llvm::Module& m);
  llvm::TargetMachine& code_generator(const llvm::Module& m);  // machine_ or quick_machine_
  std::unique_ptr<llvm::Module> build(const cir::Kernel& k, llvm::LLVMContext& ctx, const std::string& name);
  // Makes `m` code for the host: triple, data layout, CPU attributes, O3.
  void prepare(llvm::Module& m);
  // Loads object code into a library of its own; the address of `symbol`, or null.
  void* load(const std::string& object, const std::string& symbol, const std::vector<std::pair<std::string, void*>>& helpers);

  CpuTarget target_;
  std::unique_ptr<llvm::TargetMachine> machine_;
  // Code generation without its optimisations, for kernels with a basic
  // block past kMostInstructionsPerOptimizedBlock: the register allocator
  // and machine scheduler grow faster than linearly in a block's size.
  std::unique_ptr<llvm::TargetMachine> quick_machine_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<Compiled>> compiled_;
  Stats last_;
  int libraries_ = 0;
};

}  // namespace zyntax::codegen
