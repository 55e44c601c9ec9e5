// Builtins on values of any kind: len, the conversions int, float, bool and
// str, and assert.
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "interp/builtins_args.hpp"
#include "interp/host_convert.hpp"

namespace zyntax {

namespace {

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n\r") - b + 1);
}

std::string ambiguous_truth(const Tensor& t) {
  return "the truth value of a tensor with " + std::to_string(t.numel()) +
         " elements is ambiguous; use any() or all()";
}

// The number a value stands for: itself, or the one element of a tensor.
Value number_of(const Args& a, size_t i, const char* to) {
  const Value& v = a[i];
  if (v.is_number()) return v;
  if (v.kind == Value::Kind::Tensor && v.tensor.valid()) {
    if (v.tensor.numel() != 1)
      a.fail(i, std::string("only a tensor with one element converts to ") + to + ", got " + type_name(v));
    return value_of_scalar(v.tensor.get(0));
  }
  a.wrong_type(i, std::string("a number, a string or a one-element tensor"));
}

Value len(const Invocation& inv) {
  Args a(inv, {{"x"}});
  const Value& v = a[0];
  switch (v.kind) {
    case Value::Kind::List:
    case Value::Kind::Tuple: return Value::of_int(static_cast<int64_t>(v.items->size()));
    case Value::Kind::Str: return Value::of_int(static_cast<int64_t>(v.s.size()));
    case Value::Kind::Record: return Value::of_int(static_cast<int64_t>(v.record->fields.size()));
    case Value::Kind::Tensor:
      if (a.tensor(0).rank() == 0) a.fail(0, "a 0-d tensor has no length");
      return Value::of_int(v.tensor.dim(0));
    default: a.wrong_type(0, "a list, tuple, string, record or tensor");
  }
}

Value to_int(const Invocation& inv) {
  Args a(inv, {{"x"}});
  if (a[0].kind == Value::Kind::Str) {
    std::string text = trimmed(a[0].s);
    // from_chars takes no '+', so one is skipped here (but not "+-5").
    bool plus = text.size() > 1 && text[0] == '+' && text[1] != '-';
    const char* begin = text.data() + (plus ? 1 : 0);
    int64_t out = 0;
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), out);
    if (ec == std::errc::result_out_of_range) a.fail(0, "'" + a[0].s + "' is out of range for int");
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
      a.fail(0, "'" + a[0].s + "' is not an integer");
    return Value::of_int(out);
  }
  Value v = number_of(a, 0, "int");
  if (v.kind != Value::Kind::Float) return Value::of_int(v.as_scalar().as_int64());
  if (std::isnan(v.f) || std::isinf(v.f)) a.fail(0, "cannot convert " + to_display(v) + " to int");
  double whole = std::trunc(v.f);
  if (!(whole >= -9223372036854775808.0 && whole < 9223372036854775808.0))
    a.fail(0, to_display(v) + " is out of range for int");
  return Value::of_int(static_cast<int64_t>(whole));
}

Value to_float(const Invocation& inv) {
  Args a(inv, {{"x"}});
  if (a[0].kind == Value::Kind::Str) {
    std::string text = trimmed(a[0].s);
    char* end = nullptr;
    double out = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) a.fail(0, "'" + a[0].s + "' is not a number");
    return Value::of_float(out);
  }
  return Value::of_float(number_of(a, 0, "float").as_double());
}

Value to_bool(const Invocation& inv) {
  Args a(inv, {{"x"}});
  std::optional<bool> t = truthy(a[0]);
  if (!t) a.fail(0, ambiguous_truth(a[0].tensor));
  return Value::of_bool(*t);
}

Value to_str(const Invocation& inv) {
  Args a(inv, {{"x"}});
  return Value::of_str(to_display(a[0]));
}

Value assert_true(const Invocation& inv) {
  Args a(inv, {{"cond"}, {"message", kOptional}});
  std::optional<bool> t = truthy(a[0]);
  if (!t) a.fail(0, ambiguous_truth(a[0].tensor));
  if (*t) return Value::none();
  throw Error(a.call_span(), a.has(1) ? "assertion failed: " + to_display(a[1]) : std::string("assertion failed"));
}

const BuiltinEntry kEntries[] = {
    {"len", len}, {"int", to_int}, {"float", to_float}, {"bool", to_bool}, {"str", to_str}, {"assert", assert_true},
};

}  // namespace

std::span<const BuiltinEntry> value_builtins() { return kEntries; }

}  // namespace zyntax
