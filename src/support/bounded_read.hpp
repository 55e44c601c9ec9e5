// Reading a whole file, safely: only regular files (a device such as
// /dev/zero or a FIFO would never end, or never start), and never more than
// a limit, checked as the bytes arrive rather than after.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace zyntax {

// The file's bytes, or nothing with `*why` saying why ("it is a directory",
// "it is not a regular file (a device or a pipe)", "it is larger than
// 64 MiB", or the system's error).
std::optional<std::string> read_regular_file(const std::string& path, size_t limit, std::string* why);

}  // namespace zyntax
