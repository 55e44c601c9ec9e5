#include "sema/builtin_names.hpp"

#include <algorithm>

#include "support/scalar.hpp"

namespace zyntax {

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {
        // input and output
        "print", "println", "load", "save", "time", "latency",
        // tensors made
        "zeros", "ones", "full", "arange", "rand", "randn",
        // layout
        "reshape", "transpose", "concat", "split", "shape",
        // reductions
        "sum", "mean", "prod", "max", "min", "argmax", "argmin", "all", "any",
        // values and conversions
        "int", "float", "bool", "str", "len", "astype", "assert",
        // devices and memory
        "compute_devices", "to_device", "allocate", "memory_pool",
        // the ranks of a job started by mpirun (rank 0 of 1 otherwise)
        "rank", "world_size", "all_reduce", "broadcast", "all_gather",
        // tensor math beyond the element-wise functions
        "matmul", "where", "allclose", "assert_close"};
    // Every element-wise math function (min and max are reductions above).
    for (int k = 0; k <= static_cast<int>(kLastMathFn); ++k) {
      MathFn fn = static_cast<MathFn>(k);
      if (fn != MathFn::Min && fn != MathFn::Max) n.push_back(math_fn_name(fn));
    }
    std::sort(n.begin(), n.end());
    return n;
  }();
  return names;
}

bool is_builtin(const std::string& name) {
  const std::vector<std::string>& n = builtin_names();
  return std::binary_search(n.begin(), n.end(), name);
}

}  // namespace zyntax
