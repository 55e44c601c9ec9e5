// The exceptions the API throws. Every message names the operation; shape
// errors also name the argument and both shapes.
#pragma once

#include <stdexcept>
#include <string>

#include "zyntax/export.hpp"

namespace zyntax {

// A buffer or size that does not fit the operation:
// "matmul: argument b has 12 elements, but [k, n] = [4, 5] needs 20".
class ZYNTAX_API ShapeError : public std::invalid_argument {
 public:
  explicit ShapeError(const std::string& message);
};

// The operation could not run: no such device, out of memory, an index out
// of range inside a kernel (with the kernel's source location).
class ZYNTAX_API ComputeError : public std::runtime_error {
 public:
  explicit ComputeError(const std::string& message);
};

// A ZynML program that does not compile, or a name it does not define: the
// message holds every diagnostic as `file:line:col: error: ...` with the
// source line and a caret.
class ZYNTAX_API ProgramError : public std::runtime_error {
 public:
  explicit ProgramError(const std::string& message);
};

}  // namespace zyntax
