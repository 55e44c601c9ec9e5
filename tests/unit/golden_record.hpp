// A golden record: lines a test computes, compared with those a file holds
// (tests/unit/data/*.golden); ZYNTAX_UPDATE_GOLDEN=1 records them anew,
// for a change made on purpose (review the file's diff: it names what changed).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace zyntax::testing {

// `what`: what a line describes ("plan", "shader"), for the messages.
inline void expect_golden(const std::vector<std::string>& now, const std::string& path, const std::string& what) {
  if (const char* update = std::getenv("ZYNTAX_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream out(path);
    for (const std::string& l : now) out << l << "\n";
    GTEST_SKIP() << "recorded " << now.size() << " " << what << "s in " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no golden record at " << path << " (make it with ZYNTAX_UPDATE_GOLDEN=1)";
  std::vector<std::string> recorded;
  for (std::string l; std::getline(in, l);) recorded.push_back(l);
  size_t n = std::max(now.size(), recorded.size()), differ = 0;
  for (size_t i = 0; i < n; ++i) {
    std::string a = i < recorded.size() ? recorded[i] : "(nothing)", b = i < now.size() ? now[i] : "(nothing)";
    if (a == b) continue;
    if (++differ <= 20) ADD_FAILURE() << what << " changed:\n  recorded: " << a << "\n  now:      " << b;
  }
  EXPECT_EQ(differ, 0u) << differ << " of " << n << " " << what << "s differ from " << path
                        << " (if on purpose, record them with ZYNTAX_UPDATE_GOLDEN=1 and review the diff)";
}

}  // namespace zyntax::testing
