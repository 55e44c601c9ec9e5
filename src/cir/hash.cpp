#include "cir/hash.hpp"

#include "cir/printer.hpp"

namespace zyntax::cir {

uint64_t hash_text(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t hash_kernel(const Kernel& k) { return hash_text(print(k)); }

std::string hash_hex(uint64_t h) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[i] = kDigits[h & 0xf];
  return s;
}

}  // namespace zyntax::cir
