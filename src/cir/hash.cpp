#include "cir/hash.hpp"

#include "cir/printer.hpp"

namespace zyntax::cir {

uint64_t hash_kernel(const Kernel& k) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : print(k)) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hash_hex(uint64_t h) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[i] = kDigits[h & 0xf];
  return s;
}

}  // namespace zyntax::cir
