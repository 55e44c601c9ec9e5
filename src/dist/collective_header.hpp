// What each rank says about the collective it is in, exchanged among all
// ranks before the data moves: ranks in different collectives, or with
// different dtypes, shapes, reductions or roots, get an error on every rank
// instead of a hang or a wrong result.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "dist/reduce_op.hpp"
#include "runtime/tensor.hpp"

namespace zyntax::dist {

enum class CollectiveKind : uint8_t { Barrier, Broadcast, AllReduce, AllGather, ReduceScatter };

const char* collective_name(CollectiveKind kind);  // "all_reduce", ...

// Fixed size, so that all ranks exchange it with one MPI_Allgather of bytes.
struct CollectiveHeader {
  static constexpr int kMaxDims = 64;  // as many axes as a Tensor may have

  // The collective's number on its communicator: a rank that skipped or
  // repeated one differs here even when the kinds happen to match.
  uint64_t sequence = 0;
  uint8_t kind = 0;
  uint8_t dtype = 0;
  uint8_t reduce = 0;  // ReduceOp, for AllReduce and ReduceScatter
  uint8_t ndim = 0;
  int32_t param = 0;  // the root of a Broadcast, the axis of an AllGather
  int64_t dims[kMaxDims] = {};

  Shape shape() const { return Shape(dims, dims + ndim); }
};
static_assert(std::is_trivially_copyable_v<CollectiveHeader>);

// A DistError for a shape of more than kMaxDims axes.
CollectiveHeader make_header(CollectiveKind kind, uint64_t sequence, DType dtype, const Shape& shape,
                             ReduceOp reduce = ReduceOp::Sum, int32_t param = 0);

// Empty when all ranks' headers (in rank order) agree, else what differs,
// rank by rank ("ranks disagree on the tensor: rank 0 has f32[4,5], rank 1
// has f32[4,6]"). An AllGather's headers may differ in the gathered axis
// (none where the axis is negative: equal blocks only).
std::string find_disagreement(const std::vector<CollectiveHeader>& headers);

// "f32[4,5]"; "f32[]" for a 0-d tensor.
std::string tensor_text(DType dtype, const Shape& shape);

}  // namespace zyntax::dist
