// A kernel's interface under other names: its inputs, host scalars and
// dimensions renamed everywhere they appear (params, dims, reads, extents),
// or dimensions made constants. Fusion across host code renames each
// block's interface apart, so that two blocks' `x` or `s` that are
// different tensors or numbers stay apart in the kernel they fuse into, and
// gives their sizes as numbers, so that extents that are equal are seen so.
#pragma once

#include <map>
#include <string>

#include "cir/ir.hpp"

namespace zyntax::cir {

// Names absent from `to` keep theirs; the output keeps its name. The dims
// in `sizes` become those constants (and are no longer dims).
Kernel rename_interface(const Kernel& k, const std::map<std::string, std::string>& to,
                        const std::map<std::string, int64_t>& sizes = {});

}  // namespace zyntax::cir
