// What a kernel can see of the host program around it. The checker answers
// from static types (no data needed); the interpreter answers from values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/dtype.hpp"
#include "support/source.hpp"

namespace zyntax {

struct HostBinding {
  enum class Kind { Int, Float, Bool, Tensor, Other, Unknown };
  Kind kind = Kind::Unknown;
  Span decl;  // where the host name was declared
  // For a dimension declared by parameter types (`x: tensor[batch, seq]`
  // makes `batch` = x.shape[0]): every (parameter, axis) it names.
  std::vector<std::pair<std::string, int>> param_axes;
};

class HostEnv {
 public:
  virtual ~HostEnv() = default;
  virtual std::optional<HostBinding> lookup(std::string_view name) const = 0;
};

// What is known about one compute input before lowering: at run time
// everything (from the tensor), at check time what the host types say.
struct InputSignature {
  std::string path;  // as written: `x`, `weights.qkv_proj`
  Span span;
  std::optional<int> rank;
  std::optional<DType> dtype;
  std::vector<std::optional<int64_t>> extents;  // static sizes, when known
  // When the rank is not known: how many axes more than its deepest indexing
  // shows to assume (a guess the checker varies to print a kernel's CIR).
  int rank_guess_extra = 0;
};

}  // namespace zyntax
