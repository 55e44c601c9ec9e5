// The op library's kernels (stdlib/*.zynml), generic, by function name.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "driver/session.hpp"
#include "lower/check_program.hpp"

namespace zyntax::testing {

inline std::vector<std::pair<std::string, cir::Kernel>> op_library_kernels(Session& session) {
  std::vector<std::pair<std::string, cir::Kernel>> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(ZYNTAX_SOURCE_DIR) + "/stdlib")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::vector<CheckedKernel> kernels;
    LoadedModule* m = session.load_text(entry.path().string(), text.str());
    EXPECT_TRUE(check_program(session, *m, &kernels)) << session.diags().render_all();
    for (CheckedKernel& k : kernels) out.emplace_back(session.kernel_name(k.node), k.kernel);
  }
  return out;
}

}  // namespace zyntax::testing
