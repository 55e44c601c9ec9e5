// Feeds arbitrary bytes to the .npy reader: every input is a tensor or a DataError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    zyntax::Tensor t = zyntax::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    (void)zyntax::serialize_npy(t);
  } catch (const zyntax::DataError&) {
  }
  return 0;
}
