// A kernel of a program called from Python as a function, the call's fast
// path in C++ (zyntax.KernelFunction derives from it): the arguments read
// where they are (NumPy arrays, CPU torch tensors, zyntax arrays in host
// memory), the call bound once per signature of element types, shapes and
// host values (Kernel::bind, kept here for the last few signatures), the
// result written into a new NumPy array. What a framework's dispatcher does
// for an op it has seen; anything else goes to the general path, written in
// Python, which converts, warns and reports.
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <memory>
#include <vector>

#include "zyntax/zyntax.hpp"

namespace zyntax::python {

class KernelCall {
 public:
  KernelCall(Kernel kernel, ComputeDevice device);

  // The result (a NumPy array, or a torch tensor over one where a tensor
  // came in), or null, having run nothing, where the arguments need the
  // general path: positional host values, device=, CUDA tensors, tensors
  // that need a gradient, strided or non-native-order arrays, lists, bf16.
  pybind11::object try_call(const pybind11::args& args, const pybind11::kwargs& kwargs);

 private:
  // The key of this call's signature into key_ and the arguments' data into
  // `data`; false where the general path must take it.
  static constexpr size_t kMostArrays = 16;  // more: the general path
  using ArgumentData = std::array<const void*, kMostArrays>;
  bool read_arguments(const pybind11::args& args, const pybind11::kwargs& kwargs, ArgumentData& data, bool& torch_in);
  std::shared_ptr<const BoundKernel> bound_for_key();

  Kernel kernel_;
  ComputeDevice device_;
  std::vector<pybind11::object> host_names_;  // the kernel's host values, as interned strings
  struct Binding {
    std::vector<int64_t> key;
    std::shared_ptr<const BoundKernel> bound;
  };
  static constexpr size_t kMostBindings = 8;
  std::vector<Binding> bindings_;  // the newest last
  // The signature of the call being made (used under the interpreter lock only).
  std::vector<int64_t> key_;
};

// Adds KernelCall to the module as _zyntax.KernelCall.
void add_kernel_call(pybind11::module_& m);

}  // namespace zyntax::python
