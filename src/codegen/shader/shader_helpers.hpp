// What the shader math libraries (codegen/shader/f32_math,
// codegen/glsl/glsl_f64_math) share: a table of helpers, each some source
// and the helpers it calls, written out for the names a shader asks for;
// and the series coefficients they compute rather than copy in.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace zyntax::codegen {

struct ShaderHelper {
  const char* name;
  std::vector<const char*> calls;  // helpers this one's source calls
  std::function<std::string()> source;
};

// The sources of the named helpers and of every helper they call, in the
// table's order (which lists every helper after those it calls).
std::string write_helpers(const std::vector<ShaderHelper>& table, const std::set<std::string>& names, const std::string& library);

long double factorial(int n);

// c(0), c(1), ..., c(terms - 1).
std::vector<long double> series(int terms, const std::function<long double(int)>& c);

}  // namespace zyntax::codegen
