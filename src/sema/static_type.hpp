// What the checker knows about a host value before the program runs. Much
// is Unknown; what is known (a tensor's rank, dtype, constant sizes; an
// integer's value) lets kernels be lowered and checked without data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/dtype.hpp"
#include "syntax/ast.hpp"

namespace zyntax {

struct LoadedModule;

struct StaticType {
  enum class Kind { Unknown, None, Bool, Int, Float, Str, Tensor, List, Tuple, Record, Function, Builtin, DType, Module, Future };
  Kind kind = Kind::Unknown;

  std::optional<int64_t> int_value;  // Int: a constant

  // Tensor (and Future of a tensor).
  std::optional<int> rank;
  std::optional<DType> dtype;
  std::vector<std::optional<int64_t>> extents;

  std::vector<StaticType> elems;                           // Tuple elements; List: [element] if uniform
  // Record fields, in order (names and types apart: a pair would need StaticType complete here).
  std::vector<std::string> field_names;
  std::vector<StaticType> field_types;
  const ast::FuncDef* function = nullptr;
  LoadedModule* module = nullptr;
  std::shared_ptr<StaticType> inner;  // Future

  static StaticType of(Kind k) {
    StaticType t;
    t.kind = k;
    return t;
  }
  static StaticType integer(std::optional<int64_t> v = std::nullopt) {
    StaticType t = of(Kind::Int);
    t.int_value = v;
    return t;
  }
  static StaticType tensor(std::optional<int> rank, std::optional<DType> dtype = std::nullopt) {
    StaticType t = of(Kind::Tensor);
    t.rank = rank;
    t.dtype = dtype;
    if (rank) t.extents.assign(static_cast<size_t>(*rank), std::nullopt);
    return t;
  }
  bool known() const { return kind != Kind::Unknown; }
};

}  // namespace zyntax
