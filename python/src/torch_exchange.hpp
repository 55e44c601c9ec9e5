// torch CPU tensors in and out without DLPack and without importing torch's
// C++ headers: a contiguous tensor that needs no gradient is read in place
// through its data pointer (a handful of attribute reads), and a result goes
// back as torch.from_numpy over the result's host memory. What the calls of
// kernels take and give on their fast path; anything else (CUDA tensors,
// tensors that need a gradient, strided views) goes through the general path.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

#include "dlpack_exchange.hpp"
#include "host_view.hpp"

namespace zyntax::python {

// `obj`'s elements where it is a torch tensor read in place as it is (on
// the CPU, contiguous, of an element type we have, at most
// HostView::kMostAxes axes, needing no gradient unless `grad_handled`);
// nullopt for anything else.
std::optional<HostView> torch_view(pybind11::handle obj, bool grad_handled);

// `obj` as an Array on `device` where it is a torch tensor this can take as
// it is (on the CPU, contiguous, of an element type we have, and needing no
// gradient unless `grad_handled`: zyntax.torch's autograd functions handle
// it); nullopt for anything else.
std::optional<PyArray> array_from_torch(pybind11::handle obj, const ComputeDevice& device, bool grad_handled = false);

// A CPU torch tensor sharing `ndarray`'s memory (torch.from_numpy).
pybind11::object torch_over(pybind11::handle ndarray);

}  // namespace zyntax::python
