// NumPy .npy files: versions 1.0, 2.0 and 3.0, C order, dtypes f32, f64,
// i32, i64, u8 and bool (little- or big-endian). Anything else is a DataError
// that says what was found; truncated or corrupt files never crash.
#pragma once

#include <string>

#include "runtime/tensor.hpp"

namespace zyntax {

Tensor load_npy(const std::string& path);
void save_npy(const Tensor& t, const std::string& path);
// The same on bytes in memory (for tests and fuzzing).
Tensor parse_npy(const std::string& bytes, const std::string& name_for_errors);
std::string serialize_npy(const Tensor& t);

}  // namespace zyntax
