// Kernel identity for caches: a hash of the kernel's printed form, so two
// kernels hash alike exactly when they print alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cir/ir.hpp"

namespace zyntax::cir {

// 64-bit FNV-1a of print(k).
uint64_t hash_kernel(const Kernel& k);
uint64_t hash_text(std::string_view text);
// 16 lowercase hex digits.
std::string hash_hex(uint64_t h);

}  // namespace zyntax::cir
