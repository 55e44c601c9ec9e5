#include "interp/builtins_args.hpp"

#include "backends/registry.hpp"
#include "interp/host_convert.hpp"

namespace zyntax {

namespace {

std::string plural(size_t n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string arity_message(const Invocation& inv, const std::vector<Param>& params) {
  size_t most = params.size() - inv.receivers, least = 0;
  for (size_t k = inv.receivers; k < params.size(); ++k) least += params[k].required;
  std::string takes;
  if (most == 0)
    takes = "no arguments";
  else if (least == most)
    takes = plural(most, "argument");
  else if (least + 1 == most)
    takes = std::to_string(least) + " or " + plural(most, "argument");
  else
    takes = "from " + std::to_string(least) + " to " + plural(most, "argument");
  size_t given = inv.args.positional.size() - inv.receivers;
  return inv.name + "() takes " + takes + " (" + std::to_string(given) + " given)";
}

std::string param_list(const std::vector<Param>& params, size_t from) {
  std::string out;
  for (size_t k = from; k < params.size(); ++k) out += (out.empty() ? "" : ", ") + std::string(params[k].name);
  return out;
}

}  // namespace

Args::Args(const Invocation& inv, std::initializer_list<Param> params)
    : inv_(inv), params_(params), slots_(params.size(), nullptr), spans_(params.size()) {
  const CallArgs& a = inv.args;
  if (a.positional.size() > params_.size()) throw Error(a.span, arity_message(inv, params_));
  for (size_t k = 0; k < a.positional.size(); ++k) {
    slots_[k] = &a.positional[k];
    spans_[k] = k < a.positional_spans.size() ? a.positional_spans[k] : a.span;
  }
  for (size_t k = 0; k < a.keywords.size(); ++k) {
    const std::string& name = a.keywords[k].first;
    Span at = k < a.keyword_spans.size() && a.keyword_spans[k].valid() ? a.keyword_spans[k] : a.span;
    size_t p = inv.receivers;
    while (p < params_.size() && name != params_[p].name) ++p;
    if (p == params_.size()) {
      std::string accepted = param_list(params_, inv.receivers);
      throw Error(at, inv.name + "() got an unexpected keyword argument '" + name + "'" +
                          (accepted.empty() ? std::string(" (it takes none)") : " (it takes " + accepted + ")"));
    }
    if (slots_[p]) throw Error(at, inv.name + "() got multiple values for argument '" + name + "'");
    slots_[p] = &a.keywords[k].second;
    spans_[p] = at;
  }
  for (size_t p = 0; p < params_.size(); ++p) {
    if (slots_[p] || !params_[p].required) continue;
    if (a.keywords.empty()) throw Error(a.span, arity_message(inv, params_));
    throw Error(a.span, inv.name + "() missing required argument '" + params_[p].name + "'");
  }
}

Span Args::span(size_t i) const { return spans_[i].valid() ? spans_[i] : inv_.args.span; }

void Args::wrong_type(size_t i, const std::string& expected) const {
  throw Error(span(i), inv_.name + "(): " + params_[i].name + " must be " + expected + ", got " +
                           type_name((*this)[i]));
}

void Args::fail(size_t i, const std::string& message) const { throw Error(span(i), inv_.name + "(): " + message); }

void Args::fail_call(const std::string& message) const { throw Error(call_span(), inv_.name + "(): " + message); }

const Tensor& Args::tensor(size_t i) const {
  const Value& v = (*this)[i];
  if (v.kind != Value::Kind::Tensor || !v.tensor.valid()) wrong_type(i, "a tensor");
  return v.tensor;
}

int64_t Args::integer(size_t i) const {
  const Value& v = (*this)[i];
  if (v.kind != Value::Kind::Int) wrong_type(i, "an integer");
  return v.i;
}

double Args::number(size_t i) const {
  const Value& v = (*this)[i];
  if (!v.is_number()) wrong_type(i, "a number");
  return v.as_double();
}

bool Args::boolean(size_t i) const {
  const Value& v = (*this)[i];
  if (v.kind != Value::Kind::Bool) wrong_type(i, "true or false");
  return v.b;
}

const std::string& Args::str(size_t i) const {
  const Value& v = (*this)[i];
  if (v.kind != Value::Kind::Str) wrong_type(i, "a string");
  return v.s;
}

Device& Args::device(size_t i) const {
  const std::string& id = str(i);
  if (id.empty()) fail(i, "a device name is needed, got \"\" (for example \"auto\", \"cpu\", \"cuda:0\")");
  DeviceRegistry& registry = device_registry();
  Device* d = registry.find(id);
  if (!d) throw Error(span(i), registry.not_available_message(id));
  return *d;
}

DType Args::dtype(size_t i) const {
  const Value& v = (*this)[i];
  if (v.kind == Value::Kind::DType) return v.dtype;
  if (v.kind == Value::Kind::Str) {
    if (auto t = parse_dtype(v.s)) return *t;
    fail(i, "unknown dtype '" + v.s + "'");
  }
  // `bool` names the builtin function before the dtype.
  if (v.kind == Value::Kind::Builtin)
    if (auto t = parse_dtype(v.s)) return *t;
  wrong_type(i, "a dtype such as f32");
}

std::vector<int64_t> Args::int_list(size_t i) const {
  const Value& v = (*this)[i];
  if (v.kind == Value::Kind::Int) return {v.i};
  if (v.kind != Value::Kind::List && v.kind != Value::Kind::Tuple) wrong_type(i, "a list of integers");
  std::vector<int64_t> out;
  for (size_t k = 0; k < v.items->size(); ++k) {
    const Value& item = (*v.items)[k];
    if (item.kind != Value::Kind::Int)
      fail(i, std::string(params_[i].name) + " must be a list of integers, but item " + std::to_string(k) + " is " +
                  type_name(item));
    out.push_back(item.i);
  }
  return out;
}

Shape Args::shape(size_t i, DType element) const {
  Shape s = int_list(i);
  for (int64_t d : s)
    if (d < 0) fail(i, std::string(params_[i].name) + " " + shape_str(s) + " has a negative size");
  if (shape_too_large(s, element)) fail(i, std::string(params_[i].name) + " " + shape_str(s) + " is too large");
  return s;
}

std::optional<int64_t> Args::axis(size_t i) const {
  if (!has(i) || (*this)[i].kind == Value::Kind::None) return std::nullopt;
  return integer(i);
}

void reject_keywords(const Invocation& inv) {
  if (!inv.args.keywords.empty()) {
    Span at = inv.args.keyword_spans.empty() ? inv.args.span : inv.args.keyword_spans[0];
    throw Error(at, inv.name + "() got an unexpected keyword argument '" + inv.args.keywords[0].first +
                        "' (it takes none)");
  }
}

}  // namespace zyntax
