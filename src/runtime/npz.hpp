// NumPy .npz archives (np.savez, np.savez_compressed): a zip of .npy files,
// one per named array. Entries stored or deflated are read; writing stores
// them (as np.savez does). Corrupt or truncated archives, and zip features
// NumPy never writes (encryption, multi-disk, ZIP64 past 4 GiB), are a
// DataError saying what was found.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor.hpp"

namespace zyntax {

// The arrays in archive order, named without ".npy".
std::vector<std::pair<std::string, Tensor>> load_npz(const std::string& path);
void save_npz(const std::vector<std::pair<std::string, Tensor>>& arrays, const std::string& path);
// The same on bytes in memory (tests, fuzzing).
std::vector<std::pair<std::string, Tensor>> parse_npz(const std::string& bytes, const std::string& name_for_errors);
std::string serialize_npz(const std::vector<std::pair<std::string, Tensor>>& arrays);

}  // namespace zyntax
