// Specialisation of a generic kernel on concrete dimension sizes: every dim
// becomes a constant, the kernel is simplified and loses its dims list, and
// the result is verified.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

// Sizes given for names that are not dims of `k` are ignored. Throws
// std::invalid_argument if a dim of the kernel has no size or a
// negative one, std::logic_error if the specialised kernel does not verify.
Kernel specialize(const Kernel& k, const std::map<std::string, int64_t>& dims);

}  // namespace zyntax::cir
