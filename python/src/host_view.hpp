// Host memory a Python object holds (an ndarray's, a CPU tensor's), looked
// at for one call without making anything: the address of its elements,
// their type and the shape. What a kernel call's fast path (kernel_call)
// reads its arguments through.
#pragma once

#include <array>
#include <cstdint>

#include "zyntax/buffer.hpp"

namespace zyntax::python {

struct HostView {
  static constexpr int kMostAxes = 8;  // more: the general path
  void* data = nullptr;
  ElementType type = ElementType::F32;
  int rank = 0;
  std::array<int64_t, kMostAxes> shape{};
};

}  // namespace zyntax::python
