// NumPy arrays in and out without a round trip through Python: an ndarray
// read in place (C-contiguous, aligned, writeable, of an element type we
// have) and an Array's host memory shown as an ndarray that keeps the Array
// alive. What the calls of kernels and functions take and give on their
// fast path; anything else goes through DLPack (dlpack_exchange).
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

#include "dlpack_exchange.hpp"
#include "host_view.hpp"

namespace zyntax::python {

// NumPy's type string for an element type ("<f4"); null where NumPy has
// none (bf16).
const char* numpy_typestr(ElementType t);

// An Array of `type` and `shape` over `data`, which Python object `holder`
// owns: read in place on a CPU device (the Array keeps a reference to
// `holder`, given back under the interpreter lock from whichever thread
// lets go last), copied onto another device.
PyArray array_held_by(pybind11::handle holder, void* data, ElementType type, const std::vector<size_t>& shape,
                      const ComputeDevice& device);

// `obj` as an Array on `device` where it is an ndarray this can take as it
// is (in place on a CPU device, copied to another); nullopt for anything
// else (the caller's general path decides).
std::optional<PyArray> array_from_numpy(pybind11::handle obj, const ComputeDevice& device);

// `obj`'s elements where it is an ndarray read in place as it is (C-
// contiguous, aligned, of an element type we have, at most
// HostView::kMostAxes axes); nullopt for anything else.
std::optional<HostView> numpy_view(pybind11::handle obj);

// A new ndarray of `type` and `shape` (NumPy's own memory); None where
// NumPy has no such type (bf16).
pybind11::object numpy_empty(ElementType type, const std::vector<size_t>& shape);

// An ndarray over the array's host memory, writable, owning `a`; None where
// its elements are not in host memory or NumPy has no such type.
pybind11::object numpy_over(const PyArray& a);

}  // namespace zyntax::python
