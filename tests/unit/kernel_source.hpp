// The kernels of a ZynML source text, as the checker lowers them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/session.hpp"
#include "lower/check_program.hpp"

namespace zyntax::testing {

// The first kernel of a program, lowered with the input types it declares.
inline cir::Kernel kernel_of(const std::string& src) {
  Session session;
  std::vector<CheckedKernel> kernels;
  LoadedModule* m = session.load_text("k.zynml", src);
  bool ok = !session.diags().has_errors() && check_program(session, *m, &kernels);
  EXPECT_TRUE(ok) << session.diags().render_all();
  if (!ok || kernels.empty()) return {};
  return kernels[0].kernel;
}

}  // namespace zyntax::testing
