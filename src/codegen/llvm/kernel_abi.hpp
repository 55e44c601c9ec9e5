// How compiled kernels are called. Every backend built on the shared CIR →
// LLVM lowering uses this one signature:
//
//   void kernel(void* const* args, int64_t begin, int64_t end, int32_t* status)
//
// - args: one pointer per kernel parameter, in order: the data of each
//   tensor (inputs and the output) and, for a scalar, a pointer to its value
//   stored in its dtype; then, for a kernel not specialised, a pointer to
//   each dimension's value (i64, in the order of its dims); then, for reduce
//   kernels, the buffers of ReduceBuffers.
// - [begin, end): which iterations of the kernel's outer parallel loop this
//   call runs, counted from 0 (the device splits the range over threads).
//   Kernels without an outer parallel loop run whole for any range that
//   contains 0, and do nothing otherwise.
// - status: set to the id (> 0) of the runtime check that failed (an index
//   out of bounds, an integer division by zero); the kernel then returns.
//
// On NVIDIA GPUs a kernel is an entry point taking the same values as its
// parameters, in the same order: a global pointer for each tensor, each
// scalar by value in its dtype (f16 as half, bf16 as its 16 bits, bool as a
// byte), each dimension of a generic kernel as i64, the reduce buffers, and
// last a global pointer to the i32 status. So the launcher's parameter list
// is `args` above with device pointers for the tensors, each a multiple of
// kGpuTensorAlignment (asynchronous copies move aligned 16-byte runs). Each thread of the
// grid takes iterations of the outer parallel loop, grid-stride (any grid
// size is correct); a kernel without one runs on thread 0 of block 0.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "cir/ir.hpp"

namespace zyntax::codegen {

using KernelFn = void (*)(void* const* args, int64_t begin, int64_t end, int32_t* status);

// Hopper's tensor copies read a product's factor through a tensor map the
// launcher makes (cuTensorMapEncodeTiled) from the factor's view
// (cir::ProductOperand) and its device address: a 128-byte value, 64-byte
// aligned, 128-byte swizzle, zeros past the edges. A GPU entry point takes
// one per factor of each warpgroup product (and per query, key and value
// input of each warpgroup attention), in the order of the kernel's walk,
// after the status pointer, each a by-value parameter the kernel reads in
// place (grid_constant).
struct TensorMapParam {
  cir::ProductOperand operand;   // which input, viewed how
  std::array<uint32_t, 3> box;   // elements one copy moves along each axis (the first 128 bytes)
};
std::vector<TensorMapParam> tensor_map_params(const cir::Kernel& k);
// How many of those come before the first of `node`'s.
size_t tensor_maps_before(const cir::Kernel& k, const cir::StmtNode* node);
// The box of a factor's copies: the depth step by the tile's side where
// the depth is the fast axis, else 128 bytes of side indices by the depth step.
std::array<uint32_t, 3> product_operand_box(const cir::ProductOperand& operand, int side_tile, int depth_tile);
constexpr int kTensorMapBytes = 128;

// The alignment in bytes of every tensor a GPU kernel is given.
constexpr uint64_t kGpuTensorAlignment = 16;

// Reduce kernels accumulate into buffers the device prepares, one element
// per output element: `acc` (f64 for float sums and products, else the
// output's dtype) filled with the operator's identity; for argmin/argmax
// `acc` is the output itself (the index), plus `best` (the best value so
// far, in the yielded dtype) and `has` (one byte per element: seen a value).
struct ReduceBuffers {
  DType acc_dtype = DType::F32;
  bool arg = false;
  DType best_dtype = DType::F32;
};
ReduceBuffers reduce_buffers(const cir::Kernel& k);

// How many pointers a CPU kernel's `args` holds: one per parameter, one per
// dimension of a generic kernel, and the reduce buffers (1, or 3 for arg
// reductions).
size_t argument_slots(const cir::Kernel& k);

// The outer loop that is split across threads: the kernel body is a single
// `parallel for` with constant bounds. Trip count and where it starts.
struct OuterLoop {
  int64_t lo = 0, step = 1, trips = 1;
};
std::optional<OuterLoop> outer_parallel_loop(const cir::Kernel& k);

}  // namespace zyntax::codegen
