// The tensor maps an NVIDIA entry point takes (kernel_abi.hpp: one per
// factor of each warpgroup product, after the status pointer), as the
// lowering of a warpgroup product reads them.
#pragma once

#include <vector>

namespace llvm {
class Value;
}

namespace zyntax::codegen {

class Emitter;

// The entry's tensor map parameters in kernel_abi's order
// (tensor_map_params(kernel): the first product's a, its b, the next
// product's a, ...): generic pointers (address space 0) to the 128-byte
// by-value maps, grid_constant, so `ptrtoint` of one gives the generic
// address cp.async.bulk.tensor takes. Empty before NvptxLlvmTarget::emit_entry
// and for kernels without a warpgroup product. Kept in the NVPTX hooks'
// per-kernel state (Emitter::target_state<> of nvptx_llvm_target.cpp's own
// type): other NVPTX code must not give target_state a type of its own.
const std::vector<llvm::Value*>& tensor_map_args(Emitter& e);

}  // namespace zyntax::codegen
