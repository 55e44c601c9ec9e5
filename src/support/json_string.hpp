// A string as a JSON string literal: quoted, with quotes, backslashes and
// control characters escaped (for the WebGPU kernel descriptions and the
// profiler's traces).
#pragma once

#include <string>

namespace zyntax {

std::string json_string(const std::string& s);

}  // namespace zyntax
