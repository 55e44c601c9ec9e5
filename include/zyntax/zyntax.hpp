// The Zyntax Compute C++ API: compute devices, buffers, fused element-wise
// kernels and the ML op library. Link Zyntax::zyntax (CMake:
// find_package(Zyntax)) or `pkg-config --cflags --libs zyntax`.
#pragma once

#include "zyntax/array.hpp"
#include "zyntax/buffer.hpp"
#include "zyntax/compute_device.hpp"
#include "zyntax/distributed.hpp"
#include "zyntax/errors.hpp"
#include "zyntax/expr.hpp"
#include "zyntax/export.hpp"
#include "zyntax/future.hpp"
#include "zyntax/program.hpp"

namespace zyntax {

// "0.1.0"
ZYNTAX_API const char* version();

}  // namespace zyntax
