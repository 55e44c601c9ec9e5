// The standard library shipped inside zyntax: stdlib/*.zynml, embedded when
// it is built (cmake/stdlib_sources.cmake). The op library of the C++ API
// compiles it, and a program reaches it with `import nn`.
#pragma once

#include <map>
#include <string>

namespace zyntax {

// (file name "stdlib/nn.zynml", text) of each module.
const std::map<std::string, std::string>& stdlib_sources();

// Where `import NAME` finds a stdlib module that is not next to the
// importing file: "<stdlib>/NAME.zynml".
constexpr const char* kStdlibPrefix = "<stdlib>/";

}  // namespace zyntax
