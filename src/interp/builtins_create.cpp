// Builtins that make new tensors: zeros, ones, full, arange, rand, randn.
#include <cmath>

#include "interp/builtins_args.hpp"
#include "interp/host_convert.hpp"

namespace zyntax {

namespace {

Value zeros(const Invocation& inv) {
  Args a(inv, {{"shape"}, {"dtype", kOptional}});
  DType t = a.dtype_or(1, DType::F32);
  return Value::of_tensor(Tensor::zeros(t, a.shape(0, t)));
}

Value ones(const Invocation& inv) {
  Args a(inv, {{"shape"}, {"dtype", kOptional}});
  DType t = a.dtype_or(1, DType::F32);
  return Value::of_tensor(Tensor::full(t, a.shape(0, t), Scalar::from_int(1, t)));
}

// Without a dtype the value decides, as in NumPy: a float gives f32 (the
// language's default float), an int i64, a bool bool.
Value full(const Invocation& inv) {
  Args a(inv, {{"shape"}, {"value"}, {"dtype", kOptional}});
  const Value& v = a[1];
  if (!v.is_number()) a.wrong_type(1, "a number");
  DType natural = v.kind == Value::Kind::Float ? DType::F32 : v.kind == Value::Kind::Int ? DType::I64 : DType::Bool;
  DType t = a.dtype_or(2, natural);
  return Value::of_tensor(Tensor::full(t, a.shape(0, t), cast(v.as_scalar(), t)));
}

// arange(stop) or arange(start, stop[, step]): i64 when every bound is an int, else f32.
Value range_tensor(const Invocation& inv) {
  Args a(inv, {{"start"}, {"stop", kOptional}, {"step", kOptional}, {"dtype", kOptional}});
  bool ints = true;
  for (size_t k = 0; k < 3; ++k)
    if (a.has(k)) {
      a.number(k);
      ints = ints && a[k].kind != Value::Kind::Float;
    }
  double start = a.has(1) ? a.number(0) : 0.0;
  double stop = a.has(1) ? a.number(1) : a.number(0);
  double step = a.number_or(2, 1.0);
  DType t = a.dtype_or(3, ints ? DType::I64 : DType::F32);
  double count = std::ceil((stop - start) / step);
  if (count > 0 && count < 9007199254740992.0 && shape_too_large({static_cast<int64_t>(count)}, t))
    a.fail_call("a range of " + std::to_string(static_cast<int64_t>(count)) + " elements is too large");
  return Value::of_tensor(arange(t, start, stop, step));
}

DType float_dtype(const Args& a, size_t i) {
  DType t = a.dtype_or(i, DType::F32);
  if (!is_float(t)) a.fail(i, std::string("dtype must be a float type, got ") + dtype_name(t));
  return t;
}

// With a seed the numbers come from a generator of their own, so the result
// depends on nothing else; without one from the program's generator.
template <class Draw>
Value random_tensor(const Args& a, Draw draw) {
  DType t = float_dtype(a, 2);
  Shape shape = a.shape(0, t);
  if (a.has(1) && a[1].kind != Value::Kind::None) {
    Random own(static_cast<uint64_t>(a.integer(1)));
    return Value::of_tensor(draw(own, t, shape));
  }
  Random fallback(0);  // callers always pass the program's generator
  return Value::of_tensor(draw(a.ctx().rng ? *a.ctx().rng : fallback, t, shape));
}

Value rand(const Invocation& inv) {
  Args a(inv, {{"shape"}, {"seed", kOptional}, {"dtype", kOptional}, {"low", kOptional}, {"high", kOptional}});
  double lo = a.number_or(3, 0.0), hi = a.number_or(4, 1.0);
  return random_tensor(a, [&](Random& rng, DType t, const Shape& s) { return rand_uniform(rng, t, s, lo, hi); });
}

Value randn(const Invocation& inv) {
  Args a(inv, {{"shape"}, {"seed", kOptional}, {"dtype", kOptional}, {"mean", kOptional}, {"std", kOptional}});
  double mean = a.number_or(3, 0.0), stddev = a.number_or(4, 1.0);
  return random_tensor(a, [&](Random& rng, DType t, const Shape& s) { return rand_normal(rng, t, s, mean, stddev); });
}

const BuiltinEntry kEntries[] = {
    {"zeros", zeros}, {"ones", ones}, {"full", full}, {"arange", range_tensor}, {"rand", rand}, {"randn", randn},
};

}  // namespace

std::span<const BuiltinEntry> creation_builtins() { return kEntries; }

}  // namespace zyntax
