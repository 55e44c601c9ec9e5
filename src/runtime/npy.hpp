// NumPy .npy files: versions 1.0, 2.0 and 3.0, C order, dtypes f16, f32,
// f64, signed and unsigned integers of 8 to 64 bits and bool (little- or
// big-endian); bf16 has no NumPy dtype. Anything else is a DataError
// that says what was found; truncated or corrupt files never crash.
#pragma once

#include <string>

#include "runtime/tensor.hpp"

namespace zyntax {

Tensor load_npy(const std::string& path);
void save_npy(const Tensor& t, const std::string& path);
// Writes a whole file; a DataError naming the path if it cannot.
void write_file_bytes(const std::string& bytes, const std::string& path);
// The same on bytes in memory (for tests and fuzzing).
Tensor parse_npy(const std::string& bytes, const std::string& name_for_errors);
std::string serialize_npy(const Tensor& t);

}  // namespace zyntax
