// One launch of an MSL kernel on the CPU (tests/msl/msl_on_cpu.hpp): what
// the test harness hands the compiled kernel. Plain data, shared by the
// harness's C++ build of the MSL and the test that drives it.
#pragma once

#include <cstdint>

namespace zy_harness {

struct Launch {
  void** buffers = nullptr;  // [[buffer(i)]] in order: tensors, reduce buffers, the status word
  uint32_t buffer_count = 0;
  void* arguments = nullptr;  // the argument struct, where the kernel takes one
  uint32_t threadgroup_bytes = 0;
  uint32_t groups_x = 1, groups_y = 1;
  uint32_t threads = 1;     // per threadgroup
  uint32_t simd_width = 32;  // invocations per SIMD group
};

}  // namespace zy_harness
