// Feeds arbitrary bytes to the .npy and .npz readers: every input is a
// tensor (or a list of them) or a DataError, and what is read writes back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/npy.hpp"
#include "runtime/npz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    zyntax::Tensor t = zyntax::parse_npy(bytes, "fuzz.npy");
    (void)zyntax::serialize_npy(t);
  } catch (const zyntax::DataError&) {
  }
  try {
    auto arrays = zyntax::parse_npz(bytes, "fuzz.npz");
    (void)zyntax::serialize_npz(arrays);
  } catch (const zyntax::DataError&) {
  }
  return 0;
}
