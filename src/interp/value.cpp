#include "interp/value.hpp"

#include <algorithm>
#include <cmath>

#include "interp/pending_block.hpp"
#include "runtime/tensor_ops.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

Value* RecordData::find(const std::string& name) {
  for (auto& [field, value] : fields)
    if (field == name) return &value;
  return nullptr;
}

const Value* RecordData::find(const std::string& name) const {
  for (const auto& [field, value] : fields)
    if (field == name) return &value;
  return nullptr;
}

Value Value::of_bool(bool v) {
  Value x;
  x.kind = Kind::Bool;
  x.b = v;
  return x;
}

Value Value::of_int(int64_t v) {
  Value x;
  x.kind = Kind::Int;
  x.i = v;
  return x;
}

Value Value::of_float(double v) {
  Value x;
  x.kind = Kind::Float;
  x.f = v;
  x.dtype = DType::F64;
  return x;
}

Value Value::of_str(std::string v) {
  Value x;
  x.kind = Kind::Str;
  x.s = std::move(v);
  return x;
}

Value Value::of_tensor(Tensor t) {
  Value x;
  x.kind = Kind::Tensor;
  x.tensor = std::move(t);
  return x;
}

Value Value::of_list(std::vector<Value> v) {
  Value x;
  x.kind = Kind::List;
  x.items = std::make_shared<std::vector<Value>>(std::move(v));
  return x;
}

Value Value::of_tuple(std::vector<Value> v) {
  Value x;
  x.kind = Kind::Tuple;
  x.items = std::make_shared<std::vector<Value>>(std::move(v));
  return x;
}

Value Value::of_record(std::vector<std::pair<std::string, Value>> fields) {
  Value x;
  x.kind = Kind::Record;
  x.record = std::make_shared<RecordData>();
  x.record->fields = std::move(fields);
  return x;
}

Value Value::of_builtin(std::string name) {
  Value x;
  x.kind = Kind::Builtin;
  x.s = std::move(name);
  return x;
}

Value Value::of_dtype(DType t) {
  Value x;
  x.kind = Kind::DType;
  x.dtype = t;
  return x;
}

Value Value::of_pending(std::shared_ptr<PendingBlock> p) {
  Value x;
  x.kind = Kind::Pending;
  x.pending = std::move(p);
  return x;
}

// Callers check the kind first; anything else is reported (without a
// location, which only the caller knows) rather than given a made-up value.
double Value::as_double() const { return as_scalar().as_double(); }

Scalar Value::as_scalar() const {
  switch (kind) {
    case Kind::Int: return Scalar::of_int(i, DType::I64);
    case Kind::Float: return Scalar::of_float(f, DType::F64);
    case Kind::Bool: return Scalar::of_bool(b);
    case Kind::Tensor:
      if (tensor.valid() && tensor.numel() == 1) return tensor.get(0);
      break;
    default: break;
  }
  throw Error(Span{}, "expected a number, got " + type_name(*this));
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None: return "none";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::Str: return "str";
    case Value::Kind::Tensor: {
      if (!v.tensor.valid()) return "tensor";
      std::string s = "tensor[";
      for (int64_t d : v.tensor.shape()) s += std::to_string(d) + ", ";
      return s + dtype_name(v.tensor.dtype()) + "]";
    }
    case Value::Kind::List: return "list";
    case Value::Kind::Tuple: return "tuple";
    case Value::Kind::Record: return "record";
    case Value::Kind::Function: return "function";
    case Value::Kind::Builtin: return "builtin";
    case Value::Kind::DType: return "dtype";
    case Value::Kind::Module: return "module";
    case Value::Kind::Future: return "future";
    case Value::Kind::Pool: return "memory_pool";
    case Value::Kind::Pending: {
      if (!v.pending) return "tensor";
      std::string s = "tensor[";
      for (int64_t d : v.pending->shape) s += std::to_string(d) + ", ";
      return s + dtype_name(v.pending->dtype) + "]";
    }
  }
  return "?";
}

namespace {

// Strings inside containers are quoted so that ["a, b"] and ["a", "b"] differ.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

// Lists and records are references, so a list may contain itself; such a
// container, and anything nested deeper than kMaxDepth, shows as [...].
constexpr size_t kMaxDepth = 256;

class Displayer {
 public:
  std::string show(const Value& v) {
    const void* container = container_of(v);
    if (!container) return to_display(v);
    bool elide = open_.size() >= kMaxDepth || std::find(open_.begin(), open_.end(), container) != open_.end();
    open_.push_back(container);
    std::string out;
    if (v.kind == Value::Kind::List)
      out = "[" + (elide ? "..." : items(v)) + "]";
    else if (v.kind == Value::Kind::Tuple)
      out = "(" + (elide ? "..." : items(v) + (v.items->size() == 1 ? "," : "")) + ")";  // (1,) as in Python
    else
      out = "{" + (elide ? "..." : fields(v)) + "}";
    open_.pop_back();
    return out;
  }

 private:
  static const void* container_of(const Value& v) {
    if (v.kind == Value::Kind::List || v.kind == Value::Kind::Tuple) return v.items.get();
    if (v.kind == Value::Kind::Record) return v.record.get();
    return nullptr;
  }

  std::string nested(const Value& v) { return v.kind == Value::Kind::Str ? quoted(v.s) : show(v); }

  std::string items(const Value& v) {
    std::string out;
    for (size_t k = 0; k < v.items->size(); ++k) out += (k ? ", " : "") + nested((*v.items)[k]);
    return out;
  }

  std::string fields(const Value& v) {
    std::string out;
    for (size_t k = 0; k < v.record->fields.size(); ++k)
      out += (k ? ", " : "") + v.record->fields[k].first + ": " + nested(v.record->fields[k].second);
    return out;
  }

  std::vector<const void*> open_;
};

// Exact comparison of an integer with a double: converting the integer to
// double would make 2^53 + 1 equal to 2^53.
bool int_equals_float(int64_t i, double f) {
  if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0) || std::trunc(f) != f) return false;
  return static_cast<int64_t>(f) == i;
}

bool numbers_equal(const Value& a, const Value& b) {
  bool a_float = a.kind == Value::Kind::Float, b_float = b.kind == Value::Kind::Float;
  if (a_float && b_float) return a.f == b.f;
  if (a_float) return int_equals_float(b.as_scalar().as_int64(), a.f);
  if (b_float) return int_equals_float(a.as_scalar().as_int64(), b.f);
  return a.as_scalar().as_int64() == b.as_scalar().as_int64();
}

bool tensors_equal(const Tensor& a, const Tensor& b) {
  if (!a.valid() || !b.valid()) return a.valid() == b.valid();
  if (a.shape() != b.shape()) return false;
  DType t = promote(a.dtype(), b.dtype());
  for (int64_t k = 0; k < a.numel(); ++k)
    if (!eval_binary(BinaryOp::Eq, cast(a.get(k), t), cast(b.get(k), t)).truthy()) return false;
  return true;
}

bool equal_at_depth(const Value& a, const Value& b, size_t depth);

bool items_equal(const std::vector<Value>& a, const std::vector<Value>& b, size_t depth) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!equal_at_depth(a[k], b[k], depth + 1)) return false;
  return true;
}

bool records_equal(const RecordData& a, const RecordData& b, size_t depth) {
  if (a.fields.size() != b.fields.size()) return false;
  for (const auto& [name, value] : a.fields) {
    const Value* other = b.find(name);
    if (!other || !equal_at_depth(value, *other, depth + 1)) return false;
  }
  return true;
}

bool equal_at_depth(const Value& a, const Value& b, size_t depth) {
  if (depth > kMaxDepth) throw Error(Span{}, "values are nested too deeply to compare");
  if (a.is_number() && b.is_number()) return numbers_equal(a, b);
  bool a_seq = a.kind == Value::Kind::List || a.kind == Value::Kind::Tuple;
  bool b_seq = b.kind == Value::Kind::List || b.kind == Value::Kind::Tuple;
  if (a_seq && b_seq) return a.kind == b.kind && (a.items == b.items || items_equal(*a.items, *b.items, depth));
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::None: return true;
    case Value::Kind::Str: return a.s == b.s;
    case Value::Kind::Tensor: return tensors_equal(a.tensor, b.tensor);
    case Value::Kind::Record: return a.record == b.record || records_equal(*a.record, *b.record, depth);
    case Value::Kind::Function:
      return a.function == b.function ||
             (a.function && b.function && a.function->def == b.function->def &&
              a.function->module == b.function->module);
    case Value::Kind::Builtin: return a.s == b.s;
    case Value::Kind::DType: return a.dtype == b.dtype;
    case Value::Kind::Module: return a.module == b.module;
    case Value::Kind::Future: return a.future == b.future;
    case Value::Kind::Pool: return a.pool == b.pool;
    case Value::Kind::Pending: return a.pending == b.pending;
    default: return false;
  }
}

}  // namespace

std::string to_display(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None: return "none";
    case Value::Kind::Bool: return v.b ? "true" : "false";
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return Scalar::of_float(v.f, is_float(v.dtype) ? v.dtype : DType::F64).str();
    case Value::Kind::Str: return v.s;
    case Value::Kind::Tensor: return format_tensor(v.tensor);
    case Value::Kind::List:
    case Value::Kind::Tuple:
    case Value::Kind::Record: return Displayer().show(v);
    case Value::Kind::Function:
      return "<function " + (v.function && v.function->def ? v.function->def->name : std::string("?")) + ">";
    case Value::Kind::Builtin: return "<builtin " + v.s + ">";
    case Value::Kind::DType: return dtype_name(v.dtype);
    case Value::Kind::Module: return "<module>";
    case Value::Kind::Future: return "<future>";
    case Value::Kind::Pool:
      return "<memory_pool on " + v.pool->device() + ": " + std::to_string(v.pool->used()) + " of " +
             std::to_string(v.pool->capacity()) + " bytes used>";
    case Value::Kind::Pending: return "<" + type_name(v) + ", not computed yet>";
  }
  return "?";
}

bool values_equal(const Value& a, const Value& b) { return equal_at_depth(a, b, 0); }

Value::~Value() {
  if (!items && !record) return;
  // The lists and records this value alone holds, dismantled from a work
  // list: each element's own children are taken out before the element
  // dies, so no destructor recurses.
  std::vector<std::shared_ptr<std::vector<Value>>> lists;
  std::vector<std::shared_ptr<RecordData>> records;
  auto take = [&](Value& v) {
    if (v.items && v.items.use_count() == 1) lists.push_back(std::move(v.items));
    if (v.record && v.record.use_count() == 1) records.push_back(std::move(v.record));
  };
  take(*this);
  while (!lists.empty() || !records.empty()) {
    if (!lists.empty()) {
      std::shared_ptr<std::vector<Value>> l = std::move(lists.back());
      lists.pop_back();
      for (Value& v : *l) take(v);
    } else {
      std::shared_ptr<RecordData> r = std::move(records.back());
      records.pop_back();
      for (auto& [name, v] : r->fields) take(v);
    }
  }
}

std::optional<bool> truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.b;
    case Value::Kind::Int: return v.i != 0;
    case Value::Kind::Float: return v.f != 0;
    case Value::Kind::Str: return !v.s.empty();
    case Value::Kind::List:
    case Value::Kind::Tuple: return !v.items->empty();
    case Value::Kind::Record: return !v.record->fields.empty();
    case Value::Kind::Tensor:
      if (!v.tensor.valid() || v.tensor.numel() == 0) return false;
      if (v.tensor.numel() == 1) return v.tensor.get(0).truthy();
      return std::nullopt;
    default: return true;
  }
}

}  // namespace zyntax
