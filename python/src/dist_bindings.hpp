// zyntax.dist's functions in the _zyntax extension (dist_bindings.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace zyntax::python {

void bind_dist(pybind11::module_& m);

}  // namespace zyntax::python
