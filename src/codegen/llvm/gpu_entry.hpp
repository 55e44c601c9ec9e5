// A GPU kernel's entry point as kernel_abi.hpp lays out its parameters: a
// global pointer per tensor, each scalar by value in its memory type (f16
// as half, bf16 as its 16 bits, bool as a byte), each dimension of a
// generic kernel as i64, the reduce buffers, and last the status pointer.
// Every GPU target's entry takes these; a target adds its calling
// convention or annotations, and any parameters of its own after the status.
#pragma once

#include <llvm/IR/Function.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cir/ir.hpp"

namespace zyntax::codegen {

class Emitter;

// One parameter as the launcher packs it: at a multiple of its size, in order.
struct GpuEntryArgument {
  std::string name;
  bool pointer = false;  // a global pointer (else a value)
  uint32_t size = 0;
  uint32_t offset = 0;
};
// The kernel_abi parameters of a kernel, the status last.
std::vector<GpuEntryArgument> gpu_entry_arguments(const cir::Kernel& k);

struct GpuEntry {
  llvm::Function* function = nullptr;
  unsigned status = 0;  // the status pointer's position
};

// The entry point e.function_name() in e.module(), its global pointers in
// `global_space`, followed by `extra` (a target's own: type and name).
// Pointers are aligned and not undefined; inputs are only read and do not
// alias (their loads may then take the read-only path and merge past
// stores), and the output is its own buffer except where a reduction
// accumulates into it through another parameter.
GpuEntry create_gpu_entry(Emitter& e, unsigned global_space, const std::vector<std::pair<llvm::Type*, std::string>>& extra = {});

// Binds the status and the kernel's parameters, with the builder in the
// body's entry block.
void bind_gpu_entry(Emitter& e, const GpuEntry& entry);

}  // namespace zyntax::codegen
