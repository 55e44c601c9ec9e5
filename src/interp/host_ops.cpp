#include "interp/host_ops.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>

#include "interp/host_convert.hpp"
#include "runtime/device.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

namespace {

// The tensor library's own limit, checked before anything is allocated.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 40;

// Zero-filling a tensor larger than the machine's memory would end in the
// process being killed rather than in an error the program can report.
uint64_t allocation_limit() {
  static const uint64_t limit = [] {
    uint64_t memory = host_memory_bytes();
    return memory > 0 && memory < kMaxTensorBytes ? memory : kMaxTensorBytes;
  }();
  return limit;
}

}  // namespace

bool shape_too_large(const Shape& shape, DType element) {
  // Like shape_numel, sizes must multiply within int64 even when one is zero.
  int64_t numel = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return true;
    if (d == 0)
      empty = true;
    else if (__builtin_mul_overflow(numel, d, &numel))
      return true;
  }
  return !empty && static_cast<uint64_t>(numel) > allocation_limit() / dtype_size(element);
}

Value value_of_scalar(const Scalar& s) {
  if (is_float(s.dtype)) {  // an element of an f32 tensor prints as f32
    Value v = Value::of_float(s.f);
    v.dtype = s.dtype;
    return v;
  }
  if (is_bool(s.dtype)) return Value::of_bool(s.i != 0);
  return Value::of_int(s.as_int64());
}

Tensor tensor_operand(const Value& v, DType partner) {
  if (v.kind == Value::Kind::Tensor) return v.tensor;
  DType t = partner;
  if (v.kind == Value::Kind::Float && !is_float(partner)) t = DType::F32;
  if (v.kind == Value::Kind::Int && is_bool(partner)) t = DType::I64;
  return Tensor::scalar(cast(v.as_scalar(), t));
}

Tensor tensor_of(const Value& v) {
  if (v.kind == Value::Kind::Tensor) return v.tensor;
  return Tensor::scalar(v.as_scalar());
}

namespace {

using Kind = Value::Kind;

BinaryOp scalar_op(ast::BinOp op) {
  switch (op) {
    case ast::BinOp::Add: return BinaryOp::Add;
    case ast::BinOp::Sub: return BinaryOp::Sub;
    case ast::BinOp::Mul: return BinaryOp::Mul;
    case ast::BinOp::Div: return BinaryOp::Div;
    case ast::BinOp::Mod: return BinaryOp::Mod;
    case ast::BinOp::Pow: return BinaryOp::Pow;
    case ast::BinOp::Eq: return BinaryOp::Eq;
    case ast::BinOp::Ne: return BinaryOp::Ne;
    case ast::BinOp::Lt: return BinaryOp::Lt;
    case ast::BinOp::Le: return BinaryOp::Le;
    case ast::BinOp::Gt: return BinaryOp::Gt;
    case ast::BinOp::Ge: return BinaryOp::Ge;
    default: break;
  }
  throw std::logic_error(std::string("no element-wise operator for '") + ast::binop_text(op) + "'");
}

bool is_ordering(ast::BinOp op) {
  return op == ast::BinOp::Lt || op == ast::BinOp::Le || op == ast::BinOp::Gt || op == ast::BinOp::Ge;
}

[[noreturn]] void unsupported(ast::BinOp op, const Value& a, const Value& b, Span span) {
  throw Error(span, std::string("unsupported operand types for '") + ast::binop_text(op) + "': " + type_name(a) +
                        " and " + type_name(b));
}

// Integers (and bools) stay i64 with wraparound; any float makes the
// operation f64. An integer power with a negative exponent is a float.
Value number_binary(ast::BinOp op, const Value& a, const Value& b, Span span) {
  if (op == ast::BinOp::MatMul) unsupported(op, a, b, span);
  bool floats = a.kind == Kind::Float || b.kind == Kind::Float;
  if (!floats && op == ast::BinOp::Pow && b.as_scalar().as_int64() < 0) floats = true;
  DType t = floats ? DType::F64 : DType::I64;
  Scalar r;
  try {
    r = eval_binary(scalar_op(op), cast(a.as_scalar(), t), cast(b.as_scalar(), t));
  } catch (const ScalarError& e) {
    throw Error(span, e.message);
  }
  return value_of_scalar(r);
}

Value tensor_binary(ast::BinOp op, const Value& a, const Value& b, Span span) {
  if (op == ast::BinOp::MatMul) {
    if (a.kind != Kind::Tensor || b.kind != Kind::Tensor) unsupported(op, a, b, span);
    return Value::of_tensor(matmul(a.tensor, b.tensor));
  }
  Tensor x = a.kind == Kind::Tensor ? a.tensor : tensor_operand(a, b.tensor.dtype());
  Tensor y = b.kind == Kind::Tensor ? b.tensor : tensor_operand(b, a.tensor.dtype());
  std::string symbol = std::string("'") + ast::binop_text(op) + "'";
  Shape shape = broadcast_shapes(symbol.c_str(), x.shape(), y.shape());
  if (shape_too_large(shape, promote(x.dtype(), y.dtype())))
    throw Error(span, "the result of " + symbol + " would have shape " + shape_str(shape) + ", which is too large");
  return Value::of_tensor(binary(scalar_op(op), x, y));
}

bool is_sequence(const Value& v) { return v.kind == Kind::List || v.kind == Kind::Tuple; }

Value joined(const Value& a, const Value& b) {
  std::vector<Value> items = *a.items;
  items.insert(items.end(), b.items->begin(), b.items->end());
  return a.kind == Kind::List ? Value::of_list(std::move(items)) : Value::of_tuple(std::move(items));
}

Value string_order(ast::BinOp op, const std::string& a, const std::string& b) {
  int c = a.compare(b);
  switch (op) {
    case ast::BinOp::Lt: return Value::of_bool(c < 0);
    case ast::BinOp::Le: return Value::of_bool(c <= 0);
    case ast::BinOp::Gt: return Value::of_bool(c > 0);
    default: return Value::of_bool(c >= 0);
  }
}

Span at(const HostIndex& h, Span fallback) { return h.span.valid() ? h.span : fallback; }

const char* sequence_noun(const Value& v) {
  return v.kind == Kind::List ? "list" : v.kind == Kind::Tuple ? "tuple" : "string";
}

int64_t sequence_length(const Value& v) {
  return static_cast<int64_t>(v.kind == Kind::Str ? v.s.size() : v.items->size());
}

// A position of a list, tuple or string, counting negative indices from the end.
int64_t sequence_position(const Value& v, const HostIndex& h, Span span) {
  int64_t n = sequence_length(v);
  int64_t k = h.index < 0 ? h.index + n : h.index;
  if (k < 0 || k >= n)
    throw Error(at(h, span), "index " + std::to_string(h.index) + " is out of range for a " + sequence_noun(v) +
                                 " of length " + std::to_string(n));
  return k;
}

void require_one_index(const Value& v, const std::vector<HostIndex>& idx, Span span) {
  if (idx.size() != 1)
    throw Error(span, std::string("a ") + sequence_noun(v) + " takes one index or slice, got " +
                          std::to_string(idx.size()));
}

Value sequence_index(const Value& v, const std::vector<HostIndex>& idx, Span span) {
  require_one_index(v, idx, span);
  const HostIndex& h = idx[0];
  if (!h.is_slice) {
    int64_t k = sequence_position(v, h, span);
    return v.kind == Kind::Str ? Value::of_str(v.s.substr(static_cast<size_t>(k), 1)) : (*v.items)[k];
  }
  // Python slice bounds: negative counts from the end, then clamp.
  int64_t n = sequence_length(v);
  auto clamp = [n](int64_t b) { return b < 0 ? std::max<int64_t>(b + n, 0) : std::min(b, n); };
  int64_t lo = h.lo ? clamp(*h.lo) : 0;
  int64_t hi = std::max(lo, h.hi ? clamp(*h.hi) : n);
  if (v.kind == Kind::Str) return Value::of_str(v.s.substr(static_cast<size_t>(lo), static_cast<size_t>(hi - lo)));
  std::vector<Value> items(v.items->begin() + lo, v.items->begin() + hi);
  return v.kind == Kind::List ? Value::of_list(std::move(items)) : Value::of_tuple(std::move(items));
}

// Checked here rather than in the tensor library so that the error points at
// the offending index.
std::vector<AxisSelect> tensor_selection(const Tensor& t, const std::vector<HostIndex>& idx, Span span) {
  if (!t.valid()) throw Error(span, "cannot index a null tensor");
  const Shape& shape = t.shape();
  if (idx.size() > shape.size())
    throw Error(span, "too many indices for a tensor of shape " + shape_str(shape) + ": " +
                          std::to_string(idx.size()) + " given");
  std::vector<AxisSelect> sel;
  for (size_t axis = 0; axis < idx.size(); ++axis) {
    const HostIndex& h = idx[axis];
    AxisSelect s;
    if (h.is_slice) {
      s.kind = AxisSelect::Slice;
      s.begin = h.lo;
      s.end = h.hi;
    } else {
      int64_t n = shape[axis];
      if (h.index < -n || h.index >= n)
        throw Error(at(h, span), "index " + std::to_string(h.index) + " is out of range for axis " +
                                     std::to_string(axis) + " of a tensor of shape " + shape_str(shape));
      s.index = h.index;
    }
    sel.push_back(s);
  }
  return sel;
}

Value tensor_index(const Tensor& t, const std::vector<HostIndex>& idx, Span span) {
  std::vector<AxisSelect> sel = tensor_selection(t, idx, span);
  bool any_slice = std::any_of(idx.begin(), idx.end(), [](const HostIndex& h) { return h.is_slice; });
  try {
    Tensor picked = select(t, sel);
    if (!any_slice && static_cast<int64_t>(idx.size()) == t.rank()) return value_of_scalar(picked.get(0));
    return Value::of_tensor(std::move(picked));
  } catch (const DataError& e) {
    throw Error(span, e.what());
  }
}

}  // namespace

Value host_binary(ast::BinOp op, const Value& a, const Value& b, Span span) {
  if (op == ast::BinOp::And || op == ast::BinOp::Or)
    throw std::logic_error("host_binary: 'and' and 'or' short-circuit in the interpreter");
  bool a_tensor = a.kind == Kind::Tensor, b_tensor = b.kind == Kind::Tensor;
  try {
    if ((a_tensor && (b_tensor || b.is_number())) || (b_tensor && a.is_number())) return tensor_binary(op, a, b, span);
  } catch (const DataError& e) {
    throw Error(span, e.what());
  } catch (const std::bad_alloc&) {
    throw Error(span, std::string("not enough memory for the result of '") + ast::binop_text(op) + "'");
  }
  if (op == ast::BinOp::Eq || op == ast::BinOp::Ne) {
    try {
      return Value::of_bool(values_equal(a, b) == (op == ast::BinOp::Eq));
    } catch (const Error& e) {  // values nested too deeply: said at the comparison
      throw Error(span, e.what());
    }
  }
  if (a.is_number() && b.is_number()) return number_binary(op, a, b, span);
  if (a.kind == Kind::Str && b.kind == Kind::Str) {
    if (op == ast::BinOp::Add) return Value::of_str(a.s + b.s);
    if (is_ordering(op)) return string_order(op, a.s, b.s);
  }
  if (op == ast::BinOp::Add && is_sequence(a) && a.kind == b.kind) return joined(a, b);
  unsupported(op, a, b, span);
}

Value host_unary(ast::UnOp op, const Value& a, Span span) {
  if (op == ast::UnOp::Not) {
    if (a.kind == Kind::Tensor) {
      try {
        return Value::of_tensor(unary(UnaryOp::Not, a.tensor));
      } catch (const DataError& e) {
        throw Error(span, e.what());
      }
    }
    return Value::of_bool(!*truthy(a));
  }
  bool negate = op == ast::UnOp::Neg;
  switch (a.kind) {
    case Kind::Int: return Value::of_int(negate ? eval_unary(UnaryOp::Neg, a.as_scalar()).i : a.i);
    case Kind::Bool: return Value::of_int(negate ? -int64_t{a.b} : int64_t{a.b});
    case Kind::Float: return Value::of_float(negate ? -a.f : a.f);
    case Kind::Tensor:
      try {
        return Value::of_tensor(negate ? unary(UnaryOp::Neg, a.tensor) : a.tensor.clone());
      } catch (const DataError& e) {
        throw Error(span, e.what());
      }
    default:
      throw Error(span, std::string("unsupported operand type for unary '") + (negate ? "-" : "+") +
                            "': " + type_name(a));
  }
}

Value host_index(const Value& v, const std::vector<HostIndex>& idx, Span span) {
  switch (v.kind) {
    case Kind::List:
    case Kind::Tuple:
    case Kind::Str: return sequence_index(v, idx, span);
    case Kind::Tensor: return tensor_index(v.tensor, idx, span);
    default: throw Error(span, "a value of type " + type_name(v) + " cannot be indexed");
  }
}

void host_index_assign(Value& v, const std::vector<HostIndex>& idx, const Value& x, Span span) {
  if (v.kind == Kind::List) {
    require_one_index(v, idx, span);
    if (idx[0].is_slice) throw Error(at(idx[0], span), "assigning to a slice of a list is not supported");
    (*v.items)[sequence_position(v, idx[0], span)] = x;
    return;
  }
  if (v.kind != Kind::Tensor) throw Error(span, "items of a value of type " + type_name(v) + " cannot be assigned");
  std::vector<AxisSelect> sel = tensor_selection(v.tensor, idx, span);
  if (x.kind != Kind::Tensor && !x.is_number())
    throw Error(span, "cannot assign a value of type " + type_name(x) + " to tensor elements");
  try {
    assign(v.tensor, sel, tensor_of(x));
  } catch (const DataError& e) {
    throw Error(span, e.what());
  }
}

}  // namespace zyntax
