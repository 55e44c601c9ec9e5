// Operations that move elements without computing on them: transpose,
// reshape, concat, split and NumPy basic indexing.
#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/tensor_op_helpers.hpp"
#include "runtime/tensor_ops.hpp"

namespace zyntax {

namespace {

// memmove: assigning a view of a tensor to itself copies elements onto themselves.
void copy_element(Tensor& dst, int64_t dst_flat, const Tensor& src, int64_t src_flat) {
  size_t size = dtype_size(dst.dtype());
  std::memmove(dst.data_as<unsigned char>() + dst_flat * size, src.data_as<unsigned char>() + src_flat * size, size);
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= s[d];
  return n;
}

// The elements a selection picks out of a tensor: their shape, and where
// each one lives in the source (base offset plus one stride per axis).
struct Region {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t base = 0;
};

Region select_region(const std::string& op, const Shape& shape, const std::vector<AxisSelect>& sel) {
  if (sel.size() > shape.size())
    throw DataError(op + ": too many indices (" + std::to_string(sel.size()) + ") for shape " + shape_str(shape));
  std::vector<int64_t> own = shape_strides(shape);
  Region r;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    int64_t n = shape[axis];
    if (axis >= sel.size()) {
      r.shape.push_back(n);
      r.strides.push_back(own[axis]);
      continue;
    }
    const AxisSelect& s = sel[axis];
    if (s.kind == AxisSelect::Index) {
      if (s.index < -n || s.index >= n)
        throw DataError(op + ": index " + std::to_string(s.index) + " is out of range for axis " +
                        std::to_string(axis) + " of shape " + shape_str(shape));
      r.base += (s.index < 0 ? s.index + n : s.index) * own[axis];
      continue;
    }
    if (s.step <= 0)
      throw DataError(op + ": slice step must be positive, got " + std::to_string(s.step) + " (axis " +
                      std::to_string(axis) + ")");
    auto clamp = [n](int64_t v) { return v < 0 ? std::max<int64_t>(v + n, 0) : std::min(v, n); };
    int64_t begin = s.begin ? clamp(*s.begin) : 0;
    int64_t end = s.end ? clamp(*s.end) : n;
    int64_t count = end > begin ? (end - begin - 1) / s.step + 1 : 0;
    if (count > 0) r.base += begin * own[axis];
    r.shape.push_back(count);
    // With at most one element the stride is never applied (and step may be huge).
    r.strides.push_back(count > 1 ? s.step * own[axis] : 0);
  }
  return r;
}

}  // namespace

Tensor transpose(const Tensor& a, const std::vector<int64_t>& perm) {
  require_valid("transpose", a);
  const Shape& s = a.shape();
  size_t rank = s.size();
  std::vector<int64_t> axes(rank);
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i) axes[i] = static_cast<int64_t>(rank - 1 - i);
  } else {
    if (perm.size() != rank)
      throw DataError("transpose: permutation " + shape_str(perm) + " does not match shape " + shape_str(s));
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < rank; ++i) {
      axes[i] = normalize_axis("transpose", perm[i], s);
      if (seen[axes[i]])
        throw DataError("transpose: axis " + std::to_string(perm[i]) + " repeats in permutation " + shape_str(perm));
      seen[axes[i]] = true;
    }
  }
  std::vector<int64_t> own = shape_strides(s);
  Shape out_shape(rank);
  std::vector<int64_t> strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_shape[i] = s[axes[i]];
    strides[i] = own[axes[i]];
  }
  Tensor out = Tensor::empty(a.dtype(), out_shape);
  StridedWalk walk(out_shape, {strides});
  for (int64_t i = 0; i < out.numel(); ++i, walk.next()) copy_element(out, i, a, walk.offset(0));
  return out;
}

Tensor reshape(const Tensor& a, const Shape& shape) {
  require_valid("reshape", a);
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw DataError("reshape: cannot reshape " + shape_str(a.shape()) + " into " + shape_str(shape) +
                      " (only one -1 is allowed and no other negative size)");
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      throw DataError("reshape: shape " + shape_str(shape) + " has too many elements");
    }
  }
  Shape target = shape;
  if (inferred >= 0) {
    if (known == 0 || a.numel() % known != 0)
      throw DataError("reshape: cannot reshape " + shape_str(a.shape()) + " into " + shape_str(shape));
    target[inferred] = a.numel() / known;
  }
  return a.reshaped(std::move(target));
}

Tensor concat(const std::vector<Tensor>& parts, int64_t axis) {
  if (parts.empty()) throw DataError("concat: no tensors to join");
  for (const Tensor& p : parts) require_valid("concat", p);
  const Shape& first = parts[0].shape();
  if (first.empty()) throw DataError("concat: 0-d tensors cannot be joined");
  size_t ax = static_cast<size_t>(normalize_axis("concat", axis, first));
  DType t = parts[0].dtype();
  int64_t total = 0;
  for (const Tensor& p : parts) {
    const Shape& s = p.shape();
    bool match = s.size() == first.size();
    for (size_t d = 0; match && d < s.size(); ++d) match = d == ax || s[d] == first[d];
    if (!match)
      throw DataError("concat: shapes " + shape_str(first) + " and " + shape_str(s) + " differ outside axis " +
                      std::to_string(axis));
    if (__builtin_add_overflow(total, s[ax], &total)) throw DataError("concat: result has too many elements");
    t = promote(t, p.dtype());
  }
  Shape out_shape = first;
  out_shape[ax] = total;
  Tensor out = Tensor::empty(t, out_shape);
  if (out.numel() == 0) return out;
  int64_t outer = product(first, 0, ax), inner = product(first, ax + 1, first.size());
  size_t size = dtype_size(t);
  std::vector<Tensor> inputs;
  for (const Tensor& p : parts) inputs.push_back(converted(p, t));
  unsigned char* dst = out.data_as<unsigned char>();
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor& p : inputs) {
      size_t chunk = static_cast<size_t>(p.dim(static_cast<int64_t>(ax)) * inner) * size;
      if (chunk == 0) continue;  // an empty part may have no storage to copy from
      std::memcpy(dst, p.data_as<unsigned char>() + o * chunk, chunk);
      dst += chunk;
    }
  return out;
}

std::vector<Tensor> split(const Tensor& a, int64_t parts, int64_t axis) {
  require_valid("split", a);
  const Shape& s = a.shape();
  if (s.empty()) throw DataError("split: a 0-d tensor cannot be split");
  size_t ax = static_cast<size_t>(normalize_axis("split", axis, s));
  if (parts <= 0) throw DataError("split: the number of parts must be positive, got " + std::to_string(parts));
  if (s[ax] % parts != 0)
    throw DataError("split: axis " + std::to_string(axis) + " of shape " + shape_str(s) + " does not divide into " +
                    std::to_string(parts) + " equal parts");
  Shape piece_shape = s;
  piece_shape[ax] = s[ax] / parts;
  int64_t outer = product(s, 0, ax), inner = product(s, ax + 1, s.size());
  size_t chunk = static_cast<size_t>(piece_shape[ax] * inner) * dtype_size(a.dtype());
  std::vector<Tensor> pieces;
  for (int64_t p = 0; p < parts; ++p) {
    Tensor piece = Tensor::empty(a.dtype(), piece_shape);
    if (piece.numel() > 0)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(piece.data_as<unsigned char>() + o * chunk,
                    a.data_as<unsigned char>() + (o * parts + p) * chunk, chunk);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

Tensor select(const Tensor& a, const std::vector<AxisSelect>& sel) {
  require_valid("select", a);
  Region r = select_region("select", a.shape(), sel);
  Tensor out = Tensor::empty(a.dtype(), r.shape);
  StridedWalk walk(r.shape, {r.strides}, {r.base});
  for (int64_t i = 0; i < out.numel(); ++i, walk.next()) copy_element(out, i, a, walk.offset(0));
  return out;
}

void assign(Tensor& a, const std::vector<AxisSelect>& sel, const Tensor& value) {
  require_valid("assign", a);
  require_valid("assign", value);
  Region r = select_region("assign", a.shape(), sel);
  // Leading size-1 axes of the value broadcast away, as in NumPy.
  Shape value_shape = value.shape();
  while (value_shape.size() > r.shape.size() && value_shape.front() == 1) value_shape.erase(value_shape.begin());
  std::optional<Shape> joint = try_broadcast(value_shape, r.shape);
  if (!joint || *joint != r.shape)
    throw DataError("assign: value of shape " + shape_str(value.shape()) +
                    " does not broadcast to the selected shape " + shape_str(r.shape));
  Tensor source = converted(value, a.dtype());
  StridedWalk walk(r.shape, {r.strides, broadcast_strides(value_shape, r.shape)}, {r.base, 0});
  int64_t n = shape_numel(r.shape);
  for (int64_t i = 0; i < n; ++i, walk.next()) copy_element(a, walk.offset(0), source, walk.offset(1));
}

}  // namespace zyntax
