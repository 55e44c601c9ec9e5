// Where NVIDIA's PTX assembler is: $PTXAS, PATH, or /usr/local/cuda/bin;
// "" when none (the tests that need it are skipped).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace zyntax::testing {

inline std::string find_ptxas() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("PTXAS")) candidates.push_back(p);
  if (const char* path = std::getenv("PATH")) {
    std::string s = path;
    for (size_t at = 0; at <= s.size();) {
      size_t colon = s.find(':', at);
      if (colon == std::string::npos) colon = s.size();
      candidates.push_back(s.substr(at, colon - at) + "/ptxas");
      at = colon + 1;
    }
  }
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string& c : candidates)
    if (!c.empty() && ::access(c.c_str(), X_OK) == 0) return c;
  return "";
}

// Runs ptxas on a PTX file for `arch`; its exit status and output.
inline int run_ptxas(const std::string& ptxas, const std::string& file, const std::string& arch, std::string* log) {
  std::string cmd = ptxas + " -arch=" + arch + " " + file + " -o /dev/null 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) *log += buf;
  return pclose(p);
}

}  // namespace zyntax::testing
