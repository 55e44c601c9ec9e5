#include <algorithm>
#include <string>
#include <vector>

#include "runtime/tensor_ops.hpp"

namespace zyntax {

namespace {

void format_axis(const Tensor& t, const std::vector<int64_t>& strides, size_t axis, int64_t base, int64_t edge,
                 std::string& out) {
  int64_t n = t.shape()[axis];
  bool elide = n - edge > edge;
  out += '[';
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    if (elide && i == edge) {
      out += "..., ";
      i = n - edge;
    }
    int64_t flat = base + i * strides[axis];
    if (axis + 1 == strides.size())
      out += t.get(flat).str();
    else
      format_axis(t, strides, axis + 1, flat, edge, out);
  }
  out += ']';
}

}  // namespace

std::string format_tensor(const Tensor& t, int64_t edge_items) {
  if (!t.valid()) return "tensor(null)";
  std::string out = "tensor(";
  if (t.rank() == 0)
    out += t.get(0).str();
  else
    format_axis(t, shape_strides(t.shape()), 0, 0, std::max<int64_t>(edge_items, 1), out);
  return out + ", " + dtype_name(t.dtype()) + ")";
}

}  // namespace zyntax
