// Small helpers the unit tests share: tensors from plain values and back,
// host values in one letter, the message of an expected exception, and the
// files of tests/unit/data.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "interp/value.hpp"
#include "runtime/tensor.hpp"

namespace zyntax::testing {

// A file of tests/unit/data, and its bytes.
inline std::string fixture(const std::string& name) { return std::string(ZYNTAX_SOURCE_DIR) + "/tests/unit/data/" + name; }
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline Tensor make(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), Scalar::from_double(values[i], dtype));
  return t;
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i).as_double());
  return v;
}

inline Value I(int64_t v) { return Value::of_int(v); }
inline Value F(double v) { return Value::of_float(v); }
inline Value B(bool v) { return Value::of_bool(v); }
inline Value S(std::string v) { return Value::of_str(std::move(v)); }
inline Value L(std::vector<Value> v) { return Value::of_list(std::move(v)); }
inline Value D(DType t) { return Value::of_dtype(t); }
inline Value T(DType dtype, const Shape& shape, const std::vector<double>& v) { return Value::of_tensor(make(dtype, shape, v)); }

// Runs `f` and returns the message of the `E` it throws ("" if none).
template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace zyntax::testing
