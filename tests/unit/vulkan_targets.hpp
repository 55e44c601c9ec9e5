// The GpuTarget of a Vulkan device like Mesa's lavapipe (the software
// device CI runs on), for tests that plan and emit without a device.
#pragma once

#include "codegen/glsl/glsl_emitter.hpp"

namespace zyntax::testing {

inline GpuTarget lavapipe_like_target() {
  GpuTarget t = codegen::generic_vulkan_target();
  t.arch = "llvmpipe";
  t.subgroup_size = 8;
  t.multiprocessors = 2;
  t.loop_budget = 65535;
  t.max_shader_helper_calls = 64;
  t.preserves_ieee_specials_f32 = t.preserves_ieee_specials_f64 = true;
  return t;
}

}  // namespace zyntax::testing
