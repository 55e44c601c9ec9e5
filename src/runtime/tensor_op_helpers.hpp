// Helpers shared by the tensor operation files; not part of the public API.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/tensor.hpp"

namespace zyntax {

// Row-major walk over an index space that tracks, for several operands at
// once, the flat element offset each operand has at the current position.
// Broadcasting (stride 0), transposition (permuted strides) and slicing
// (scaled strides plus a base offset) are all instances of it.
class StridedWalk {
 public:
  // `strides[k]` holds one stride per axis of `shape` for operand k.
  StridedWalk(const Shape& shape, std::vector<std::vector<int64_t>> strides, std::vector<int64_t> bases = {})
      : shape_(shape), strides_(std::move(strides)), index_(shape.size(), 0) {
    offsets_ = bases.empty() ? std::vector<int64_t>(strides_.size(), 0) : std::move(bases);
  }

  int64_t offset(size_t operand) const { return offsets_[operand]; }

  // Advances to the next position; past the last one the offsets are unspecified.
  void next() {
    for (size_t axis = shape_.size(); axis-- > 0;) {
      if (++index_[axis] < shape_[axis]) {
        for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][axis];
        return;
      }
      index_[axis] = 0;
      for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] -= strides_[k][axis] * (shape_[axis] - 1);
    }
  }

 private:
  Shape shape_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
};

// Strides (in elements) that read a tensor of shape `in` as if it were
// broadcast to `out`: missing and size-1 axes get stride 0.
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> own = shape_strides(in);
  std::vector<int64_t> result(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t axis = 0; axis < in.size(); ++axis)
    result[lead + axis] = in[axis] == 1 ? 0 : own[axis];
  return result;
}

// NumPy broadcasting of two shapes; nullopt when they are incompatible.
inline std::optional<Shape> try_broadcast(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

inline void require_valid(const std::string& op, const Tensor& t) {
  if (!t.valid()) throw DataError(op + ": null tensor");
}

// The tensor itself when it already has `dtype`, else a converted copy.
inline Tensor converted(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : t.astype(dtype); }

// Maps a possibly negative axis into [0, rank), or DataError naming the axis and shape.
inline int64_t normalize_axis(const std::string& op, int64_t axis, const Shape& shape) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank)
    throw DataError(op + ": axis " + std::to_string(axis) + " is out of range for shape " + shape_str(shape));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace zyntax
