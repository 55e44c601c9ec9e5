// How all_reduce and reduce_scatter combine the ranks' elements.
#pragma once

#include <cstdint>

namespace zyntax::dist {

// Mean is the sum divided by the number of ranks; integers divide as C++
// does (truncating toward zero). On bool tensors Sum and Max are a logical
// or, Min a logical and, and Mean is an error.
enum class ReduceOp : uint8_t { Sum, Max, Min, Mean };

inline const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Mean: return "mean";
  }
  return "?";
}

}  // namespace zyntax::dist
