// What the builtin implementations share: how a call's arguments are bound
// to parameters and checked, and the tables each builtins_*.cpp contributes.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "interp/builtins.hpp"
#include "runtime/device.hpp"

namespace zyntax {

// One call of a builtin as its implementation sees it. For a method call
// (`t.sum(axis=0)`) the receiver is the first positional argument and
// `receivers` is 1, so that arity messages count only what was written.
struct Invocation {
  std::string name;  // "zeros", "tensor.sum", ...
  const CallArgs& args;
  BuiltinContext& ctx;
  size_t receivers = 0;
};

struct Param {
  const char* name;
  bool required = true;
};
constexpr bool kOptional = false;

// The arguments of one call bound to named parameters, positionally or by
// keyword. Construction reports wrong arity, unknown keywords and arguments
// given twice; the readers report wrong types at the argument, naming the
// function and the parameter.
class Args {
 public:
  Args(const Invocation& inv, std::initializer_list<Param> params);

  bool has(size_t i) const { return slots_[i] != nullptr; }
  const Value& operator[](size_t i) const { return *slots_[i]; }
  Span span(size_t i) const;  // the argument's own span, else the call's
  Span call_span() const { return inv_.args.span; }
  BuiltinContext& ctx() const { return inv_.ctx; }

  // "<fn>(): <param> must be <expected>, got <type>" at the argument.
  [[noreturn]] void wrong_type(size_t i, const std::string& expected) const;
  // "<fn>(): <message>" at the argument.
  [[noreturn]] void fail(size_t i, const std::string& message) const;
  // "<fn>(): <message>" at the call.
  [[noreturn]] void fail_call(const std::string& message) const;

  const Tensor& tensor(size_t i) const;
  int64_t integer(size_t i) const;
  double number(size_t i) const;  // int, float or bool
  bool boolean(size_t i) const;
  const std::string& str(size_t i) const;
  // A dtype value (f32, bool, ...) or its name as a string.
  DType dtype(size_t i) const;
  // A list or tuple of ints, or one int.
  std::vector<int64_t> int_list(size_t i) const;
  // A shape to allocate: non-negative sizes whose tensor of `element` is not
  // shape_too_large.
  Shape shape(size_t i, DType element) const;
  // The device a string argument names ("auto" picks the best one); an
  // empty name or one no device has is an error at the argument.
  Device& device(size_t i) const;
  // An axis argument, if given.
  std::optional<int64_t> axis(size_t i) const;

  // Optional arguments with their defaults.
  int64_t integer_or(size_t i, int64_t fallback) const { return has(i) ? integer(i) : fallback; }
  double number_or(size_t i, double fallback) const { return has(i) ? number(i) : fallback; }
  bool boolean_or(size_t i, bool fallback) const { return has(i) ? boolean(i) : fallback; }
  DType dtype_or(size_t i, DType fallback) const { return has(i) ? dtype(i) : fallback; }

 private:
  const Invocation& inv_;
  std::vector<Param> params_;
  std::vector<const Value*> slots_;
  std::vector<Span> spans_;
};

// Variadic builtins (print) take no keywords: reports the first one given.
void reject_keywords(const Invocation& inv);

// `fn` applied to the first `count` arguments, numbers or tensors: numbers
// alone give a number (an int when all are ints and `fn` keeps ints), any
// tensor makes it element-wise with broadcasting.
Value apply_math(MathFn fn, const Args& a, size_t count);

using BuiltinImpl = Value (*)(const Invocation&);
struct BuiltinEntry {
  const char* name;
  BuiltinImpl impl;
};

// The builtins of each file, by concept.
std::span<const BuiltinEntry> io_builtins();
std::span<const BuiltinEntry> creation_builtins();
std::span<const BuiltinEntry> layout_builtins();
std::span<const BuiltinEntry> math_builtins();
std::span<const BuiltinEntry> reduction_builtins();
std::span<const BuiltinEntry> value_builtins();
std::span<const BuiltinEntry> device_builtins();
std::span<const BuiltinEntry> memory_builtins();
std::span<const BuiltinEntry> dist_builtins();

// The methods of memory pools (the receiver is the first argument).
Value pool_allocate(const Invocation& inv);
Value pool_free(const Invocation& inv);
Value pool_reset(const Invocation& inv);

}  // namespace zyntax
