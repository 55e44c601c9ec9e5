#include "cir/passes/specialize.hpp"

#include <stdexcept>

#include "cir/passes/simplify.hpp"
#include "cir/substitute.hpp"
#include "cir/verifier.hpp"

namespace zyntax::cir {

Kernel specialize(const Kernel& k, const std::map<std::string, int64_t>& dims) {
  Substitution sizes;
  for (const DimParam& d : k.dims) {
    auto it = dims.find(d.name);
    if (it == dims.end())
      throw std::invalid_argument("specialising kernel " + k.name + ": no size for dim '" + d.name + "'");
    if (it->second < 0)
      throw std::invalid_argument("specialising kernel " + k.name + ": dim '" + d.name + "' has negative size " +
                                  std::to_string(it->second));
    sizes[d.name] = i64(it->second);
  }
  Kernel out = substitute(k, sizes);
  out.dims.clear();
  out = simplify(out);
  verify_or_throw(out, "specialize");
  return out;
}

}  // namespace zyntax::cir
